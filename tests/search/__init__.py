"""Tests of specexact.properties: the Hypothesis search, its strategies and defaults."""
