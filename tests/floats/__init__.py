"""Tests of specexact.floats: float code judged exactly."""
