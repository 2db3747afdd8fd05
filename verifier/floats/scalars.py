"""Exact stand-ins for the floats a sampler expects, for float mode's exact run.

Float code is rerun on the exact rationals of its inputs to tell structure
from rounding.  Plain ``Fraction`` would not do: ``Fraction + 1e-10`` turns
into a float, and numpy-style code computes ``p / q`` on every entry, zeros
included, where a Fraction raises.  :class:`ExactScalar` keeps every result
exact (float constants join by their exact binary value), and in array mode
divides by zero the way numpy does (inf, -inf, nan).  Converting one to a
float is recorded, because after a cast the "exact" run is no longer exact.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import operator
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from specexact.collect import Collector
from specexact.errors import MissingDependency

__all__ = ["ExactScalar", "exact_inputs", "float_casts", "numpy_module", "torch_module"]

_CASTS: Collector[str] = Collector("specexact_float_casts")


def numpy_module(purpose: str) -> Any:
    """Import numpy, or raise :class:`MissingDependency` saying what needs it."""
    try:
        import numpy
    except ImportError:
        raise MissingDependency.of("numpy", purpose) from None
    return numpy


def torch_module(purpose: str) -> Any:
    """Import torch, or raise :class:`MissingDependency` saying what needs it."""
    try:
        import torch
    except ImportError:
        raise MissingDependency.of("torch", f"{purpose} (the CPU build is enough)") \
            from None
    return torch


def float_casts() -> contextlib.AbstractContextManager[list[str]]:
    """Collect, in a list, every conversion of an :class:`ExactScalar` to float."""
    return _CASTS.collecting()


def _operand(other: Any) -> Any:
    """``other`` as an exact number, a non-finite float, or NotImplemented."""
    if isinstance(other, (int, Fraction)):
        return other
    if isinstance(other, float):
        return Fraction(other) if math.isfinite(other) else float(other)
    if isinstance(other, numbers.Real) and hasattr(other, "item"):
        # numpy scalars (float32, int64, ...): .item() widens exactly.
        return _operand(other.item())
    return NotImplemented


def _ieee_quotient(numerator: Any) -> float:
    """x / 0 as numpy computes it (an exact zero counts as +0)."""
    if isinstance(numerator, float) and math.isnan(numerator):
        return math.nan
    if numerator > 0:
        return math.inf
    if numerator < 0:
        return -math.inf
    return math.nan


def _binary(name: str, reflected: bool) -> Callable[[ExactScalar, Any], Any]:
    base = getattr(Fraction, f"__{'r' if reflected else ''}{name}__")
    float_op = getattr(operator, name)

    def method(self: ExactScalar, other: Any) -> Any:
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        if isinstance(o, float):  # inf or nan: IEEE arithmetic decides
            mine = self.numerator / self.denominator  # not a cast by the code
            return float_op(o, mine) if reflected else float_op(mine, o)
        try:
            result = base(self, o)
        except ZeroDivisionError:
            if not self._ieee or name != "truediv":
                raise
            return _ieee_quotient(o if reflected else self)
        return type(self)._wrap(result)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


class ExactScalar(Fraction):
    """A Fraction whose arithmetic stays exact and whose float casts are recorded.

    Python semantics: division by zero raises, as it does for Python floats.
    """

    __slots__ = ()
    _ieee = False

    @classmethod
    def _wrap(cls, value: Any) -> Any:
        if isinstance(value, Fraction) and not isinstance(value, ExactScalar):
            return cls(value.numerator, value.denominator)
        return value

    def __float__(self) -> float:
        log = _CASTS.current()
        if log is not None and len(log) < 20:
            log.append(f"float({self})")
        return self.numerator / self.denominator

    def __neg__(self) -> Any:
        return type(self)._wrap(Fraction.__neg__(self))

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return type(self)._wrap(Fraction.__abs__(self))

    def _richcmp(self, other: Any, op: Any) -> Any:
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        return Fraction._richcmp(self, o, op)  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        return Fraction.__eq__(self, o)

    __hash__ = Fraction.__hash__

    def __repr__(self) -> str:
        return f"ExactScalar({self})"


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
    setattr(ExactScalar, f"__{_name}__", _binary(_name, False))
    setattr(ExactScalar, f"__r{_name}__", _binary(_name, True))
del _name


class _IEEEScalar(ExactScalar):
    """numpy semantics: x / 0 gives inf, -inf or nan instead of raising."""

    __slots__ = ()
    _ieee = True

    def __repr__(self) -> str:
        return f"ExactScalar({self}, ieee)"


def exact_inputs(p: Sequence[Fraction], q: Sequence[Fraction], *, arrays: bool
                 ) -> Callable[[], tuple[Any, Any]]:
    """A factory of fresh exact copies of p and q per execution.

    Lists of :class:`ExactScalar`, or (``arrays=True``) numpy object arrays of
    their numpy-semantics variant.
    """
    if not arrays:
        ps = [ExactScalar(x) for x in p]
        qs = [ExactScalar(x) for x in q]
        return lambda: (list(ps), list(qs))
    np = numpy_module("float mode with arrays=True")
    pa = np.empty(len(p), dtype=object)
    qa = np.empty(len(q), dtype=object)
    pa[:] = [_IEEEScalar(x) for x in p]
    qa[:] = [_IEEEScalar(x) for x in q]
    return lambda: (pa.copy(), qa.copy())
