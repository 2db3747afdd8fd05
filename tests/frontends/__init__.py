"""Tests of specexact.frontends: the CLI, the pytest plugin, assertions and reports."""
