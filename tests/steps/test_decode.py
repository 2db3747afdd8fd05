"""Exact multi-step decoding: joint laws, comparison, verdicts, bad input."""

from __future__ import annotations

import functools
import random
from fractions import Fraction as F
from typing import Any

import pytest

from specexact import (
    Budget,
    BudgetExceeded,
    CachedModel,
    ContextFreeModel,
    HiddenRandomness,
    InvalidArgument,
    InvalidDistribution,
    InvalidOutput,
    RaisingModel,
    SamplerRaised,
    TableModel,
    check_step,
    compare_decodes,
    decode_distribution,
    random_model_pair,
    target_distribution,
)
from specexact.counterexamples import chain_steps
from specexact.steps.decode import run_decode
from tests.helpers import plain_step as plain


def chain(gamma: int) -> Any:
    return functools.partial(chain_steps.chain, gamma=gamma)


HALF_THIRD = (ContextFreeModel(["1/3", "2/3"]), ContextFreeModel(["2/3", "1/3"]))


def test_plain_sampling_gives_the_target_law() -> None:
    target, draft = random_model_pair(3, 4)
    law = decode_distribution(plain, target, draft, 3)
    assert law == target_distribution(target, 3)
    assert sum(law.values()) == 1
    assert all(len(seq) == 3 for seq in law)


def test_target_distribution_is_the_product_of_rows() -> None:
    target = TableModel({(1,): ["1/4", "3/4"]}, default=["1/2", "1/2"])
    law = target_distribution(target, 2)
    assert law[(1, 1)] == F(1, 2) * F(3, 4)
    assert law[(0, 1)] == F(1, 4)


@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_chain_rule_preserves_context_dependent_targets(gamma: int) -> None:
    target, draft = random_model_pair(3, gamma)
    assert decode_distribution(chain(gamma), target, draft, 3) == target_distribution(target, 3)


def test_shared_uniform_breaks_the_joint_law_not_the_marginal() -> None:
    step = functools.partial(chain_steps.shared_uniform, gamma=2)
    law = decode_distribution(step, *HALF_THIRD, 2)
    assert law[(0, 0)] == F(2, 9)  # the reference sheet's figure; the target gives 1/9
    assert law.marginal(0) == {0: F(1, 3), 1: F(2, 3)}


def test_overshoot_is_truncated_to_the_horizon() -> None:
    def three_at_once(target: Any, draft: Any, prefix: Any, rng: Any) -> tuple[Any, ...]:
        return tuple(rng.categorical(target(prefix)) for _ in range(3))

    law = decode_distribution(three_at_once, ContextFreeModel(["1/2", "1/2"]), None, 2)
    assert law == {(a, b): F(1, 4) for a in (0, 1) for b in (0, 1)}


def test_only_reachable_states_are_enumerated_once_each() -> None:
    one_hot = TableModel({}, default=["0", "1", "0"])
    run = run_decode(plain, one_hot, one_hot, 4)
    assert run.states == 4  # (), (1,), (1, 1), (1, 1, 1)
    assert set(run.target_rows) == {(), (1,), (1, 1), (1, 1, 1)}


def test_returned_tokens_stay_lazy() -> None:
    calls = []

    def counting(target: Any, draft: Any, prefix: Any, rng: Any) -> tuple[Any, ...]:
        calls.append(prefix)
        return (rng.categorical(target(prefix)),)

    decode_distribution(counting, ContextFreeModel([F(1, 8)] * 8), None, 1)
    assert len(calls) <= 2  # one path (re-run once by the engine), not one per token


def test_compare_decodes_reports_the_shortest_differing_prefix() -> None:
    expected = {(0, 0): F(1, 4), (0, 1): F(1, 4), (1, 0): F(1, 4), (1, 1): F(1, 4)}
    actual = {(0, 0): F(1, 4), (0, 1): F(1, 4), (1, 0): F(1, 8), (1, 1): F(3, 8)}
    c = compare_decodes(expected, actual, 2)
    assert not c.equal
    assert c.first_difference == (1, 0)
    assert (c.first_expected, c.first_actual) == (F(1, 4), F(1, 8))
    assert c.tv == F(1, 8)
    assert c.difference == {(1, 0): F(-1, 8), (1, 1): F(1, 8)}
    assert c.context == (1,)
    assert c.actual_next == {0: F(1, 4), 1: F(3, 4)}
    same = compare_decodes(expected, expected, 2)
    assert same.equal and same.first_difference is None and same.tv == 0


