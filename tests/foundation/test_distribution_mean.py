"""Distribution.mean: the exact mean of a count law (the efficiency reports read it)."""

from __future__ import annotations

from fractions import Fraction

from specexact import Distribution


def test_mean_of_a_count_law_is_exact() -> None:
    law = Distribution({1: Fraction(1, 3), 2: Fraction(1, 3), 4: Fraction(1, 3)})
    assert law.mean() == Fraction(7, 3)
    assert Distribution().mean() == 0
