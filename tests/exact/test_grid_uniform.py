"""The K-bit grid uniform: u = k / 2**K, 0 included, so ``u <= t`` and ``u < t`` differ."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from specexact import InvalidArgument, check_sampler, enumerate_law, output_distribution
from specexact.floats.check import check_grid, grid_tolerance

F = Fraction


def residual(p: list[Fraction], q: list[Fraction]) -> list[Fraction]:
    return [max(a - b, Fraction(0)) for a, b in zip(p, q, strict=True)]


def textbook(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.categorical(residual(p, q))


def inclusive(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """SGLang #35771: ``u <= ratio`` accepts a token with p(x) = 0 when u == 0."""
    x = rng.categorical(q)
    if rng.random() <= p[x] / q[x]:
        return x
    return rng.categorical(residual(p, q))


def zero_accepts_all(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """vllm-ascend #13766: a degenerate u == 0 accepts whatever was drafted."""
    x = rng.categorical(q)
    u = rng.random()
    if u == 0 or u < p[x] / q[x]:
        return x
    return rng.categorical(residual(p, q))


def prob_true(predicate: Any, bits: int | None) -> Fraction:
    law = enumerate_law(lambda rng: int(predicate(rng.random())), uniform_bits=bits)
    return law.prob(1)


THRESHOLDS = [F(0), F(1, 3), F(1, 4), F(2, 5), F(7, 8), F(1), F(-1, 2), F(3, 2),
              F(1, 2**30)]


@pytest.mark.parametrize("t", THRESHOLDS)
@pytest.mark.parametrize("bits", [1, 3, 24])
def test_grid_comparison_probabilities(t: Fraction, bits: int) -> None:
    n = 2**bits

    def clamp(k: int) -> Fraction:
        return F(min(max(k, 0), n), n)

    # #{k : k/n < t} and #{k : k/n <= t}, k in [0, n)
    assert prob_true(lambda u: u < t, bits) == clamp(math.ceil(t * n))
    assert prob_true(lambda u: u <= t, bits) == clamp(math.floor(t * n) + 1)
    assert prob_true(lambda u: u > t, bits) == 1 - clamp(math.floor(t * n) + 1)
    assert prob_true(lambda u: u >= t, bits) == 1 - clamp(math.ceil(t * n))
    on_grid = (t * n).denominator == 1 and 0 <= t * n < n
    assert prob_true(lambda u: u == t, bits) == (F(1, n) if on_grid else 0)


def test_affine_forms_on_the_grid() -> None:
    # 1 - u < 1/4  <=>  u > 3/4: on the 3-bit grid only k = 7.
    assert prob_true(lambda u: 1 - u < F(1, 4), 3) == F(1, 8)
    # u * 3 >= 1  <=>  u >= 1/3: k = 3..7.
    assert prob_true(lambda u: u * 3 >= 1, 3) == F(5, 8)
    # -2u <= -1/2  <=>  u >= 1/4: k = 2..7.
    assert prob_true(lambda u: -2 * u <= F(-1, 2), 3) == F(6, 8)


def test_continuous_uniform_has_no_atoms() -> None:
    assert prob_true(lambda u: u == 0, None) == 0
    assert prob_true(lambda u: u <= F(1, 3), None) == prob_true(lambda u: u < F(1, 3), None)


def test_repeated_comparisons_of_one_grid_draw_stay_consistent() -> None:
    def run(rng: Any) -> Any:
        u = rng.random()
        return (u < F(1, 2), u <= F(1, 4), u == F(3, 8))

    law = enumerate_law(lambda rng: tuple(int(b) for b in run(rng)), uniform_bits=3)
    assert law == {(1, 1, 0): F(3, 8), (1, 0, 1): F(1, 8), (0, 0, 0): F(4, 8)}


# -- the inclusive-comparison bug -------------------------------------------------

P0, Q0 = ["1/2", "1/2", "0"], ["0", "0", "1"]  # token 2: p = 0, q = 1


def test_inclusive_bug_is_a_support_violation_of_mass_2_to_minus_k_on_the_grid() -> None:
    verdict = check_sampler(inclusive, P0, Q0, uniform_bits=24)
    assert not verdict.passed
    assert verdict.comparison is not None
    assert verdict.comparison.support_violation == F(1, 2**24)
    assert output_distribution(inclusive, P0, Q0, uniform_bits=24).prob(2) == F(1, 2**24)


def test_inclusive_bug_is_invisible_under_the_continuous_uniform() -> None:
    assert check_sampler(inclusive, P0, Q0).passed
    assert check_grid(textbook, P0, Q0, uniform_bits=24).passed


def test_check_grid_reports_the_support_violation_with_its_own_severity() -> None:
    verdict = check_grid(inclusive, P0, Q0, uniform_bits=24)
    assert not verdict.passed
    assert verdict.severity == "support"
    (finding,) = [f for f in verdict.findings if f.kind == "support"]
    assert finding.run == "grid"
    assert finding.mass == F(1, 2**24)
    assert verdict.structural_tv == 0  # not structural: exact under a continuous uniform


def test_inclusive_support_mass_scales_with_q() -> None:
    # token 0 has p = 0 and q = 1/4: it leaks q(0) * 2**-K.
    verdict = check_grid(inclusive, ["0", "1/2", "1/2"], ["1/4", "1/4", "1/2"], uniform_bits=10)
    assert verdict.severity == "support"
    assert verdict.findings[0].mass == F(1, 4) * F(1, 2**10)


def test_degenerate_zero_uniform_accepting_everything_is_caught_on_the_grid() -> None:
    assert check_sampler(zero_accepts_all, P0, Q0).passed
    verdict = check_grid(zero_accepts_all, P0, Q0, uniform_bits=24)
    assert verdict.severity == "support"


# -- grid rounding is rounding ----------------------------------------------------


def test_textbook_on_the_grid_rounds_but_is_not_structural() -> None:
    p, q = ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]
    assert not check_sampler(textbook, p, q, uniform_bits=24).passed  # raw law is off by ~2^-24
    verdict = check_grid(textbook, p, q, uniform_bits=24)
    assert verdict.passed
    assert verdict.severity == "rounding"
    assert verdict.structural_tv == 0
    assert 0 < verdict.grid_tv <= F(1, 2**24)
    assert verdict.grid_tolerance == grid_tolerance(3, 24)


def test_dyadic_ratios_are_exact_on_a_fine_grid() -> None:
    verdict = check_grid(textbook, ["1/4", "3/4"], ["1/2", "1/2"], uniform_bits=53)
    assert verdict.severity == "exact"


def test_wrong_rule_on_the_grid_is_still_structural() -> None:
    def naive(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
        x = rng.categorical(q)
        if rng.random() < p[x] / q[x]:
            return x
        return rng.categorical(p)

    verdict = check_grid(naive, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"], uniform_bits=24)
    assert verdict.severity == "structural"
    assert verdict.structural_tv == F(3, 50)


@pytest.mark.parametrize("bits", [0, -1, True, 2.5, "24"])
def test_invalid_uniform_bits_are_rejected(bits: Any) -> None:
    with pytest.raises(InvalidArgument, match="uniform_bits"):
        output_distribution(textbook, ["1/2", "1/2"], ["1/2", "1/2"], uniform_bits=bits)
    with pytest.raises(InvalidArgument, match="uniform_bits"):
        check_grid(textbook, ["1/2", "1/2"], ["1/2", "1/2"], uniform_bits=bits)
