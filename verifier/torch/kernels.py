"""Scalar kernels of the elementwise ops: torch's float semantics on exact elements.

Each kernel takes and returns elements (see :mod:`.values` and :mod:`.noise`);
the ops of :mod:`.ops_elementwise` map them over object arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import torch

from specexact.exact.random_source import LazyToken
from specexact.numbers import ONE, ZERO
from specexact.torch.noise import LogE, Race, Scaled, Unif
from specexact.torch.tensor import convert
from specexact.torch.values import (
    ExpLinear,
    LogLinear,
    LogR,
    NanFlag,
    Special,
    Uninit,
    current_session,
    describe,
    unsupported,
)

__all__ = [
    "abs_kernel",
    "add_kernel",
    "compare_kernel",
    "div_scalar",
    "exp_scalar",
    "floordiv_kernel",
    "is_rational",
    "isfinite_kernel",
    "isinf_kernel",
    "isnan_kernel",
    "log_scalar",
    "log_uniform",
    "logical_kernel",
    "logical_not_kernel",
    "maximum_scalar",
    "minimum_scalar",
    "mod_kernel",
    "mul_kernel",
    "nan_first",
    "neg_kernel",
    "pow_kernel",
    "reciprocal_kernel",
    "sign_kernel",
    "sqrt_scalar",
    "sub_kernel",
]


def is_rational(x: Any) -> bool:
    return isinstance(x, (Fraction, int)) and not isinstance(x, bool)


def div_scalar(a: Any, b: Any) -> Any:
    if type(a) is Fraction and type(b) is Fraction and b:  # the common case first
        return a / b
    if isinstance(a, LazyToken):
        a = a.value()
    if isinstance(b, LazyToken):
        b = b.value()
    if is_rational(b) and b == 0:
        if is_rational(a):
            if a == 0:
                return Special.make(math.nan, "0/0 (division)")
            return Special.make(math.copysign(math.inf, a), "division by zero")
        if isinstance(a, LogR):
            return a / b
    if is_rational(a) and is_rational(b):
        return Fraction(a) / Fraction(b)
    if isinstance(a, Special) and is_rational(b):
        return a / Fraction(b)
    return a / b


def add_kernel(a: Any, b: Any) -> Any:
    return a + b


def sub_kernel(a: Any, b: Any) -> Any:
    return a - b


def mul_kernel(a: Any, b: Any) -> Any:
    return a * b


def pow_kernel(a: Any, b: Any) -> Any:
    if is_rational(a) and isinstance(b, (int, Fraction)) and Fraction(b).denominator == 1:
        e = int(b)
        if a == 0 and e < 0:
            return Special.make(math.inf, "0 ** negative")
        return Fraction(a) ** e
    if isinstance(a, LogR) and is_rational(b):
        return unsupported(f"log({a.r}) ** {b}")
    raise unsupported(f"{describe(a)} ** {describe(b)} (only integer powers of rationals)")


def floordiv_kernel(a: Any, b: Any) -> Any:
    if is_rational(b) and b == 0:
        raise unsupported("integer floor division by zero")
    return a // b


def mod_kernel(a: Any, b: Any) -> Any:
    if is_rational(b) and b == 0:
        raise unsupported("remainder by zero")
    return a % b


def nan_first(a: Any, b: Any) -> Any | None:
    for v in (a, b):
        if isinstance(v, Uninit):
            return v
    for v in (a, b):
        if isinstance(v, Special) and v.is_nan:
            return v
    return None


def maximum_scalar(a: Any, b: Any) -> Any:
    first = nan_first(a, b)
    if first is not None:
        return first
    return b if bool(b > a) else a


def minimum_scalar(a: Any, b: Any) -> Any:
    first = nan_first(a, b)
    if first is not None:
        return first
    return b if bool(b < a) else a


def compare_kernel(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def kernel(a: Any, b: Any) -> Any:
        r = op(a, b)
        if isinstance(r, Uninit):
            return r
        for v in (a, b):
            if isinstance(v, Special) and v.is_nan:
                return NanFlag(bool(r), v.origin)
        return bool(r)

    return kernel


def logical_kernel(op: Callable[[bool, bool], bool]) -> Callable[[Any, Any], Any]:
    def kernel(a: Any, b: Any) -> Any:
        for v in (a, b):
            if isinstance(v, Uninit):
                return v
        return op(bool(convert(a, torch.bool)), bool(convert(b, torch.bool)))

    return kernel


def exp_scalar(x: Any) -> Any:
    if isinstance(x, LogR):
        return x.r
    if isinstance(x, LogLinear):
        return x.exp()
    if is_rational(x):
        if x == 0:
            return ONE
        raise unsupported(f"exp({x}): e to a nonzero rational is irrational (exp is exact "
                          "only on exact logs, e.g. logits that are log-probabilities)")
    if isinstance(x, Special):
        if x.is_nan or x.value > 0:
            return x
        return ZERO
    if isinstance(x, LogE):
        return x.exp()
    if isinstance(x, Uninit):
        return x
    raise unsupported(f"exp of {describe(x)}")


def log_scalar(x: Any) -> Any:
    if isinstance(x, ExpLinear):
        return x.log.simplified()
    if is_rational(x):
        if x > 0:
            return LogR.of(Fraction(x))
        if x == 0:
            return Special.make(-math.inf, "log(0)")
        return Special.make(math.nan, "log of a negative number")
    if isinstance(x, Special):
        if x.is_nan or x.value > 0:
            return x
        return Special.make(math.nan, "log(-inf)", x)
    if isinstance(x, Unif):
        return log_uniform(x)
    if isinstance(x, (Scaled, Race)):
        return x.log()
    if isinstance(x, Uninit):
        return x
    raise unsupported(f"log of {describe(x)}")


def log_uniform(x: Unif) -> Any:
    """log(u) or log(1 - u) of a fresh uniform: minus an Exp(1) draw.

    The grid uniform is idealised as continuous here: -log(u) of a 2**-K grid
    is an exponential only up to rounding of order 2**-K.
    """
    rec = x.rec
    if (x.a, x.b) not in ((ONE, ZERO), (-ONE, ONE)):
        raise unsupported(f"log({x!r}): only log(u) and log(1 - u) of a uniform are "
                          "modelled (as minus an exponential)")
    if rec.compared or rec.noise:
        raise unsupported("log of a uniform that was also compared or already used as "
                          "noise (the two uses are dependent)")
    rec.noise = True
    noise = current_session().new_noise(f"-log(u{rec.index})")
    return Scaled(noise, -ONE)


def neg_kernel(x: Any) -> Any:
    if isinstance(x, bool):
        raise unsupported("negation of a bool tensor (torch raises)")
    return -x


def abs_kernel(x: Any) -> Any:
    return abs(x)


def sqrt_scalar(x: Any) -> Any:
    if is_rational(x) and x >= 0:
        f = Fraction(x)
        n, d = math.isqrt(f.numerator), math.isqrt(f.denominator)
        if n * n == f.numerator and d * d == f.denominator:
            return Fraction(n, d)
        raise unsupported(f"sqrt({f}) (irrational)")
    if isinstance(x, Special) and (x.is_nan or x.value > 0):
        return x
    if isinstance(x, Uninit):
        return x
    if is_rational(x) or isinstance(x, Special):
        return Special.make(math.nan, "sqrt of a negative number")
    raise unsupported(f"sqrt of {describe(x)}")


def reciprocal_kernel(x: Any) -> Any:
    return div_scalar(ONE, x)


def sign_kernel(x: Any) -> Any:
    if isinstance(x, (Uninit,)):
        return x
    if isinstance(x, Special):
        return x if x.is_nan else Fraction(1 if x.value > 0 else -1)
    return Fraction(int(x > 0) - int(x < 0))


def isnan_kernel(x: Any) -> Any:
    return x if isinstance(x, Uninit) else isinstance(x, Special) and x.is_nan


def isinf_kernel(x: Any) -> Any:
    return x if isinstance(x, Uninit) else isinstance(x, Special) and not x.is_nan


def isfinite_kernel(x: Any) -> Any:
    return x if isinstance(x, Uninit) else not isinstance(x, Special)


def logical_not_kernel(x: Any) -> Any:
    return x if isinstance(x, Uninit) else not convert(x, torch.bool)
