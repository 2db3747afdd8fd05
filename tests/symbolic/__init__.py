"""Tests of specexact.symbolic: proofs and refutations over the whole simplex."""
