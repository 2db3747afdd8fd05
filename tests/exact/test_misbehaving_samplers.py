"""Every way a sampler can misbehave: raising, looping, hidden randomness, bad outputs.

(The validation of its inputs is in tests/foundation/test_input_validation.py.)
"""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest

from specexact import (
    Budget,
    BudgetExceeded,
    HiddenRandomness,
    InvalidToken,
    SamplerRaised,
    Undecided,
    UnsupportedOperation,
    check_sampler,
    output_distribution,
)


def test_sampler_that_raises_is_a_finding_with_context():
    def crash(p, q, rng):
        x = rng.categorical(q)
        if x == 1:
            raise RuntimeError("boom")
        return x

    with pytest.raises(SamplerRaised, match="RuntimeError: boom") as info:
        output_distribution(crash, ["1/2", "1/2"], ["1/4", "3/4"])
    error = info.value
    assert error.context["p"] == (F(1, 2), F(1, 2))
    assert error.context["q"] == (F(1, 4), F(3, 4))
    assert any("== 1: True" in step for step in error.path)
    assert isinstance(error.__cause__, RuntimeError)

    verdict = check_sampler(crash, ["1/2", "1/2"], ["1/4", "3/4"])
    assert not verdict.passed
    assert verdict.crash is not None
    assert "crash on valid input" in verdict.reason


def test_zero_mass_fallback_is_a_finding():
    # Drawing the fallback when p = q: the residual is all zeros.
    def eager_residual(p, q, rng):
        fallback = rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])
        x = rng.categorical(q)
        return x if rng.random() * q[x] < p[x] else fallback

    verdict = check_sampler(eager_residual, ["1/2", "1/2"], ["1/2", "1/2"])
    assert verdict.crash is not None
    assert "positive sum" in str(verdict.crash)


def test_out_of_range_id_and_non_tokens_are_flagged():
    def off_by_one(p, q, rng):
        x = rng.categorical(q)
        return x + 1

    verdict = check_sampler(off_by_one, ["1/2", "1/2"], ["1/2", "1/2"])
    assert not verdict.passed
    assert verdict.comparison is not None
    assert verdict.comparison.invalid_mass == F(1, 2)
    assert verdict.comparison.invalid_outcomes == (2,)
    assert "outside vocabulary" in verdict.table()

    def returns_float(p, q, rng):
        return 1.0

    verdict = check_sampler(returns_float, ["0", "1"], ["0", "1"])
    assert not verdict.passed  # 1.0 must not merge with token 1
    assert verdict.actual == {InvalidToken(1.0): 1}

    def returns_bool(p, q, rng):
        return rng.random() < F(1, 2)

    verdict = check_sampler(returns_bool, ["1/2", "1/2"], ["1/2", "1/2"])
    assert not verdict.passed
    assert verdict.comparison is not None and verdict.comparison.invalid_mass == 1


def test_support_violation_is_flagged_separately():
    def leaks(p, q, rng):
        x = rng.categorical(q)
        if rng.random() <= p[x] / q[x] or x == 2:
            return x
        return rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])

    verdict = check_sampler(leaks, ["1/2", "1/2", "0"], ["1/4", "1/4", "1/2"])
    assert verdict.comparison is not None
    assert verdict.comparison.support_violation == F(1, 2)
    assert verdict.comparison.invalid_mass == 0


def test_endless_loop_without_rng_hits_the_time_budget():
    def spin(p, q, rng):
        while True:
            pass

    with pytest.raises(BudgetExceeded, match="max_seconds"):
        output_distribution(spin, [1], [1], budget=Budget(max_seconds=0.3))


def test_endless_branching_loop_reports_resolved_mass():
    def geometric(p, q, rng):
        while True:
            if rng.random() < F(1, 2):
                return 0

    with pytest.raises(BudgetExceeded, match="max_choices=20") as info:
        output_distribution(geometric, [1], [1], budget=Budget(max_choices=20))
    assert info.value.resolved_mass == 1 - F(1, 2 ** 20)
    assert isinstance(info.value, Undecided)


