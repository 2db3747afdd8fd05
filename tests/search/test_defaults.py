"""Issue 13: defaults that reach the bugs, and faithful uniforms for steps too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specexact import assert_step_preserves_target
from specexact.audit import SAMPLER
from specexact.counterexamples.chain_steps import chain
from specexact.counterexamples.steps import named_step
from specexact.properties import (
    DEFAULT_SAMPLER_VOCAB_SIZES,
    choose_horizon,
    search_sampler,
    search_step,
    step_edge_cases,
)
from tests.helpers import run_cli as run

INCLUSIVE_STEP = '''
def inclusive_step(target, draft, prefix, rng):
    p, q = target(prefix), draft(prefix)
    x = rng.categorical(q)
    if rng.random() <= p[x] / q[x]:  # accepts p(x) = 0 when u is exactly 0
        return (x,)
    return (rng.categorical([max(a - b, 0) for a, b in zip(p, q)]),)
'''


@pytest.fixture(scope="module")
def steps_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("steps") / "inclusive_steps.py"
    path.write_text(INCLUSIVE_STEP)
    return path


def test_sampler_vocabularies_reach_five():
    assert DEFAULT_SAMPLER_VOCAB_SIZES == (2, 5) == SAMPLER.default_sizes
    result = search_sampler(lambda p, q, rng: rng.categorical(p), examples=5)
    assert "2..5" in result.covered


@pytest.mark.parametrize(("gamma", "horizon"), [(1, 3), (2, 3), (3, 4), (4, 4), (5, 4)])
def test_the_horizon_is_chosen_from_the_step(gamma, horizon):
    step = named_step(chain, f"chain-{gamma}", gamma=gamma)
    chosen, longest = choose_horizon(step, step_edge_cases(2, 3))
    assert longest == gamma + 1
    assert chosen == horizon


@pytest.mark.slow
def test_the_chosen_horizon_is_reported():
    step = named_step(chain, "chain-3", gamma=3)
    result = search_step(step, examples=3)
    assert result.passed and result.horizon == 4
    assert "horizon 4 (chosen from the step: its longest output on the edge cases is 4 " \
           "tokens)" in result.covered
    # A second call's whole output is judged on the position-dependent edge cases.
    assert "judged on 5 tokens" in result.covered
    gamma2 = search_step(named_step(chain, "chain-2", gamma=2), examples=0)
    assert gamma2.horizon == 3 and "judged on 4 tokens" in gamma2.covered
    capped = search_step(named_step(chain, "chain-4", gamma=4), vocab_sizes=2, examples=0)
    assert capped.horizon == 4 and "capped at 4" in capped.covered
    assert "--horizon 5" in capped.covered
    given = search_step(step, horizon=2, examples=0)
    assert given.horizon == 2 and "chosen" not in given.covered


def test_a_step_that_always_crashes_keeps_the_default_horizon():
    def broken(target, draft, prefix, rng):
        raise RuntimeError("no")

    assert choose_horizon(broken, step_edge_cases(2, 3)) == (3, None)


def test_uniform_bits_for_steps_in_the_cli(steps_file):
    code, out, err = run("audit", f"{steps_file}:inclusive_step", "--kind", "step",
                         "--uniform-bits", "10", "--json")
    assert code == 1, err
    data = json.loads(out)
    assert data["counterexample"]["tv"] == "1/1024"
    assert "10-bit grid" in data["coverage"]
    assert data["horizon"] == 3


@pytest.mark.slow
def test_uniform_bits_for_steps_in_the_pytest_helper(steps_file):
    namespace: dict = {}
    exec(INCLUSIVE_STEP, namespace)
    with pytest.raises(AssertionError, match="10-bit"):
        assert_step_preserves_target(namespace["inclusive_step"], uniform_bits=10,
                                     examples=0)
    ok = assert_step_preserves_target(named_step(chain, "chain-1", gamma=1), uniform_bits=10,
                                      examples=2)
    assert ok.passed and "10-bit grid" in ok.coverage


@pytest.mark.slow
def test_the_default_step_audit_checks_both_float_grids(steps_file):
    code, out, _ = run("audit", f"{steps_file}:inclusive_step", "--kind", "step")
    assert code == 1
    flat = " ".join(out.split())
    assert "float32 grid k/2^24 and on the float64 grid k/2^53" in flat
    assert "shows only under float32 uniforms" in flat


def _chain_with_bonus_at(bonus_context, gamma):
    """A chain step, right except that its bonus row is the target's after
    ``bonus_context(prefix, accepted drafts)`` (prefix + drafts is right)."""
    def step(target, draft, prefix, rng):
        ctx, out = tuple(prefix), []
        for _ in range(gamma):
            p, q = target(ctx), draft(ctx)
            x = rng.categorical(q)
            if rng.random() * q[x] >= p[x]:
                return (*out, rng.categorical([max(a - b, 0)
                                               for a, b in zip(p, q, strict=True)]))
            out.append(x)
            ctx = (*ctx, x)
        return (*out, rng.categorical(target(bonus_context(tuple(prefix), tuple(out)))))

    return step


# Bug: after gamma accepted drafts the bonus is drawn from the last verified row.
_bonus_from_the_last_verified_row = _chain_with_bonus_at(
    lambda prefix, out: (*prefix, *out)[:-1], gamma=4)
# Bug: the bonus row is read after the accepted drafts only, not prefix + drafts:
# right on the first call, wrong on every later one.
_window_local_bonus = _chain_with_bonus_at(lambda prefix, out: out, gamma=2)


@pytest.mark.slow
def test_a_step_longer_than_the_horizon_is_judged_deeper_on_positional_rows():
    # A gamma = 4 chain emits 5 tokens: its bonus is outside the capped horizon of 4,
    # and context-dependent models two tokens deep give it the right row by chance.
    result = search_step(_bonus_from_the_last_verified_row, examples=0)
    assert result.status == "fail", str(result)
    assert result.verdict.horizon == 5
    assert "rows that change with every position" in result.covered
    correct = search_step(named_step(chain, "chain-4", gamma=4), examples=0)
    assert correct.status == "pass" and "judged on 5 tokens" in correct.covered


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.slow
def test_a_second_calls_bonus_at_the_wrong_context_is_found(seed):
    result = search_step(_window_local_bonus, seed=seed, examples=5)
    assert result.status == "fail", str(result)
