"""The search: edge cases first, seeded Hypothesis, shrinking, and its statuses."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest
from hypothesis import settings
from hypothesis.database import InMemoryExampleDatabase

from specexact import (
    Budget,
    BudgetExceeded,
    HiddenRandomness,
    InvalidArgument,
    Verdict,
    output_distribution,
)
from specexact.counterexamples import samplers
from specexact.counterexamples.steps import get_step_rule
from specexact.properties import (
    SearchResult,
    acceptance_is_one_minus_tv,
    efficiency_bounds_hold,
    is_distribution_over_vocabulary,
    multidraft_acceptance_within_bound,
    no_mass_where_target_is_zero,
    pq_pairs,
    preserves_joint_law,
    preserves_target,
    search_sampler,
    search_step,
    shrink_pair,
)
from specexact.properties.search import SamplerWitness
from specexact.steps.models import ContextFreeModel


def half(*xs: str) -> tuple[F, ...]:
    return tuple(F(x) for x in xs)


def test_naive_fallback_is_found_with_a_minimal_witness():
    result = search_sampler(samplers.naive_resample)
    assert result.status == "fail" and not result.passed
    assert (result.witness.p, result.witness.q) == (half("1/2", "1/2"), half("0", "1"))
    assert isinstance(result.verdict, Verdict) and result.verdict.tv == F(1, 4)
    # Accepted mass min(p, q) = (0, 1/2), plus the rejected 1/2 resampled from p.
    assert result.verdict.actual == half("1/4", "3/4")
    assert result.error is None
    assert "+1/4" in str(result) and "exact cases" in str(result)


def test_textbook_passes_and_says_what_was_covered():
    result = search_sampler(samplers.textbook, examples=30)
    assert result.status == "pass" and result.passed
    assert result.witness is None and result.verdict is None and result.error is None
    assert result.cases > 30  # edge cases come on top of the Hypothesis examples
    assert "2..5" in result.covered and "p = q" in result.covered
    assert f"{result.cases} exact cases" in result.covered


def test_result_is_frozen():
    result = search_sampler(samplers.naive_resample)
    with pytest.raises(AttributeError):
        result.status = "pass"  # type: ignore[misc]


def needle(p, q, rng):
    """Wrong only when p(0) = 3/7 exactly: edge cases miss it, so Hypothesis must find it."""
    if p[0] * 7 == 3:
        return 0
    return samplers.textbook(p, q, rng)


def only_large_vocab(p, q, rng):
    """Wrong only from vocabulary 4 on."""
    return 0 if len(p) >= 4 and p[0] < 1 else samplers.textbook(p, q, rng)


def test_hypothesis_phase_and_shrinking_find_vocabulary_four_bugs():
    result = search_sampler(only_large_vocab)
    assert result.status == "fail"
    assert len(result.witness.p) == 4
    assert max(x.denominator for x in result.witness.p) <= 2
    assert search_sampler(only_large_vocab, vocab_sizes=(2, 3), examples=40).status == "pass"


def test_same_seed_same_result():
    one = search_sampler(only_large_vocab, seed=3)
    two = search_sampler(only_large_vocab, seed=3)
    assert (one.cases, one.witness) == (two.cases, two.witness)


@pytest.mark.slow
def test_example_database_replays_a_failure():
    db = InMemoryExampleDatabase()
    first = search_sampler(needle, settings=settings(database=db, max_examples=2000), seed=1)
    if first.status != "fail":
        pytest.skip("the seeded search did not hit the needle")  # pragma: no cover
    again = search_sampler(needle, settings=settings(database=db, max_examples=2000), seed=9)
    assert again.status == "fail" and again.cases < first.cases


def test_settings_max_examples_is_respected():
    result = search_sampler(samplers.textbook, settings=settings(max_examples=5, database=None),
                            vocab_sizes=2)
    edge = len(__import__("specexact.properties").properties.sampler_edge_cases(2, 2))
    assert edge < result.cases <= edge + 5


def test_progress_reports_every_case():
    seen: list[int] = []
    result = search_sampler(samplers.textbook, examples=10, progress=seen.append)
    assert seen == list(range(1, result.cases + 1))


def crashing(p, q, rng):
    y = rng.categorical(p)
    return y if len(p) < 3 else [][0]


def test_a_crash_on_valid_input_is_a_failure_with_the_crash():
    result = search_sampler(crashing)
    assert result.status == "fail"
    assert result.verdict.crash is not None and len(result.witness.p) == 3


def hidden(p, q, rng):
    return 0 if random.random() < 0.5 else 1


def looping(p, q, rng):
    while rng.random() < F(1, 2):
        pass
    return rng.categorical(p)


def test_hidden_randomness_is_undecided_never_pass():
    result = search_sampler(hidden, examples=20)
    assert result.status == "undecided" and isinstance(result.error, HiddenRandomness)
    assert result.witness is None and "UNDECIDED" in str(result)


def test_budget_exceeded_is_undecided():
    result = search_sampler(looping, budget=Budget(max_executions=5), examples=5)
    assert result.status == "undecided" and isinstance(result.error, BudgetExceeded)


def test_a_failure_beats_undecided_cases():
    def sometimes_hidden(p, q, rng):
        if len(p) == 2:
            return hidden(p, q, rng)
        return samplers.naive_resample(p, q, rng)

    assert search_sampler(sometimes_hidden).status == "fail"


@pytest.mark.parametrize("bad", [{"examples": -1}, {"vocab_sizes": (3, 2)},
                                 {"vocab_sizes": 0}])
def test_bad_options_are_rejected(bad):
    with pytest.raises(InvalidArgument):
        search_sampler(samplers.textbook, **bad)
    with pytest.raises(InvalidArgument):
        search_step(samplers.textbook, **bad)
    with pytest.raises(InvalidArgument):
        search_step(samplers.textbook, horizon=0)


def test_shrink_pair_prefers_fewer_tokens_then_small_denominators():
    def fails(pair):
        return pair[0] != pair[1]

    p, q = shrink_pair((half("1/5", "1/2", "3/10"), half("1/2", "3/10", "1/5")), fails,
                       min_size=2)
    assert len(p) == 2 and {p, q} == {half("1", "0"), half("0", "1")}


def test_uniform_bits_reach_the_check():
    assert search_sampler(samplers.inclusive_uniform, examples=10).status == "pass"
    result = search_sampler(samplers.inclusive_uniform, uniform_bits=24)
    assert result.status == "fail" and result.verdict.comparison.support_violation > 0


# ---- steps ---------------------------------------------------------------


@pytest.mark.slow
def test_step_search_finds_the_shared_uniform_in_the_joint_law():
    rule = get_step_rule("shared-uniform")
    result = search_step(rule.rule)
    assert result.status == "fail" and result.witness.horizon == 2
    assert not result.verdict.passed and result.verdict.comparison.first_difference is not None
    assert result.witness.spec.context_free
    # The first token's marginal is right: horizon 1 passes.
    assert search_step(rule.rule, horizon=1, examples=10).status == "pass"


@pytest.mark.slow
def test_step_search_passes_the_chain_rule():
    result = search_step(get_step_rule("chain-gamma2").rule, examples=15)
    assert result.status == "pass" and "horizon 3" in result.covered


@pytest.mark.slow
def test_step_search_uses_cached_models_for_stateful_rules():
    rule = get_step_rule("stateful-chain-no-rollback")
    result = search_step(rule.rule, stateful=True)
    assert result.status == "fail" and result.verdict.cache_divergence is not None
    assert search_step(get_step_rule("stateful-chain").rule, stateful=True,
                       examples=10).status == "pass"


def test_step_search_with_one_hot_targets_passes_greedy():
    rule = get_step_rule("greedy")
    assert search_step(rule.rule, one_hot_target=True, examples=15).status == "pass"
    assert search_step(rule.rule).status == "fail"


def test_step_search_hidden_randomness_is_undecided():
    def step(target, draft, prefix, rng):
        return (random.randrange(2),)

    result = search_step(step, examples=5)
    assert result.status == "undecided" and isinstance(result.error, HiddenRandomness)


# ---- properties ----------------------------------------------------------


@pytest.mark.parametrize("rule", [samplers.textbook, samplers.onehot_verification])
@pytest.mark.slow
def test_properties_hold_for_lossless_rules(rule):
    from hypothesis import given

    @settings(max_examples=40, deadline=None)
    @given(pq_pairs(vocab_sizes=(2, 3)))
    def run(pair):
        p, q = pair
        assert preserves_target(rule, p, q)
        law = output_distribution(rule, p, q)
        assert is_distribution_over_vocabulary(law, len(p))
        assert no_mass_where_target_is_zero(law, p)
        assert acceptance_is_one_minus_tv(p, q)

    run()


def test_properties_catch_what_they_claim():
    assert not preserves_target(samplers.naive_resample, half("1/2", "1/2"), half("1", "0"))
    assert not is_distribution_over_vocabulary({0: F(1, 2), 2: F(1, 2)}, 2)
    assert not is_distribution_over_vocabulary({0: F(1, 2)}, 2)
    assert not no_mass_where_target_is_zero({0: F(1, 2), 1: F(1, 2)}, half("1", "0"))
    law = output_distribution(samplers.padded_lanes, half("1", "0"), half("1/2", "1/2"))
    assert not is_distribution_over_vocabulary(law, 2)


def test_efficiency_and_acceptance_bounds():
    assert all(efficiency_bounds_hold(F(a, 10), g) for a in range(11) for g in range(5))
    p, q = half("1/3", "2/3"), half("2/3", "1/3")
    assert multidraft_acceptance_within_bound(p, q, 1)
    assert multidraft_acceptance_within_bound(p, q, 2)
    assert multidraft_acceptance_within_bound(half("1/5", "1/2", "3/10"),
                                              half("1/2", "3/10", "1/5"), 2)


def test_joint_law_property():
    p, q = ContextFreeModel(half("1/3", "2/3")), ContextFreeModel(half("2/3", "1/3"))
    assert preserves_joint_law(get_step_rule("chain-gamma2").rule, p, q, 3)
    assert not preserves_joint_law(get_step_rule("shared-uniform").rule, p, q, 2)


def test_search_result_types():
    result = search_sampler(samplers.naive_resample)
    assert isinstance(result, SearchResult) and isinstance(result.witness, SamplerWitness)


def test_a_time_out_stops_the_search_at_once():
    # Code that never ends would otherwise cost the time budget on every case.
    def spin(p, q, rng):
        while True:
            pass

    from specexact import Budget

    result = search_sampler(spin, budget=Budget(max_seconds=0.2))
    assert result.status == "undecided"
    assert result.cases == 1
    assert "time budget" in str(result.error)
