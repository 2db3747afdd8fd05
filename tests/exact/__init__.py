"""Tests of specexact.exact: the choice tree, the random sources, the enumerator, verdicts."""