def test_spinning_on_one_uniform_hits_the_operation_budget():
    def spin(p, q, rng):
        u = rng.random()
        while u < 2:
            pass

    with pytest.raises(BudgetExceeded, match="max_operations"):
        output_distribution(spin, [1], [1], budget=Budget(max_operations=1000))


def test_execution_budget():
    with pytest.raises(BudgetExceeded, match="max_executions=3"):
        output_distribution(lambda p, q, rng: int(rng.categorical(q)),
                            ["1/4"] * 4, ["1/4"] * 4, budget=Budget(max_executions=3))


def test_python_random_is_hidden_randomness():
    def uses_random(p, q, rng):
        x = rng.categorical(q)
        if random.random() < p[x] / q[x]:
            return x
        return rng.categorical(p)

    with pytest.raises(HiddenRandomness, match="global random generator"):
        output_distribution(uses_random, ["1/2", "1/2"], ["1/2", "1/2"])


def test_private_generator_is_caught_by_replay():
    private = random.Random(1)

    def uses_private(p, q, rng):
        if private.random() < 0.5:
            return 0 if rng.random() < F(1, 2) else 1
        return 1 if rng.bernoulli(F(1, 3)) else 0

    with pytest.raises(HiddenRandomness, match="did not reproduce"):
        output_distribution(uses_private, ["1/2", "1/2"], ["1/2", "1/2"])


def test_private_generator_caught_by_rerunning_the_first_path():
    private = random.Random(0)

    def flips(p, q, rng):
        x = rng.categorical(q)
        return x if private.random() < 0.5 else 1 - x

    with pytest.raises(HiddenRandomness, match="same path twice"):
        output_distribution(flips, ["1/2", "1/2"], ["1/3", "2/3"])


def test_numpy_global_random_is_hidden_randomness():
    np = pytest.importorskip("numpy")

    def uses_numpy(p, q, rng):
        return 0 if np.random.random() < 0.5 else 1

    with pytest.raises(HiddenRandomness):
        output_distribution(uses_numpy, ["1/2", "1/2"], ["1/2", "1/2"])


@pytest.mark.parametrize("misuse", [
    lambda u, v: float(u),
    lambda u, v: u < v,
    lambda u, v: u * v,
    lambda u, v: u ** 2,
    lambda u, v: 1 / u,
    lambda u, v: bool(u),
    lambda u, v: [0, 1][u],
])
def test_unsupported_uniform_operations(misuse):
    def rule(p, q, rng):
        misuse(rng.random(), rng.random())
        return 0

    with pytest.raises(UnsupportedOperation, match="unsupported operation"):
        output_distribution(rule, [1], [1])


def test_unsupported_operation_is_not_swallowed_by_the_sampler():
    def swallow(p, q, rng):
        try:
            float(rng.random())
        except Exception:
            return 0
        return 0

    with pytest.raises(UnsupportedOperation):
        output_distribution(swallow, [1], [1])


def test_lazy_value_escaping_its_run_is_refused():
    kept = []

    def leak(p, q, rng):
        kept.append(rng.categorical(q))
        if len(kept) > 1:
            return int(kept[0])  # a token from an earlier, finished run
        return 0 if rng.random() < F(1, 2) else 1

    with pytest.raises((UnsupportedOperation, HiddenRandomness)):
        output_distribution(leak, ["1/2", "1/2"], ["1/2", "1/2"])


def test_invalid_weights_from_the_sampler_are_a_finding():
    with pytest.raises(SamplerRaised, match="negative"):
        output_distribution(lambda p, q, rng: rng.categorical([1, -1, 1]), [1], [1])
    with pytest.raises(SamplerRaised, match="prob=3/2 must lie in"):
        output_distribution(lambda p, q, rng: rng.bernoulli(F(3, 2)), [1], [1])
