"""Tests of specexact.torch: torch and numpy code run exactly."""
