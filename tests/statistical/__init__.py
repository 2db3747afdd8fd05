"""Tests of specexact.statistical: sampled audits, batches and the power of test designs."""
