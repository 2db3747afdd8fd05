"""Tests of specexact.counterexamples: every rule of the catalogue and its witness."""
