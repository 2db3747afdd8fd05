"""What a statistical verdict may claim: the TV its design can detect, and when draws are too
few to say anything.

Regressions from a review of the statistical mode: each test names the bug it guards.
"""

from __future__ import annotations

from fractions import Fraction

import pytest


def test_detectable_tv_is_that_of_the_design_not_of_a_crash():
    pytest.importorskip("scipy")
    from specexact.statistical.audit import Case, Draws, judge_counts

    case = Case.of("worked", ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
    full = Draws((200, 500, 300))
    crashed = Draws((1, 0, 0), crash="ValueError: oops")  # one draw, then a crash
    ok, bad = judge_counts([case, case], [full, crashed], samples=1000)
    assert bad.rejected
    assert bad.detectable_tv == ok.detectable_tv


def test_detectable_tv_counts_mass_hidden_by_pooling():
    pytest.importorskip("scipy")
    from specexact.statistical.audit import Case, Draws, judge_counts

    # 50 equally likely tokens and 100 draws: every cell pools three tokens or more,
    # so a law that moves mass inside the cells (TV up to ~1) is invisible.
    case = Case("pooled", (Fraction(1, 50),) * 50, (Fraction(1, 50),) * 50)
    (result,) = judge_counts([case], [Draws((2,) * 50)], samples=100)
    assert not result.rejected
    assert result.detectable_tv >= 1


def test_statistical_pass_with_too_few_draws_says_so():
    pytest.importorskip("scipy")
    from specexact.statistical.audit import Case, Draws, StatisticalReport, judge_counts

    case = Case.of("worked", ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
    results = judge_counts([case], [Draws((2, 5, 3))], samples=10)
    report = StatisticalReport(results, Fraction(1, 1000), 10, 0, 0.0)
    assert report.passed
    text = report.format()
    assert "too few" in text
    assert "a TV of" not in text
