"""Every step rule of the catalogue: lossless ones pass, wrong ones fail on their witness."""

from __future__ import annotations

import functools
from fractions import Fraction

import pytest

from specexact import CachedModel, ContextFreeModel, check_step, random_model_pair
from specexact.counterexamples import tree_steps
from specexact.counterexamples.steps import STEP_RULES, StepRule, get_step_rule
from specexact.steps.models import MODEL_KINDS

LOSSLESS = [r for r in STEP_RULES if r.lossless]
WRONG = [r for r in STEP_RULES if not r.lossless]


def _models(rule: StepRule, vocab: int, seed: int, kind: str) -> tuple[object, object]:
    target, draft = random_model_pair(vocab, seed, kind=kind)
    if rule.stateful:
        return CachedModel(target), CachedModel(draft)
    return target, draft


@pytest.mark.parametrize("rule", LOSSLESS, ids=lambda r: r.name)
def test_lossless_rules_pass_on_generated_models(rule: StepRule) -> None:
    kinds = ["one-hot"] if rule.target_kind == "one-hot" else list(MODEL_KINDS)
    heavy = rule.name in {"chain-gamma4", "chain-gamma3"}
    for kind in kinds:
        for vocab in (2,) if heavy else (2, 3):
            verdict = check_step(rule.rule, *_models(rule, vocab, 7, kind), 2 if heavy else 3)
            assert verdict.passed, f"{rule.name} on {kind} V={vocab}:\n{verdict}"


@pytest.mark.parametrize("rule", WRONG, ids=lambda r: r.name)
def test_wrong_rules_fail_on_their_witness(rule: StepRule) -> None:
    w = rule.witness
    assert w is not None
    verdict = check_step(rule.rule, w.target, w.draft, w.horizon)
    assert not verdict.passed
    assert verdict.crash is None  # the witnesses show a bias, not a crash


def test_the_issue_s_wrong_variants_are_all_present() -> None:
    names = {r.name for r in WRONG}
    assert {"stale-context-fallback", "shared-uniform", "bonus-from-residual",
            "residual-wrong-position", "specinfer-original-p", "rrs-plain-residual",
            "block-no-ptau", "stateful-chain-no-rollback"} <= names
    assert len({r.name for r in STEP_RULES}) == len(STEP_RULES)
    for rule in STEP_RULES:
        assert (rule.witness is None) == rule.lossless
        assert rule.summary and callable(rule.rule)


def test_reference_sheet_numbers() -> None:
    shared = get_step_rule("shared-uniform")
    assert shared.witness is not None
    v = check_step(shared.rule, shared.witness.target, shared.witness.draft, 2)
    assert v.actual is not None and v.expected is not None
    assert (v.expected[(0, 0)], v.actual[(0, 0)]) == (Fraction(1, 9), Fraction(2, 9))
    siblings = get_step_rule("specinfer-original-p")
    assert siblings.witness is not None
    v = check_step(siblings.rule, siblings.witness.target, siblings.witness.draft, 1)
    assert v.actual == {(0,): Fraction(4, 9), (1,): Fraction(5, 9)}
    rrs = get_step_rule("rrs-plain-residual")
    assert rrs.witness is not None
    v = check_step(rrs.rule, rrs.witness.target, rrs.witness.draft, 1)
    assert v.actual == {(2,): 1}


def test_block_without_weight_is_right_on_two_tokens() -> None:
    # The sheet: dropping P_tau only matters from vocabulary 3 on.
    rule = get_step_rule("block-no-ptau").rule
    for seed in range(3):
        assert check_step(rule, *random_model_pair(2, seed), 3).passed


def test_no_rollback_is_caught_with_context_free_models_too() -> None:
    rule = get_step_rule("stateful-chain-no-rollback")
    target, draft = random_model_pair(2, 1, kind="context-free")
    verdict = check_step(rule.rule, CachedModel(target), CachedModel(draft), 2)
    assert not verdict.passed and verdict.cache_divergence is not None


def test_unknown_rule_name_suggests_close_ones() -> None:
    with pytest.raises(KeyError, match="shared-uniform"):
        get_step_rule("shared-uniforms")


def test_spectr_degenerate_betas_take_their_own_branches() -> None:
    one = functools.partial(tree_steps.spectr, k=1)  # rho = 1: beta = 1 when p = q
    same = ContextFreeModel(["1/3", "2/3"])
    assert check_step(one, same, same, 2).passed
    two = functools.partial(tree_steps.spectr, k=2)  # disjoint supports: beta = 0
    target, draft = random_model_pair(4, 2, kind="disjoint")
    assert check_step(two, target, draft, 2).passed
