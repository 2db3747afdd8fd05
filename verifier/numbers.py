"""Exact numbers: converting user input to ``Fraction`` and validating distributions.

Every float is a dyadic rational, so ``Fraction(x)`` is exact: the value a
float implementation really computes with is the value we judge.
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Final

from specexact.errors import InvalidArgument, InvalidDistribution

__all__ = ["ONE", "ROW_SUM_SLACK", "ZERO", "as_distribution", "as_weights", "cumulative_index",
           "to_fraction"]

#: How far from 1 a float row given to float mode may sum (rounding-sized, as engines
#: hand rows over); beyond it the row is refused as not a probability row.
ROW_SUM_SLACK: Final = Fraction(1, 2**10)

#: The exact 0 and 1 the engine sums and compares with (Fractions are immutable).
ZERO: Final = Fraction(0)
ONE: Final = Fraction(1)

_FRACTION: Final = Fraction


def to_fraction(value: Any, *, name: str = "value") -> Fraction:
    """Convert ``value`` to an exact ``Fraction``.

    Accepts ``Fraction``, ``int``, ``Decimal``, decimal or fraction strings (``"3/10"``,
    ``"0.3"``), Python and numpy floats (converted exactly, so ``0.1`` becomes
    its binary value ``3602879701896397/36028797018963968``) and any
    ``numbers.Rational``.  NaN and infinities are rejected.

    >>> to_fraction("3/10")
    Fraction(3, 10)
    """
    if type(value) is _FRACTION:
        return value
    if isinstance(value, bool):
        msg = f"{name}={value!r} is a bool; give a number such as 0, 1 or '1/2'"
        raise InvalidArgument(msg)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            msg = f"{name}={value!r} is not finite; probabilities must be finite numbers"
            raise InvalidArgument(msg)
        return Fraction(value)  # exact: a Decimal is a finite decimal fraction
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            msg = f"{name}={value!r} is not a number; write it like '3/10', '0.3' or '1'"
            raise InvalidArgument(msg) from None
    as_float: float | None = None
    if isinstance(value, float):
        as_float = value
    elif hasattr(value, "dtype") and hasattr(value, "item"):
        # numpy / torch scalars: .item() gives the exact Python int or float
        # (float32 and float16 widen to float64 without rounding).
        item = value.item()
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            return to_fraction(item, name=name)
    if as_float is not None:
        if math.isnan(as_float) or math.isinf(as_float):
            msg = f"{name}={as_float!r} is not finite; probabilities must be finite numbers"
            raise InvalidArgument(msg)
        return Fraction(as_float)
    msg = (f"{name}={value!r} of type {type(value).__name__} is not an exact number; "
           "valid: Fraction, int, float, or a string like '3/10'")
    raise InvalidArgument(msg)


def as_distribution(values: Iterable[Any], *, name: str = "p", exact_sum: bool = True
                    ) -> tuple[Fraction, ...]:
    """Validate ``values`` as a probability vector and return it as exact Fractions.

    The vector must be non-empty, every entry finite and nonnegative, and the
    entries must sum to exactly 1.  A float vector is judged by its exact
    binary value, so ``[0.1, 0.2, 0.7]`` (which sums to slightly more than 1
    in exact arithmetic) is rejected: normalise it exactly first, for example
    with :func:`fractions.Fraction` strings.

    ``exact_sum=False`` skips the sum check (see :func:`as_weights`).

    Raises :class:`~specexact.errors.InvalidDistribution` naming ``name``.
    """
    kind = type(values).__name__
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        msg = f"{name} must be a sequence of probabilities, got {kind}"
        raise InvalidDistribution(msg)
    if hasattr(values, "tolist") and not isinstance(values, (list, tuple)):
        listed = values.tolist()
        items: Sequence[Any] = listed if isinstance(listed, list) else [listed]
    elif isinstance(values, Sequence):
        items = values
    else:
        # A mapping iterates over its keys, a set has no order and a generator
        # is used up by one reading: none of them is a probability vector.
        msg = (f"{name} must be a sequence of probabilities (a list, tuple or 1-D array "
               f"indexed by token id), got {kind}")
        if isinstance(values, Mapping):
            msg += ("; for a dict {token: probability}, pass "
                    f"[{name}.get(i, 0) for i in range(V)]")
        raise InvalidDistribution(msg)
    if len(items) == 0:
        msg = f"{name} is empty; a distribution needs a vocabulary of at least one token"
        raise InvalidDistribution(msg)
    out: list[Fraction] = []
    for i, v in enumerate(items):
        try:
            f = to_fraction(v, name=f"{name}[{i}]")
        except InvalidArgument as exc:
            raise InvalidDistribution(str(exc)) from None
        if f < 0:
            msg = f"{name}[{i}]={f} is negative; probabilities must be >= 0"
            raise InvalidDistribution(msg)
        out.append(f)
    total = sum(out, Fraction(0))
    if exact_sum and total != 1:
        msg = (f"{name} sums to {total} (~{float(total):.17g}), not exactly 1; "
               "a distribution's entries must sum to exactly 1 in exact arithmetic")
        raise InvalidDistribution(msg)
    return tuple(out)


def as_weights(values: Iterable[Any], *, name: str = "p"
               ) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """A float row as engines hand it over: ``(given, normalised)``, both exact.

    Rounded rows rarely sum to exactly 1 (``[0.1, 0.2, 0.7]`` sums to
    ``1 + 2**-54``).  ``given`` is the row's exact value; ``normalised`` is
    ``given / sum(given)``, the law the row stands for (what a categorical
    draw from it samples).  The sum must be within :data:`ROW_SUM_SLACK` of
    1: a row further off is a bug in the input, not rounding.
    """
    given = as_distribution(values, name=name, exact_sum=False)
    total = sum(given, Fraction(0))
    if abs(total - 1) > ROW_SUM_SLACK:
        msg = (f"{name} sums to ~{float(total):.17g}, more than 2^-10 away from 1; a "
               "probability row must sum to 1 up to rounding (normalise it first)")
        raise InvalidDistribution(msg)
    if total == 1:
        return given, given
    return given, tuple(x / total for x in given)


def check_same_vocabulary(p: Sequence[Any], q: Sequence[Any]) -> None:
    """Raise if ``p`` and ``q`` have different lengths."""
    if len(p) != len(q):
        msg = (f"p has {len(p)} entries and q has {len(q)}; "
               "target and draft must share one vocabulary")
        raise InvalidDistribution(msg)


def cumulative_index(weights: Sequence[Any], target: Any) -> int:
    """The first token whose cumulative weight exceeds ``target`` (tokens of weight 0
    are never chosen); the last token of positive weight when none does (``target``
    at the total).  Inverse-CDF sampling, exact on Fractions, the same walk on floats.

    >>> cumulative_index([Fraction(1, 4), Fraction(0), Fraction(3, 4)], Fraction(1, 4))
    2
    """
    acc: Any = 0
    last = 0
    for i, w in enumerate(weights):
        if w:
            acc += w
            last = i
            if target < acc:
                return i
    return last
