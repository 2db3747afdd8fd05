"""Regressions found by adversarial review of the symbolic prover: each was a false proof."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from specexact import check_sampler
from specexact.errors import Undecided
from specexact.symbolic import prove


def swallows_base_exception(p: list[Any], q: list[Any], rng: Any) -> Any:
    """Biased where p0 < q0; the ``except BaseException`` used to eat the case split."""
    try:
        if p[0] < q[0]:
            return 1
    except BaseException:  # the point of the test
        pass
    return rng.categorical(p)


def bare_except_around_tie(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    try:
        accept = rng.random() * q[x] < p[x]
        if p[0] == q[0]:
            return 0
    except:  # noqa: E722 - a bare except must not turn a split into a branch
        accept = True
    if accept:
        return x
    return rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])


def type_checked_fast_path(p: list[Any], q: list[Any], rng: Any) -> Any:
    """Biased on real Fractions (returns a draft from q); unbiased on symbolic values."""
    if isinstance(p[0], (int, Fraction)):
        return rng.categorical(q)
    return rng.categorical(p)


@pytest.mark.parametrize("sampler", [swallows_base_exception, bare_except_around_tie])
def test_a_swallowed_case_split_is_not_a_proof(sampler: Any) -> None:
    result = prove(sampler, 3)
    assert not result.proved
    assert result.refuting
    for case in result.refuting:
        assert case.witness is not None
        assert not check_sampler(sampler, *case.witness).passed


def test_code_that_behaves_differently_on_symbolic_values_is_undecided() -> None:
    assert not check_sampler(type_checked_fast_path, ["1/2", "1/2"], ["1/3", "2/3"]).passed
    with pytest.raises(Undecided, match="differs from the exact engine"):
        prove(type_checked_fast_path, 2)


def test_refutation_summary_does_not_claim_bias_everywhere() -> None:
    text = str(prove(swallows_base_exception, 2))
    assert text.startswith("REFUTED")
    assert "for every p, q" not in text.splitlines()[0]


def crashes_in_an_empty_nonlinear_region(p: list[Any], q: list[Any], rng: Any) -> Any:
    """Biased everywhere (returns a draft); the crash branch needs p0^2 + q0^2 > 2: empty."""
    if p[0] * p[0] + q[0] * q[0] > 2:
        return 1 // 0
    return rng.categorical(q)


def crashes_on_an_irrational_curve(p: list[Any], q: list[Any], rng: Any) -> Any:
    """Biased everywhere; crashes where p0 = sqrt(2) q0 > 0: real points, none rational."""
    if q[0] > 0 and p[0] * p[0] == 2 * q[0] * q[0]:
        return 1 // 0
    return rng.categorical(q)


def test_a_crash_in_a_region_proved_empty_is_pruned() -> None:
    # p0, q0 <= 1 on the simplex: the product certificate proves p0^2 + q0^2 > 2 empty.
    result = prove(crashes_in_an_empty_nonlinear_region, 2)
    assert not result.proved and result.complete and result.note is None
    assert result.refuting
    for case in result.refuting:
        assert case.witness is not None
        assert not check_sampler(crashes_in_an_empty_nonlinear_region, *case.witness).passed


def test_a_crash_without_a_concrete_point_does_not_hide_a_refutation() -> None:
    result = prove(crashes_on_an_irrational_curve, 2)
    assert not result.proved and not result.complete
    assert result.note is not None and "crashing region" in result.note
    assert result.refuting
    for case in result.refuting:
        assert case.witness is not None
        assert not check_sampler(crashes_on_an_irrational_curve, *case.witness).passed


def test_a_crash_without_a_concrete_point_alone_is_undecided() -> None:
    def unbiased_elsewhere(p: list[Any], q: list[Any], rng: Any) -> Any:
        if q[0] > 0 and p[0] * p[0] == 2 * q[0] * q[0]:
            return 1 // 0  # a real crash on an irrational curve: no verdict, never a proof
        return rng.categorical(p)

    with pytest.raises(Undecided, match="no concrete point"):
        prove(unbiased_elsewhere, 2)


def test_a_crash_in_a_region_proved_empty_does_not_block_a_proof() -> None:
    def unbiased(p: list[Any], q: list[Any], rng: Any) -> Any:
        if p[0] * p[0] + q[0] * q[0] > 2:
            return 1 // 0
        return rng.categorical(p)

    assert prove(unbiased, 2).proved


def biased_in_a_thin_nonlinear_sliver(p: list[Any], q: list[Any], rng: Any) -> Any:
    """Accepts token 0 outright where p0 * q0 > 6/25: biased only in that sliver."""
    x = rng.categorical(q)
    if p[0] * q[0] > Fraction(6, 25) and x == 0:
        return 0
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])


@pytest.mark.slow


def test_a_bias_in_a_thin_nonlinear_region_gets_a_witness() -> None:
    result = prove(biased_in_a_thin_nonlinear_sliver, 3)
    assert result.refuting and not result.undecided
    for case in result.refuting:
        assert case.witness is not None
        assert not check_sampler(biased_in_a_thin_nonlinear_sliver, *case.witness).passed


def _tie_fast_path(p, q, rng):
    """Accepts p[x] > q[x] without a coin but rejects a tie: the residual is then all 0."""
    x = rng.categorical(q)
    accepted = rng.random() * q[x] < p[x] if p[x] < q[x] else p[x] > q[x]
    if accepted:
        return x
    return rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])


def test_a_crash_covers_its_own_region_and_the_rest_of_the_case_is_explored():
    # Blind review: the crash at p == q, q0 > 0 became the case, and p == q == (0, 1)
    # belonged to no case although the result said it was complete.
    result = prove(_tie_fast_path, 2)
    assert result.refuting and result.complete
    grid = [Fraction(i, 4) for i in range(5)]
    for a in grid:
        for b in grid:
            result.case_for((a, 1 - a), (b, 1 - b))  # raises LookupError if uncovered


def _clamped_denominator(p, q, rng, eps=1e-12):
    """Biased below eps, and its float arithmetic there (Fraction / float) rounds when run."""
    x = rng.categorical(q)
    if rng.random() < p[x] / max(q[x], eps):
        return x
    return rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])


def test_float_arithmetic_that_rounds_only_when_run_is_named_not_an_internal_error():
    with pytest.raises(Undecided) as caught:
        prove(_clamped_denominator, 2, first=True)
    text = str(caught.value)
    assert "internal" not in text and "float arithmetic" in text
