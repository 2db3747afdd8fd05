"""The test suite: one folder per layer of specexact (see tests/README.md)."""
