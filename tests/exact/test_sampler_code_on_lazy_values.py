"""Regressions found by reviewing single-position samplers through the engine."""

from __future__ import annotations

import json
from fractions import Fraction as F

import pytest

from specexact import check_sampler
from specexact.errors import UnsupportedOperation

P, Q = ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]


def _residual(p, q):
    return [max(a - b, 0) for a, b in zip(p, q, strict=True)]


def _textbook_tail(p, q, rng, x):
    if rng.random() < p[x] / q[x]:
        return x
    return rng.categorical(_residual(p, q))


def asserts_int(p, q, rng):
    x = rng.categorical(q)
    assert isinstance(x, int)  # fine for a real token id
    return _textbook_tail(p, q, rng, x)


def serialises_token(p, q, rng):
    x = rng.categorical(q)
    json.dumps({"draft": x})  # logging the draft
    return _textbook_tail(p, q, rng, x)


def int_protocol(p, q, rng):
    x = rng.categorical(q)
    assert divmod(x, 1)[1] == 0 and round(x) == x and F(x) == x and x.bit_length() >= 0
    return _textbook_tail(p, q, rng, x)


def token_as_weight(p, q, rng):
    x = rng.categorical(q)
    rng.categorical([x, 1])  # a drawn id used as a weight: an int, so valid
    return _textbook_tail(p, q, rng, x)


def uniform_as_probability(p, q, rng):
    rng.bernoulli(rng.random())
    return _textbook_tail(p, q, rng, rng.categorical(q))


def crashes_at_p_equal_q(p, q, rng):
    r = _residual(p, q)
    fallback = rng.categorical(r)  # eager: raises when p = q
    x = rng.categorical(q)
    return x if rng.random() < p[x] / q[x] else fallback


def returns_tuple(p, q, rng):
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return (x,)
    return rng.categorical(_residual(p, q))


@pytest.mark.parametrize("rule", [asserts_int, serialises_token, int_protocol, token_as_weight])
def test_int_code_on_lazy_tokens_is_not_a_crash(rule):
    # These lossless rules used to FAIL with "crash on valid input": the lazy
    # token is not an int.  A crash must be the code's, not the proxy's.
    assert check_sampler(rule, P, Q).passed


def test_lazy_uniform_as_probability_is_undecided_not_a_crash():
    with pytest.raises(UnsupportedOperation):
        check_sampler(uniform_as_probability, P, Q)


def test_genuine_crash_is_still_a_finding():
    verdict = check_sampler(crashes_at_p_equal_q, ["1/2", "1/2"], ["1/2", "1/2"])
    assert not verdict.passed and verdict.crash is not None
    assert "InvalidArgument" in str(verdict.crash)


def test_tuple_from_a_sampler_is_not_a_token():
    # (0,) used to count as a valid outcome with p = 0 ("mass 1 on tokens where
    # p = 0") and printed in JSON as token "0".
    verdict = check_sampler(returns_tuple, [1, 0], [1, 0])
    assert not verdict.passed
    assert verdict.comparison is not None
    assert verdict.comparison.invalid_mass == 1
    assert verdict.comparison.support_violation == 0
    assert "(0,)" in verdict.table() and "tuple" in verdict.table()
