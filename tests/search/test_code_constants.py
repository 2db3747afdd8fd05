"""The code's own thresholds become edge cases, so a small-TV guard is found at every seed."""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F
from typing import Any

import pytest

from specexact.properties import search_sampler, search_step
from specexact.properties.constants import code_constants, constant_pairs, constants_family

THRESHOLD = 2e-4


def _residual(p: Any, q: Any) -> list[Any]:
    return [max(a - b, 0) for a, b in zip(p, q, strict=True)]


def guarded(p: Any, q: Any, rng: Any) -> Any:
    """Bug: when the residual's mass is below 1e-3 it samples from p instead."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    r = _residual(p, q)
    if sum(r) < 1e-3:
        return rng.categorical(p)
    return rng.categorical(r)


def guarded_by_global(p: Any, q: Any, rng: Any) -> Any:
    """The same bug, its threshold a module constant read in a helper."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return _fallback(p, q, rng)


def _fallback(p: Any, q: Any, rng: Any) -> Any:
    r = _residual(p, q)
    return rng.categorical(p if sum(r) < THRESHOLD else r)


def tiny_q_accepted(p: Any, q: Any, rng: Any) -> Any:
    """Bug: a draft with q(x) < 1e-3 is accepted outright (mass where p may be 0)."""
    x = rng.categorical(q)
    if q[x] < 1e-3 or rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(_residual(p, q))


def clamped_denominator(p: Any, q: Any, rng: Any, eps: float = 1e-12) -> Any:
    """Bug: ratio p / max(q, eps) under-accepts a draft with q(x) < eps."""
    x = rng.categorical(q)
    if rng.random() < p[x] / max(q[x], eps):
        return x
    return rng.categorical(_residual(p, q))


def isclose_fast_path(p: Any, q: Any, rng: Any) -> Any:
    """Bug: math.isclose's default rel_tol (1e-9, no literal here) accepts p(x) < q(x)."""
    x = rng.categorical(q)
    if math.isclose(p[x], q[x]) or rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(_residual(p, q))


def textbook_with_constants(p: Any, q: Any, rng: Any, eps: float = 1e-9) -> Any:
    """Lossless: the constant only names a tolerance it never uses wrongly."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    r = _residual(p, q)
    assert sum(r) > -eps
    return rng.categorical(r)


def test_literals_globals_helpers_defaults_and_partials_are_found() -> None:
    assert code_constants(guarded) == (F(1, 1000),)
    assert code_constants(guarded_by_global) == (F(1, 5000),)
    assert code_constants(textbook_with_constants) == (F(1, 10**9),)
    assert code_constants(functools.partial(guarded, rng=None)) == (F(1, 1000),)

    def ratio(p: Any, q: Any, rng: Any) -> Any:
        return 0 if p[0] / q[0] > 0.999 else 1  # stands for 1 - 0.999

    def nested(p: Any, q: Any, rng: Any) -> Any:
        return [c for c in p if c > -0.25]

    def plain(p: Any, q: Any, rng: Any) -> Any:
        return 0 if p[0] > 0 and True else 1

    assert code_constants(ratio) == (F(1, 1000),)
    assert code_constants(nested) == (F(1, 4),)
    assert code_constants(plain) == ()
    assert code_constants(isclose_fast_path) == (F(1, 10**9), F(1, 10**8), F(1, 10**5))


class _Config:
    skip_tv = 1e-3


CONFIG = _Config()
LIMITS = {"floor": 1e-7}


class _Verifier:
    greedy_above = 1 - 2**-10  # a class attribute

    def __init__(self) -> None:
        self.cfg = CONFIG
        self.eps = 2e-5

    def __call__(self, p: Any, q: Any, rng: Any) -> Any:
        return 0 if max(p) > self.greedy_above or self.cfg.skip_tv > self.eps else 1


def _uses_module_config(p: Any, q: Any, rng: Any) -> Any:
    return 0 if p[0] < LIMITS["floor"] else 1


def test_constants_held_by_objects_dicts_and_classes_are_found() -> None:
    found = code_constants(_Verifier())
    assert {F(1, 1000), F(1, 50000), F(1, 1024)} <= set(found), found
    assert F(1, 10**7) in code_constants(_uses_module_config)

    def casts(p: Any, q: Any, rng: Any) -> Any:
        return p.half() if q.bfloat16() else p

    assert code_constants(casts) == (F(1, 2**12), F(1, 2**9))


def test_a_wrapper_of_ours_is_followed_to_the_users_code() -> None:
    torch = pytest.importorskip("torch")
    from specexact.torch import torch_rng_sampler

    def kernel(p: Any, q: Any) -> Any:
        return torch.multinomial(q if q.min() > 1e-6 else p, 1)

    def finfo_guard(p: Any, q: Any) -> Any:
        return torch.multinomial(q.clamp(min=torch.finfo(q.dtype).eps), 1)

    assert code_constants(torch_rng_sampler(kernel)) == (F(1, 10**6),)
    assert code_constants(torch_rng_sampler(finfo_guard)) == (F(1, 2**23),)


def test_constant_pairs_are_distributions_on_the_threshold() -> None:
    pairs = constant_pairs([F(1, 1000)], 2, 3)
    assert pairs
    for p, q in pairs:
        assert sum(p) == 1 and sum(q) == 1 and min((*p, *q)) >= 0
    tvs = {sum(abs(a - b) for a, b in zip(p, q, strict=True)) / 2 for p, q in pairs}
    assert F(1, 2000) in tvs and F(1, 1000) in tvs
    assert constant_pairs([F(1, 1000)], 4, 5) == []
    assert constants_family([F(1, 1000), F(1, 2**23)]) == \
        "pairs at the code's constants (0.001, 2^-23)"


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rule", [guarded, guarded_by_global, tiny_q_accepted,
                                  clamped_denominator, isclose_fast_path],
                         ids=lambda r: r.__name__)
@pytest.mark.slow
def test_a_small_tv_guard_is_found_at_every_seed(rule: Any, seed: int) -> None:
    result = search_sampler(rule, seed=seed, examples=5)
    assert result.status == "fail", str(result)
    assert "the code's constants" in result.covered


def test_a_correct_sampler_with_constants_still_passes() -> None:
    assert search_sampler(textbook_with_constants, examples=5).status == "pass"


def chain_guarded(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any) -> Any:
    """A one-draft chain step with the same guard on its residual."""
    p, q = target(prefix), draft(prefix)
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return (x, rng.categorical(target((*prefix, x))))
    r = _residual(p, q)
    return (rng.categorical(p if sum(r) < 5e-4 else r),)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.slow
def test_steps_get_the_constant_pairs_too(seed: int) -> None:
    result = search_step(chain_guarded, seed=seed, examples=5, horizon=2)
    assert result.status == "fail"


def tolerance_at_run_time(p: Any, q: Any, rng: Any) -> Any:
    """Bug: a draft within 1 / (16 V^4) of uniform is treated as uniform (no literal)."""
    v = len(q)
    x = rng.categorical(q)
    flat = max(q) - min(q) < F(1, 16 * v**4)
    qx = F(1, v) if flat else q[x]
    if rng.random() * qx < p[x]:
        return x
    return rng.categorical([max(a - F(1, v) if flat else a - b, 0)
                            for a, b in zip(p, q, strict=True)])


@pytest.mark.parametrize("seed", range(3))
def test_a_tolerance_computed_at_run_time_is_found_by_the_fine_differences(seed: int) -> None:
    assert code_constants(tolerance_at_run_time) == ()
    result = search_sampler(tolerance_at_run_time, seed=seed, examples=5)
    assert result.status == "fail", str(result)
