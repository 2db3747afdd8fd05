"""Issue 25: the defaults reach vocabulary-parallel bugs (V = 8, 16, 64) and late tokens
of a step at V = 4; each planted rule is right outside that region."""

from __future__ import annotations

from fractions import Fraction

import pytest

from specexact import check_sampler, check_step
from specexact.exact.tree import Budget
from specexact.properties import search_sampler
from specexact.properties.edge_cases import block_edge_cases
from specexact.properties.search import WIDE_CASE_BUDGET, capped_budget
from specexact.properties.step_search import FULL_VOCAB_SIZE, late_token_specs
from specexact.steps.models import ContextFreeModel
from tests.quality.planted import LATE_TOKEN_STEPS, SHARDED_SAMPLERS


def test_block_cases_span_every_size_and_sum_to_one():
    cases = block_edge_cases()
    assert sorted({len(p) for p, _ in cases}) == [8, 16, 64]
    assert all(sum(p) == 1 == sum(q) for p, q in cases)
    assert len(cases) == len(set(cases))


@pytest.mark.parametrize("name", list(SHARDED_SAMPLERS))
def test_sharded_rules_are_right_within_one_shard(name):
    rule, width = SHARDED_SAMPLERS[name]
    # Sizes given are the sizes searched: no wide phase, and the rule is right there.
    assert search_sampler(rule, vocab_sizes=(2, 4), examples=30).status == "pass"
    p = tuple(Fraction(i + 1, width * (width + 1) // 2) for i in range(width))
    assert check_sampler(rule, p, p[::-1]).passed


@pytest.mark.slow
def test_a_sharded_rule_is_found_with_the_smallest_failing_size():
    rule, width = SHARDED_SAMPLERS["sharded-uniform-shards"]
    result = search_sampler(rule, examples=20)
    assert result.status == "fail"
    assert len(result.witness.p) == width + 1  # shrunk from the block cases
    assert not check_sampler(rule, result.witness.p, result.witness.q).passed
    assert "Then vocabularies 8, 16, 64" in result.covered


def test_a_lossless_sampler_reports_the_wide_sizes_judged():
    result = search_sampler(lambda p, q, rng: rng.categorical(p), examples=5)
    assert result.status == "pass"
    assert "Then vocabularies 8, 16, 64: 18 of the 18 block-structured" in result.covered


def test_the_wide_budget_caps_a_given_budget():
    capped = capped_budget(Budget(max_total_operations=5, max_execution_cpu_seconds=None),
                           WIDE_CASE_BUDGET)
    assert capped.max_total_operations == 5
    assert capped.max_execution_cpu_seconds == WIDE_CASE_BUDGET.max_execution_cpu_seconds


@pytest.mark.parametrize("name", list(LATE_TOKEN_STEPS))
def test_late_token_steps_are_right_at_three_tokens(name):
    step = LATE_TOKEN_STEPS[name]
    target = ContextFreeModel(("1/6", "1/3", "1/2"))
    draft = ContextFreeModel(("1/2", "1/3", "1/6"))
    assert check_step(step, target, draft, 4).passed
    assert check_step(step, target, target, 4).passed


def test_the_top3_bonus_is_wrong_at_four_tokens():
    wide = ContextFreeModel(("1/10", "1/5", "3/10", "2/5"))
    assert not check_step(LATE_TOKEN_STEPS["bonus-from-top3"], wide, wide, 4).passed


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bonus-from-top3-gamma4", "batched-bonus-top3-gamma4"])
def test_a_gamma4_bonus_from_a_top3_cut_shows_on_the_fifth_token_only(name):
    """Past the horizon every case is judged on (4): the late-token cases judge the 5th."""
    step = LATE_TOKEN_STEPS[name]
    ramp = ("1/10", "1/5", "3/10", "2/5")
    target, draft = ContextFreeModel(ramp), ContextFreeModel(("0", "0", "0", "1"))
    assert check_step(step, target, draft, 4).passed
    assert not check_step(step, target, draft, 5).passed


def test_the_late_token_cases_have_one_draft_path_or_equal_rows():
    specs = late_token_specs()
    assert {spec.vocab_size for spec in specs} == {FULL_VOCAB_SIZE}
    for spec in specs:
        rows = [spec.default, *((p, q) for _, p, q in spec.overrides)]
        for p, q in rows:
            assert p == q or sorted(q)[-1] == 1
            assert sum(p) == 1 == sum(q)
