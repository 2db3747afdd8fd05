"""Tests of specexact.steps: multi-step decoding, toy models, processors, efficiency."""
