"""Tests of the foundation modules: numbers, validation, distributions, pipelines, tables."""
