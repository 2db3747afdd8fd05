"""Quality: bugs that show on only a few percent of random inputs are found at every seed.

The planted rules (:mod:`tests.quality.planted`) are each right except in a
narrow region: one zero in q next to three residual entries, a shared
support smaller than V, four residual entries (V = 5), a draft row read one
position late, a second sibling's stale child, trusting equal rows at one
context, a wrong bonus token.  The default search must find every one at
every seed (here 5 seeds, slow) and at one seed in the default run (but for the
slowest to find, second-sibling-stale-child, which only the slow run searches).
"""

from __future__ import annotations

import pytest

from specexact import check_sampler, check_step
from specexact.properties import search_sampler, search_step
from specexact.steps.models import ContextFreeModel
from tests.quality.planted import PLANTED_SAMPLERS, PLANTED_STEPS
from tests.quality.replay import (
    Unsupported,
    replay_law,
    replay_step_law,
    spec_models,
    target_sequence_law,
)

SEEDS = (0, 1, 2, 3, 4)


def _search(name: str, seed: int):
    if name in PLANTED_SAMPLERS:
        return search_sampler(PLANTED_SAMPLERS[name], seed=seed)
    return search_step(PLANTED_STEPS[name], seed=seed)


def _confirmed(name: str, result) -> bool:
    """The witness fails again on its own, exactly, and the independent replay
    (tests/quality/replay.py) gives a law other than the target's on it."""
    w = result.witness
    if name in PLANTED_SAMPLERS:
        try:
            replayed = replay_law(PLANTED_SAMPLERS[name], w.p, w.q)
        except Unsupported:
            replayed = None
        target = {i: x for i, x in enumerate(w.p) if x}
        return not check_sampler(PLANTED_SAMPLERS[name], w.p, w.q).passed \
            and replayed != target
    target, draft = spec_models(w.spec)
    expected = target_sequence_law(target, w.horizon, w.spec.vocab_size)
    return not check_step(PLANTED_STEPS[name], w.target, w.draft, w.horizon).passed \
        and replay_step_law(PLANTED_STEPS[name], target, draft, w.horizon) != expected


ALL = [*PLANTED_SAMPLERS, *PLANTED_STEPS]
# Over 5 s of CPU at one seed: left to the slow run, which tries them at 5 seeds (the
# default suite keeps to 4 CPU min).  The issue-25 rules are found by deterministic edge
# cases (every seed alike): their fast test is tests/quality/test_defaults_reach.py.
SLOW_TO_FIND = {"second-sibling-stale-child", "sharded-by-target-mass",
                "gathered-local-residuals", "last-draft-against-top3", "draft-row-late",
                "bonus-from-top3", "trusts-equal-rows", "shared-smaller-support",
                "sharded-uniform-shards", "bonus-from-top3-gamma4",
                "batched-bonus-top3-gamma4"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow)
                                  if name in SLOW_TO_FIND else name for name in ALL])
def test_planted_rule_is_found_with_defaults(name):
    result = _search(name, seed=1)
    assert result.status == "fail", result
    assert _confirmed(name, result)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_planted_rule_is_found_at_every_seed(name):
    missed = [seed for seed in SEEDS if _search(name, seed).status != "fail"]
    assert not missed, f"{name} missed at seeds {missed}"


def test_the_planted_rules_are_right_outside_their_region():
    """Each planted bug is narrow: the rule passes on ordinary inputs."""
    for rule in PLANTED_SAMPLERS.values():
        assert check_sampler(rule, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]).passed
    target = ContextFreeModel(("1/5", "1/2", "3/10"))
    draft = ContextFreeModel(("1/2", "3/10", "1/5"))
    for step in PLANTED_STEPS.values():
        # Context-free models at horizon 3: no stale row differs, the bonus is the 4th token.
        assert check_step(step, target, draft, 3).passed
