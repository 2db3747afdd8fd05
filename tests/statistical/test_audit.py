"""Black-box statistical audit: numpy samplers with their own randomness, at fixed seeds."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import Any

import pytest

from specexact import InvalidArgument, InvalidDistribution, MissingDependency
from specexact.statistical.audit import (
    DEFAULT_ALPHA,
    DEFAULT_SAMPLES,
    Case,
    Draws,
    default_panel,
    detectable_tv,
    judge_counts,
    statistical_audit,
)

np = pytest.importorskip("numpy")
pytest.importorskip("scipy")

FAST = 2000  # draws per case in the fast tests; the slow test uses the default budget


def _cat(w: Any, rng: Any) -> int:
    c = np.cumsum(w)
    return int(np.searchsorted(c, rng.random() * c[-1], side="right"))


# -- correct samplers ------------------------------------------------------------------


def textbook(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    if rng.random() * q[x] < p[x]:
        return x
    return _cat(np.maximum(p - q, 0.0), rng)


def textbook_choice(p: Any, q: Any, rng: Any) -> Any:
    x = rng.choice(len(q), p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return x  # a numpy integer
    r = np.maximum(p - q, 0.0)
    return rng.choice(len(p), p=r / r.sum())


def exact_match(p: Any, q: Any, rng: Any) -> int:
    """Wasteful but lossless: keep the draft only when an independent y ~ p equals it."""
    x = _cat(q, rng)
    y = _cat(p, rng)
    return x if y == x else y


# -- biased samplers ---------------------------------------------------------------------


def naive_fallback(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    if rng.random() * q[x] < p[x]:
        return x
    return _cat(p, rng)


def swapped_ratio(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    if rng.random() * p[x] < q[x]:
        return x
    return _cat(np.maximum(p - q, 0.0), rng)


def residual_floor(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    if rng.random() * q[x] < p[x]:
        return x
    return _cat(np.maximum(p - q, 1e-3), rng)


def one_uniform(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    u = rng.random()
    if u * q[x] < p[x]:
        return x
    r = np.maximum(p - q, 0.0)
    c = np.cumsum(r) / r.sum()
    return int(min(np.searchsorted(c, u, side="right"), len(p) - 1))


CORRECT = [textbook, textbook_choice, exact_match]
BIASED = [naive_fallback, swapped_ratio, residual_floor, one_uniform]


@pytest.mark.parametrize("fn", CORRECT)
@pytest.mark.slow
def test_correct_numpy_samplers_pass(fn: Any) -> None:
    report = statistical_audit(fn, samples=FAST, seed=0)
    assert report.passed, report.format()
    assert report.exit_code == 0


@pytest.mark.parametrize("fn", BIASED)
@pytest.mark.slow
def test_biased_numpy_samplers_fail(fn: Any) -> None:
    report = statistical_audit(fn, samples=FAST, seed=0)
    assert not report.passed
    assert report.exit_code == 1
    assert report.format().startswith("FAIL (statistical)")


@pytest.mark.slow
@pytest.mark.parametrize("fn", CORRECT + BIASED)
def test_default_budget_separates_right_from_wrong(fn: Any) -> None:
    report = statistical_audit(fn, seed=7)
    assert report.passed == (fn in CORRECT), report.format()


def test_a_seed_reproduces_the_counts() -> None:
    a = statistical_audit(textbook, samples=200, seed=3)
    b = statistical_audit(textbook, samples=200, seed=3)
    c = statistical_audit(textbook, samples=200, seed=4)
    assert [r.counts for r in a.cases] == [r.counts for r in b.cases]
    assert [r.counts for r in a.cases] != [r.counts for r in c.cases]


# -- certain failures need no statistics ----------------------------------------------------


def test_a_token_with_p_zero_fails_at_once() -> None:
    def leaks(p: Any, q: Any, rng: Any) -> int:
        return int(np.argmax(q)) if rng.random() < 0.01 else _cat(p, rng)

    report = statistical_audit(leaks, samples=FAST, seed=0)
    failing = {r.case.name for r in report.failures}
    assert "disjoint supports" in failing
    result = next(r for r in report.cases if r.case.name == "disjoint supports")
    assert result.p_value == 0 and result.support_violation > 0
    assert "p = 0" in result.reason


@pytest.mark.parametrize("bad", [lambda p: len(p), lambda p: 1.0, lambda p: True,
                                 lambda p: None])
@pytest.mark.slow
def test_non_tokens_fail_at_once(bad: Any) -> None:
    def sampler(p: Any, q: Any, rng: Any) -> Any:
        return bad(p) if rng.random() < 0.01 else _cat(p, rng)

    report = statistical_audit(sampler, samples=500, seed=0)
    assert not report.passed
    assert all(r.invalid > 0 and r.rejected for r in report.cases)


def test_a_crash_is_a_failure_with_its_message() -> None:
    def crashes(p: Any, q: Any, rng: Any) -> int:
        r = np.maximum(p - q, 0.0)
        if r.sum() == 0:
            raise ZeroDivisionError("empty residual")
        return _cat(p, rng)

    report = statistical_audit(crashes, samples=100, seed=0)
    result = next(r for r in report.cases if r.case.name == "p = q")
    assert result.rejected and result.crash == "ZeroDivisionError: empty residual"


@pytest.mark.slow
def test_rules_written_for_the_exact_rng_run_statistically_unchanged() -> None:
    # Before: the rng was a bare numpy Generator, so the catalogue's textbook rule
    # (rng.categorical) raised AttributeError on every draw: a false "FAIL 16 of 16".
    from specexact.counterexamples import samplers

    for correct in (samplers.textbook, samplers.textbook_bernoulli):
        report = statistical_audit(correct, samples=FAST, seed=0)
        assert report.verdict == "pass", report.format()
    biased = statistical_audit(samplers.naive_resample, samples=FAST, seed=0)
    assert biased.verdict == "fail"
    assert all(r.crash is None for r in biased.cases)


def test_the_rng_is_a_numpy_generator_with_the_exact_protocol() -> None:
    from specexact.statistical import statistical_random

    rng = statistical_random(3)
    assert isinstance(rng, np.random.Generator)
    plain = np.random.Generator(np.random.PCG64(3))
    assert rng.random() == plain.random()  # the same stream: reports do not move
    counts = [0, 0, 0]
    for _ in range(3000):
        counts[rng.categorical([Fraction(1, 6), Fraction(0), Fraction(5, 6)])] += 1
    assert counts[1] == 0 and 400 < counts[0] < 600
    assert rng.bernoulli(0) is False and rng.bernoulli(Fraction(1)) is True
    with pytest.raises(ValueError, match="not all zero"):
        rng.categorical([0, 0])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        rng.bernoulli(2)


def test_a_method_the_rng_lacks_is_a_usage_error_naming_the_valid_ones() -> None:
    def uses_torch_style(p: Any, q: Any, rng: Any) -> int:
        return int(rng.multinomial_sample(q))

    with pytest.raises(InvalidArgument, match=r"rng\.multinomial_sample.*categorical"):
        statistical_audit(uses_torch_style, samples=10, seed=0)


def test_a_crashing_sampler_is_named_as_crashing_in_the_headline() -> None:
    def crashes(p: Any, q: Any, rng: Any) -> int:
        raise RuntimeError("boom")

    report = statistical_audit(crashes, samples=10, seed=0)
    assert report.format().splitlines()[0] == (
        f"FAIL (statistical): the sampler raised on {len(report.cases)} of "
        f"{len(report.cases)} cases")


# -- the decision rule ------------------------------------------------------------------------


@pytest.mark.slow
def test_g_test_false_alarm_rate_is_near_nominal() -> None:
    case = Case.of("c", ["1/5", "1/2", "3/10"], ["1/3", "1/3", "1/3"])
    gen = np.random.default_rng(12345)
    p = [float(x) for x in case.p]
    rejected = 0
    reps = 400
    for _ in range(reps):
        counts = tuple(int(c) for c in gen.multinomial(2000, p))
        (result,) = judge_counts([case], [Draws(counts)], samples=2000, alpha=0.1)
        rejected += result.rejected
    assert 0.06 * reps <= rejected <= 0.14 * reps


def test_holm_keeps_clean_cases_and_flags_the_biased_one() -> None:
    cases = [Case.of(f"c{i}", ["1/2", "1/2"], ["1", "0"]) for i in range(5)]
    draws = [Draws((1000, 1000))] * 4 + [Draws((1200, 800))]
    results = judge_counts(cases, draws, samples=2000)
    assert [r.rejected for r in results] == [False] * 4 + [True]
    assert results[4].threshold == pytest.approx(float(DEFAULT_ALPHA) / 5)


def test_detectable_tv_shrinks_like_one_over_root_n_and_meets_the_budget() -> None:
    level = float(DEFAULT_ALPHA) / len(default_panel())
    small, large = detectable_tv(1000, 2, level), detectable_tv(4000, 2, level)
    assert large == pytest.approx(small / 2)
    # The default budget detects a TV of 0.02 with 99% power on a 3-token case.
    assert detectable_tv(DEFAULT_SAMPLES, 2, level) <= 0.02


def test_default_panel_holds_edge_cases_and_generated_pairs() -> None:
    panel = default_panel()
    names = [c.name for c in panel]
    assert "disjoint supports" in names and "p = q" in names
    assert sum(n.startswith("generated") for n in names) >= 5
    assert any(any(p and not q for p, q in zip(c.p, c.q, strict=True)) for c in panel)
    assert panel == default_panel()  # fixed, whatever the sampling seed


# -- the report ----------------------------------------------------------------------------------


def test_report_json_and_text() -> None:
    report = statistical_audit(naive_fallback, samples=500, seed=0)
    data = json.loads(json.dumps(report.to_json()))
    assert data["passed"] is False and data["alpha"] == "1/1000"
    first = data["cases"][0]
    assert Fraction(first["observed"][0]) == Fraction(first["counts"][0], 500)
    assert {"p_value", "detectable_tv", "observed_tv", "threshold"} <= set(first)
    text = str(report)
    assert "observed law" in text and "detectable TV" in text


@pytest.mark.parametrize("kwargs", [{"samples": 0}, {"samples": 2.5}, {"seed": -1},
                                    {"alpha": 0}, {"alpha": 1.5}, {"cases": []},
                                    {"max_seconds": 0}])
def test_bad_options_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        statistical_audit(textbook, **kwargs)


def test_bad_case_is_rejected() -> None:
    with pytest.raises(InvalidDistribution):
        Case.of("bad", ["1/2", "1/3"], ["1/2", "1/2"])
    with pytest.raises(InvalidArgument):
        judge_counts([Case.of("c", ["1"], ["1"])], [Draws((1, 2))], samples=3)


# -- torch ---------------------------------------------------------------------------------------


def test_torch_adapter_says_clearly_when_torch_is_missing(monkeypatch: Any) -> None:
    import specexact.statistical.torch_adapter as adapter  # importing never needs torch

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependency, match="pip install torch"):
        adapter.torch_sampler(textbook)


@pytest.mark.slow
def test_torch_textbook_passes_through_the_adapter() -> None:
    torch = pytest.importorskip("torch")
    from specexact.statistical.torch_adapter import torch_sampler

    def torch_textbook(p: Any, q: Any, gen: Any) -> Any:
        x = torch.multinomial(q, 1, generator=gen)[0]
        if torch.rand((), generator=gen) * q[x] < p[x]:
            return x
        return torch.multinomial(torch.clamp(p - q, min=0), 1, generator=gen)[0]

    def torch_naive(p: Any, q: Any, gen: Any) -> Any:
        x = torch.multinomial(q, 1, generator=gen)[0]
        if torch.rand((), generator=gen) * q[x] < p[x]:
            return x
        return torch.multinomial(p, 1, generator=gen)[0]

    assert statistical_audit(torch_sampler(torch_textbook), samples=FAST, seed=0).passed
    assert not statistical_audit(torch_sampler(torch_naive), samples=FAST, seed=0).passed