def test_check_step_verdicts_and_witness_json() -> None:
    good = check_step(chain(2), *HALF_THIRD, 2)
    assert good.passed and good.tv == 0
    bad = check_step(functools.partial(chain_steps.shared_uniform, gamma=2), *HALF_THIRD, 2)
    assert not bad.passed
    assert bad.tv == F(1, 9)
    assert bad.comparison is not None and bad.comparison.first_difference == (0, 0)
    text = str(bad)
    assert text.startswith("FAIL") and "2/9" in text and "1/9" in text
    data = bad.to_json()
    assert data["target"][""] == ["1/3", "2/3"]
    assert data["draft"]["0"] == ["2/3", "1/3"]
    assert data["expected"]["0,0"] == "1/9" and data["actual"]["0,0"] == "2/9"


@pytest.mark.parametrize(("output", "fragment"), [
    ((), "empty tuple"),
    ((0.5,), "not a token id"),
    ((True,), "not a token id"),
    ((7,), "outside the vocabulary"),
    (3, "not a tuple"),
])
def test_bad_step_output_is_an_invalid_output_finding(output: Any, fragment: str) -> None:
    def step(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        return output if prefix else (0,)

    with pytest.raises(InvalidOutput, match=fragment) as info:
        decode_distribution(step, *HALF_THIRD, 2)
    assert info.value.context["prefix"] == (0,)
    verdict = check_step(step, *HALF_THIRD, 2)
    assert not verdict.passed and isinstance(verdict.crash, InvalidOutput)


def test_lazy_token_outside_the_vocabulary_is_flagged() -> None:
    def step(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        return (rng.categorical(["1/2", "0", "1/2"]),)

    with pytest.raises(InvalidOutput, match="can emit id 2, outside"):
        decode_distribution(step, *HALF_THIRD, 1)


def test_malformed_model_rows_name_the_prefix() -> None:
    unnormalised = TableModel({}, default=["1/2", "1/2"])
    unnormalised.rows[(0,)] = (F(1, 2), F(1, 3))  # bypass the table's own validation
    with pytest.raises(InvalidDistribution, match=r"prefix \(0,\)"):
        decode_distribution(plain, unnormalised, None, 2)

    def wrong_length(prefix: tuple[int, ...]) -> list[str]:
        return ["1", "0"] if not prefix else ["1/3", "1/3", "1/3"]

    with pytest.raises(InvalidDistribution, match=r"prefix \(1,\) has 3 entries"):
        decode_distribution(chain(1), ContextFreeModel(["1/2", "1/2"]), wrong_length, 2)


@pytest.mark.parametrize("horizon", [0, -1, True, 1.5])
def test_horizon_below_one_is_rejected(horizon: Any) -> None:
    with pytest.raises(InvalidArgument, match="horizon"):
        decode_distribution(plain, *HALF_THIRD, horizon)


def test_a_step_that_never_ends_exceeds_the_budget() -> None:
    def endless(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        u = rng.random()
        while u < 2:
            pass
        return (0,)

    with pytest.raises(BudgetExceeded):
        decode_distribution(endless, *HALF_THIRD, 1, budget=Budget(max_operations=500))


def test_hidden_randomness_is_undecided() -> None:
    def sneaky(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        x = rng.categorical(target(prefix))
        return (x,) if x == 0 or random.random() < 0.5 else (0,)

    with pytest.raises(HiddenRandomness):
        decode_distribution(sneaky, *HALF_THIRD, 1)


def test_raising_model_catches_an_off_by_one_context() -> None:
    def peeks_ahead(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        x = rng.categorical(target(prefix))
        ahead = target((*prefix, x, x))  # a context two tokens ahead: never needed
        return (x,) if ahead[0] >= 0 else (0,)

    guard = RaisingModel(ContextFreeModel(["1/2", "1/2"]), lambda s: len(s) >= 2,
                         reason="longer than the horizon needs")
    with pytest.raises(SamplerRaised, match=r"asked for prefix \(\d, \d\)"):
        decode_distribution(peeks_ahead, guard, guard, 1)
    assert check_step(plain, guard, guard, 2).passed


def test_stateful_chain_keeps_caches_in_step() -> None:
    target, draft = random_model_pair(2, 3)
    step = functools.partial(chain_steps.stateful_chain, gamma=2)
    verdict = check_step(step, CachedModel(target), CachedModel(draft), 3)
    assert verdict.passed and verdict.cache_divergence is None


def test_forgotten_rollback_reports_the_first_divergence() -> None:
    target = TableModel({(0,): ["1/3", "2/3"]}, default=["1/2", "1/2"])
    draft = ContextFreeModel(["1/3", "2/3"])
    step = functools.partial(chain_steps.stateful_chain, gamma=1, rollback=False)
    verdict = check_step(step, CachedModel(target), CachedModel(draft), 2)
    assert not verdict.passed
    div = verdict.cache_divergence
    assert div is not None and div.prefix == () and div.emitted == (0,)
    assert div.cache == (1, 0)  # the rejected draft 1 was never cut back
    assert div.probability == F(1, 6)
    assert verdict.comparison is not None and not verdict.comparison.equal


def test_cache_divergence_alone_fails_the_verdict() -> None:
    # Context-free models hide the stale cache from the law; the check still sees it.
    step = functools.partial(chain_steps.stateful_chain, gamma=1, rollback=False)
    t, d = (CachedModel(m) for m in HALF_THIRD)
    verdict = check_step(step, t, d, 2)
    assert verdict.comparison is not None and verdict.comparison.equal
    assert not verdict.passed and "cache" in verdict.reason


def test_grid_uniform_reaches_the_step() -> None:
    def inclusive(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        return (1,) if rng.random() <= 0 else (0,)

    one = ContextFreeModel(["1", "0"])
    assert decode_distribution(inclusive, one, None, 1) == {(0,): 1}
    assert decode_distribution(inclusive, one, None, 1, uniform_bits=1) == {
        (0,): F(1, 2), (1,): F(1, 2)}


def test_draft_defaults_to_the_target() -> None:
    target, _ = random_model_pair(2, 9)
    assert check_step(chain(2), target, None, 2).passed


def test_inverse_cdf_with_one_uniform_and_odd_weights() -> None:
    # One uniform compared again and again, float and int weights: the step
    # random source's fast paths must agree with the target law exactly.
    def inverse_cdf(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        row = target(prefix)
        u = rng.random()
        acc = F(0)
        for token, prob in enumerate(row):
            acc += prob
            if u < acc:
                return (token, rng.categorical([0.5, 1, F(1, 2)]))
        return (len(row) - 1, rng.categorical([1, 1, 0]))

    target = TableModel({(1,): ["1/4", "1/4", "1/2"]}, default=["1/3", "1/3", "1/3"])
    law = decode_distribution(inverse_cdf, target, None, 2)
    assert law.marginal(0) == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}
    assert law[(0, 1)] == F(1, 3) * F(1, 2)


def test_negative_weights_in_a_step_are_a_crash_finding() -> None:
    def negative(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        return (rng.categorical([F(1), F(-1, 2), F(1, 2)]),)

    verdict = check_step(negative, *HALF_THIRD, 1)
    assert isinstance(verdict.crash, SamplerRaised)
    assert "negative" in str(verdict.crash)


def test_rows_edited_in_place_are_drawn_as_edited() -> None:
    def edits(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        x = rng.categorical(draft(prefix))
        later = target((*prefix, x))  # deferred: x is still lazy
        later[0], later[1] = F(1), F(0)
        now = target(prefix)
        now[1] = F(0)
        now[0] = F(1)
        return (rng.categorical(now), rng.categorical(later))

    law = decode_distribution(edits, *HALF_THIRD, 2)
    assert law == {(0, 0): 1}


def test_fast_random_source_agrees_with_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import specexact.steps.enumeration as enumeration
    from specexact import ExactRandom
    from specexact.counterexamples.steps import STEP_RULES

    cases = []
    for rule in STEP_RULES:
        w = rule.witness
        if w is not None:
            cases.append((rule.rule, w.target, w.draft, w.horizon))
        elif not rule.stateful and rule.target_kind == "any":
            cases.append((rule.rule, *random_model_pair(3, 11, kind="zeros"), 2))
    fast = [decode_distribution(*case) for case in cases]
    monkeypatch.setattr(enumeration, "StepRandom", ExactRandom)
    assert [decode_distribution(*case) for case in cases] == fast


def test_a_step_support_violation_is_named_as_such():
    from fractions import Fraction as F

    from specexact import TableModel, check_step

    def inclusive(target, draft, prefix, rng):
        p, q = target(prefix), draft(prefix)
        x = rng.categorical(q)
        if rng.random() <= p[x] / q[x]:  # a grid uniform of 0 accepts a token with p = 0
            return (x,)
        return (rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)]),)

    target = TableModel({}, default=(F(0), F(1)))
    draft = TableModel({}, default=(F(1, 2), F(1, 2)))
    verdict = check_step(inclusive, target, draft, 1, uniform_bits=24)
    assert not verdict.passed
    assert verdict.reason.startswith(
        "mass 1/33554432 on sequences the target never emits (joint law of 1 token)")
    # The sequence named is one the target never emits, not the first that differs.
    assert verdict.reason.endswith("first such sequence (0,): actual 1/33554432")
    assert "biased" in check_step(lambda t, d, prefix, rng: (rng.categorical(d(prefix)),),
                                  TableModel({}, default=(F(1, 3), F(2, 3))),
                                  TableModel({}, default=(F(1, 2), F(1, 2))), 1).reason


def test_decode_clock_cuts_the_budget_and_names_the_decode_when_time_runs_out(monkeypatch):
    from specexact.crossvocab.decode import new_clock
    from specexact.errors import BudgetExceeded
    from specexact.exact.tree import Budget
    from specexact.steps import DecodeClock
    from specexact.steps import decode as steps_decode

    unlimited = Budget(max_executions=7)
    assert DecodeClock(unlimited).next_budget(F(0)) is unlimited
    now = [100.0]
    monkeypatch.setattr(steps_decode.time, "monotonic", lambda: now[0])
    clock = DecodeClock(Budget(max_executions=7, max_seconds=10))
    now[0] = 104.0
    assert clock.next_budget(F(0)) == Budget(max_executions=7, max_seconds=6.0)
    now[0] = 110.0
    with pytest.raises(BudgetExceeded) as info:
        clock.next_budget(F(1, 3))
    assert info.value.message == "decoding exceeded max_seconds=10"
    assert (info.value.limit, info.value.resolved_mass) == ("max_seconds", F(1, 3))
    cross = new_clock(Budget(max_seconds=2))
    now[0] = 113.0
    with pytest.raises(BudgetExceeded) as info:
        cross.next_budget(F(0))
    assert info.value.message == "cross-vocabulary decoding exceeded max_seconds=2"


def test_first_differing_prefix_is_the_shortest_then_the_smallest():
    from specexact.steps import first_differing_prefix

    half, quarter = F(1, 2), F(1, 4)
    # Agree on the first token, differ on the second: (0, 1) before (0, 2), (1, 0).
    expected = {(0, 1): quarter, (0, 2): quarter, (1, 0): half}
    actual = {(0, 1): half, (1, 0): half}
    assert first_differing_prefix(expected, actual) == ((0, 1), quarter, half)
    # Sequences of different lengths: a shorter one's prefix is itself.
    assert first_differing_prefix({(0,): F(1)}, {(0, 0): F(1)}) == ((0,), F(1), F(0))
    assert first_differing_prefix(expected, dict(expected)) == (None, F(0), F(0))
    # Texts, compared through str: already their first characters differ, "a" first.
    texts = first_differing_prefix({"ab": half, "ba": half}, {"ab": F(1)}, str)
    assert texts == ("a", half, F(1))
    assert first_differing_prefix({"abc": F(1)}, {"abd": F(1)}, str) == ("abc", F(1), F(0))
