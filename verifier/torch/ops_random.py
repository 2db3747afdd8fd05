"""Random ops: rand, uniform_, randint, multinomial, exponential_, bernoulli.

Each draw is a lazy value of the engine (a uniform, a categorical token) taken
from the generator stream of :class:`~specexact.torch.session.Session`.
``torch.rand`` is the dtype's grid k / 2**K (0 included) by default.
``exponential_`` gives ideal Exp(1) draws whose only modelled use is a race
(argmax of w / E, or of log w + G with Gumbel G = -log E).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.numbers import ONE, ZERO
from specexact.torch.grid import GridDraw, Step
from specexact.torch.noise import Scaled, Unif
from specexact.torch.ops_shape import size_args
from specexact.torch.tensor import (
    ExactTensor,
    as_exact,
    as_int,
    is_float,
    make,
    read_scalar,
    scalar_operand,
)
from specexact.torch.values import (
    LogR,
    Special,
    Uninit,
    current_session,
    describe,
    unsupported,
    user_location,
)

__all__ = ["RANDOM", "REFUSED"]


def _fill(shape: tuple[int, ...], values: list[Any], dtype: torch.dtype) -> ExactTensor:
    arr = np.empty(shape, dtype=object)
    if arr.ndim == 0:
        arr[()] = values[0]
    else:
        arr.reshape(-1)[:] = values
    return make(arr, dtype)


def _uniforms(shape: tuple[int, ...], dtype: torch.dtype, generator: Any,
              a: Fraction = ONE, b: Fraction = ZERO) -> ExactTensor:
    s = current_session()
    if not is_float(dtype):
        raise RuntimeError(f"\"check_uniform_bounds\" not implemented for '{dtype}'")
    bits = s.uniform_bits(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    recs = s.draw(generator, ("uniform", bits), n, lambda: s.new_uniform(bits))
    return _fill(shape, [s.uniform_value(r, dtype, a, b) for r in recs], dtype)


def rand(*size: Any, generator: Any = None, dtype: Any = None, **kwargs: Any) -> ExactTensor:
    return _uniforms(size_args(size), dtype or torch.get_default_dtype(), generator)


def rand_like(input: Any, *, dtype: Any = None, **kwargs: Any) -> ExactTensor:
    t = as_exact(input)
    return _uniforms(tuple(t.arr.shape), dtype or t.dtype, kwargs.get("generator"))


def uniform_(self: Any, a: Any = 0, b: Any = 1, *, generator: Any = None,
             **kwargs: Any) -> ExactTensor:
    t = as_exact(self)
    lo = scalar_operand(kwargs.get("from", a), t.dtype)
    hi = scalar_operand(kwargs.get("to", b), t.dtype)
    fresh = _uniforms(tuple(t.arr.shape), t.dtype, generator, hi - lo, lo)
    t.arr[...] = fresh.arr
    return t


def exponential_(self: Any, lambd: Any = 1, *, generator: Any = None) -> ExactTensor:
    t = as_exact(self)
    s = current_session()
    rate = scalar_operand(lambd, t.dtype)
    if not isinstance(rate, Fraction) or rate <= 0:
        raise unsupported(f"exponential_ with rate {rate!r}")
    n = t.arr.size
    if s.semantics == "dtype" and s.uniform_bits(t.dtype) is not None:
        vals: list[Any] = _grid_exponentials(s, t.dtype, generator, n, rate)
    else:
        where = f"exponential_ at {user_location()}"  # once: every element is drawn here
        recs = s.draw(generator, ("exponential",), n, lambda: s.new_noise(where))
        vals = [Scaled(r, 1 / rate) for r in recs]
    for pos, v in zip(np.ndindex(*t.arr.shape), vals, strict=True):
        t.arr[pos] = v
    return t


#: Bits of the uniform torch's CPU ``exponential_`` derives each draw from: one float64
#: ``torch.rand`` draw k / 2**53 (0 included), the same generator stream.
EXPONENTIAL_BITS = 53


def _exponential_kernel(rate: Fraction) -> Any:
    """torch's CPU ``exponential_`` on float64 draws ``u``: ``(-1 / rate) * log1p(-u)``
    in double, with the C library's scalar ``log1p`` (torch's vectorised ``log1p`` can
    differ by an ulp); ``u = 0`` gives ``E = 0``."""
    c = -1.0 / float(rate)

    def kernel(t: torch.Tensor) -> torch.Tensor:
        values = [c * math.log1p(-x) for x in t.reshape(-1).tolist()]
        return torch.tensor(values, dtype=torch.float64).reshape(t.shape)

    return kernel


def _grid_exponentials(s: Any, dtype: torch.dtype, generator: Any, n: int,
                       rate: Fraction) -> list[Any]:
    """``exponential_`` as torch's CPU kernel computes it, in dtype semantics: each
    element is a function of its own float64 grid uniform (``k / 2**53``), the kernel
    above then a cast to ``dtype`` (checked against real torch in the tests)."""
    recs = s.draw(generator, ("uniform", EXPONENTIAL_BITS), n,
                  lambda: s.new_uniform(EXPONENTIAL_BITS))
    step = Step("exponential_", _exponential_kernel(rate), (None,), 0, (), torch.float64, 0,
                const=float(1 / rate))
    out: list[Any] = []
    for rec in recs:
        draw = GridDraw(rec, torch.float64).then(step, torch.float64)
        if dtype != torch.float64:
            draw = draw.then(Step("cast", lambda a, d=dtype: a.to(d), (None,), 0, (),
                                  torch.float64, 0), dtype)
        out.append(draw)
    return out


def randint(*args: Any, size: Any = None, generator: Any = None, dtype: Any = None,
            **kwargs: Any) -> ExactTensor:
    ints = [a for a in args if not isinstance(a, (tuple, list, torch.Size))]
    shapes = [a for a in args if isinstance(a, (tuple, list, torch.Size))]
    shape = size_args((size if size is not None else shapes[0],))
    low, high = (0, ints[0]) if len(ints) == 1 else (ints[0], ints[1])
    low, high = as_int(kwargs.get("low", low)), as_int(kwargs.get("high", high))
    s = current_session()
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    weights = [ONE] * (high - low)
    toks = s.draw(generator, ("randint", low, high), n,
                  lambda: s.rng.categorical(weights))
    vals = toks if low == 0 else [t + low for t in toks]
    return _fill(shape, vals, dtype or torch.int64)


def _weights(row: list[Any]) -> list[Fraction]:
    """Validate one multinomial row as torch does (it raises on inf, nan, < 0, sum 0)."""
    out = []
    for x in row:
        if type(x) is Fraction and x.numerator >= 0:  # the common case, kept as it is
            out.append(x)
            continue
        if isinstance(x, Uninit):
            raise x.read("used as a multinomial weight")
        if isinstance(x, Special):
            raise RuntimeError(f"probability tensor contains either `inf`, `nan` or element "
                               f"< 0 ({x.value} from {x.origin}, at {user_location()})")
        if isinstance(x, LogR) or not isinstance(x, (Fraction, int)):
            raise unsupported(f"{describe(x)} as a multinomial weight")
        if x < 0:
            raise RuntimeError(f"probability tensor contains either `inf`, `nan` or element "
                               f"< 0 (at {user_location()})")
        out.append(Fraction(x))
    if not any(out):
        raise RuntimeError(f"invalid multinomial distribution (sum of probabilities <= 0) "
                           f"(at {user_location()})")
    return out


def multinomial(input: Any, num_samples: Any, replacement: bool = False, *,
                generator: Any = None, out: Any = None) -> ExactTensor:
    t = as_exact(input)
    if not is_float(t.dtype):
        raise RuntimeError("multinomial only supports floating-point dtypes for input")
    n = as_int(num_samples)
    rows = [list(t.arr)] if t.arr.ndim == 1 else [list(r) for r in t.arr]
    s = current_session()
    results = []
    for row in rows:
        weights = _weights(row)
        # One sample always has a category: _weights refused a row with none.
        if not replacement and n > 1 and n > sum(1 for w in weights if w):
            raise RuntimeError("invalid multinomial distribution (with replacement=False, "
                               f"not enough non-negative category to sample) at "
                               f"{user_location()}")
        kind = ("multinomial", tuple(weights), n, replacement)
        (tokens,) = s.draw(generator, kind, 1, functools.partial(_sample, weights, n,
                                                                   replacement))
        results.append(tokens)
    arr = np.empty((len(rows), n), dtype=object)
    for i, r in enumerate(results):
        arr[i, :] = r
    return make(arr.reshape(n) if t.arr.ndim == 1 else arr, torch.int64)


def _sample(weights: list[Fraction], n: int, replacement: bool) -> list[Any]:
    rng = current_session().rng
    if replacement:
        return [rng.categorical(weights) for _ in range(n)]
    left = list(weights)
    out: list[Any] = []
    for j in range(n):
        token = rng.categorical(left)
        if j < n - 1:
            # Later draws exclude this id: its value decides their weights.
            v = token.value()
            left[v] = ZERO
            out.append(v)
        else:
            out.append(token)
    return out


def bernoulli(input: Any, p: Any = None, *, generator: Any = None,
              **kwargs: Any) -> ExactTensor:
    t = as_exact(input)
    probs = [read_scalar(x, "a bernoulli probability") for x in t.arr.reshape(-1)] \
        if p is None else [scalar_operand(p, t.dtype)] * t.arr.size
    s = current_session()
    recs = s.draw(generator, ("uniform", s.uniform_bits(t.dtype)), len(probs),
                  lambda: s.new_uniform(s.uniform_bits(t.dtype)))
    vals = [Fraction(int(bool(Unif(r) < q))) for r, q in zip(recs, probs, strict=True)]
    return _fill(tuple(t.arr.shape), vals, t.dtype)


def _refuse(name: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise unsupported(f"{name}: its draws are not a rational law the engine can enumerate")

    return fn


#: Random ops whose laws are not rational: kept in the table only to refuse them by name.
REFUSED: frozenset[str] = frozenset({"randn", "randn_like", "normal_", "normal"})

RANDOM: dict[str, Any] = {
    "rand": rand, "rand_like": rand_like, "uniform_": uniform_,
    "exponential_": exponential_, "randint": randint, "multinomial": multinomial,
    "bernoulli": bernoulli, "randn": _refuse("torch.randn"),
    "randn_like": _refuse("torch.randn_like"), "normal_": _refuse("Tensor.normal_"),
    "normal": _refuse("torch.normal"),
}
