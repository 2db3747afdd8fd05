"""Exact efficiency: tokens per target call, acceptance, bounds, block vs token-wise."""

from __future__ import annotations

import functools
from fractions import Fraction as F

import pytest

from specexact import (
    ContextFreeModel,
    InvalidArgument,
    acceptance_upper_bound,
    draft_law_iid,
    draft_law_without_replacement,
    iid_acceptance,
    iid_expected_tokens,
    step_efficiency,
)
from specexact.counterexamples import chain_steps, tree_steps

PAIRS = [
    (("1/3", "2/3"), ("2/3", "1/3")),
    (("1/5", "1/2", "3/10"), ("1/2", "3/10", "1/5")),
    (("1/2", "1/2"), ("1/2", "1/2")),
    (("1", "0"), ("0", "1")),
]


@pytest.mark.parametrize(("p", "q"), PAIRS)
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_chain_matches_the_iid_formula(p: tuple[str, ...], q: tuple[str, ...],
                                       gamma: int) -> None:
    eff = step_efficiency(functools.partial(chain_steps.chain, gamma=gamma),
                          ContextFreeModel(p), ContextFreeModel(q))
    alpha = iid_acceptance(p, q)
    assert eff.expected_tokens == iid_expected_tokens(alpha, gamma)
    assert eff.expected_accepted == eff.expected_tokens - 1
    if alpha:
        assert eff.acceptance == (alpha,) * gamma
    assert sum(eff.accepted.values()) == 1
    assert eff.accepted.get(gamma, F(0)) == alpha ** gamma


def test_block_verification_beats_token_wise_on_the_paper_example() -> None:
    p, q = ContextFreeModel(["1/3", "2/3"]), ContextFreeModel(["2/3", "1/3"])
    token = step_efficiency(functools.partial(chain_steps.chain, gamma=2), p, q)
    block = step_efficiency(functools.partial(tree_steps.block_verification, gamma=2), p, q)
    assert token.expected_accepted == F(10, 9)
    assert block.expected_accepted == F(11, 9)


def test_iid_formula_edges() -> None:
    assert iid_expected_tokens(1, 3) == 4
    assert iid_expected_tokens(0, 3) == 1
    assert iid_expected_tokens(F(1, 2), 1) == F(3, 2)
    with pytest.raises(InvalidArgument):
        iid_expected_tokens(F(3, 2), 1)
    with pytest.raises(InvalidArgument):
        iid_expected_tokens(F(1, 2), -1)


@pytest.mark.parametrize(("p", "q"), PAIRS)
def test_one_draft_bound_is_one_minus_tv(p: tuple[str, ...], q: tuple[str, ...]) -> None:
    assert acceptance_upper_bound(p, draft_law_iid(q, 1)) == iid_acceptance(p, q)


def test_multi_draft_rules_stay_below_the_bound() -> None:
    p, q = ("1/3", "2/3"), ("2/3", "1/3")
    bound = acceptance_upper_bound(p, draft_law_iid(q, 2))
    assert bound == F(8, 9)
    rule = functools.partial(tree_steps.specinfer, k=2, depth=1)
    accepted = step_efficiency(rule, ContextFreeModel(p), ContextFreeModel(q)).reach[0]
    assert accepted == F(7, 9) <= bound
    p3, q3 = ("0", "1/4", "3/4"), ("1/2", "0", "1/2")
    wor = draft_law_without_replacement(q3, 2)
    assert wor == {(0, 2): F(1, 2), (2, 0): F(1, 2)}
    rrs = functools.partial(tree_steps.rrs_without_replacement, k=2)
    got = step_efficiency(rrs, ContextFreeModel(p3), ContextFreeModel(q3)).reach[0]
    assert got <= acceptance_upper_bound(p3, wor) == F(3, 4)
    with pytest.raises(InvalidArgument):
        draft_law_without_replacement(q3, 3)
