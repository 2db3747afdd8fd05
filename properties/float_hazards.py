"""Float rows with the rounding hazards engines meet: the cases exact (p, q) pairs never are.

Rounded probability rows rarely sum to exactly 1, and a rule that is right
in exact arithmetic can divide 0 by 0 on them.  :func:`float_hazard_pairs`
draws rows of exactly representable floats of one format (``float64`` or
``float32``):

* ``q-above``: q >= p at every token after rounding, with p != q (the
  residual max(p - q, 0) is all zeros, yet a rejection has positive
  probability);
* ``p-above``: p >= q everywhere, a residual of a few ulps at every token;
* ``tiny-residual``: a few ulps of mass moved between two tokens;
* ``subnormal``: an entry that is a subnormal number, the other row 0 there.

Each row sums to 1 within rounding; float mode judges it against its own
normalisation (:func:`specexact.floats.check.check_floats`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from specexact.errors import InvalidArgument

__all__ = ["FLOAT_HAZARDS", "float_hazard_edge_cases", "float_hazard_pairs", "rounded_row"]

Row = tuple[Fraction, ...]

#: The hazards :func:`float_hazard_pairs` draws, simplest first.
FLOAT_HAZARDS = ("q-above", "p-above", "tiny-residual", "subnormal")
_FORMATS = ("float64", "float32")


def _check_fmt(fmt: str) -> None:
    if fmt not in _FORMATS:
        msg = f"fmt={fmt!r} must be one of {_FORMATS}"
        raise InvalidArgument(msg)


def _round(x: float, fmt: str) -> float:
    if fmt == "float64":
        return x
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _next_up(x: float, fmt: str, steps: int = 1) -> float:
    """The float ``steps`` ulps above the nonnegative float ``x`` in ``fmt``."""
    if fmt == "float64":
        for _ in range(steps):
            x = math.nextafter(x, math.inf)
        return x
    bits = struct.unpack("<I", struct.pack("<f", x))[0] + steps
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _next_down(x: float, fmt: str, steps: int = 1) -> float:
    if fmt == "float64":
        for _ in range(steps):
            x = math.nextafter(x, 0.0)
        return x
    bits = max(0, struct.unpack("<I", struct.pack("<f", x))[0] - steps)
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _smallest_subnormal(fmt: str) -> float:
    return math.ulp(0.0) if fmt == "float64" else 2.0**-149


def rounded_row(weights: Sequence[int], fmt: str) -> list[float]:
    """``w / sum(w)`` rounded entrywise to ``fmt`` (the row need not sum to 1 then)."""
    _check_fmt(fmt)
    total = sum(weights)
    return [_round(float(Fraction(w, total)), fmt) for w in weights]


def _exact(row: Sequence[float]) -> Row:
    return tuple(Fraction(x) for x in row)


def _hazard(kind: str, p: list[float], fmt: str, *, where: Sequence[int], steps: int,
            src: int, dst: int) -> tuple[Row, Row]:
    q = list(p)
    positive = [i for i in range(len(p)) if p[i] > 0]
    if kind == "q-above":
        for i in where:
            q[i] = _next_up(p[i], fmt, steps)
    elif kind == "p-above":
        for i in where:
            if p[i] > 0:
                q[i] = _next_down(p[i], fmt, steps)
    elif kind == "tiny-residual":
        a, b = positive[src % len(positive)], dst % len(p)
        if a == b:
            b = (b + 1) % len(p)
        moved = _next_down(p[a], fmt, steps)
        q[a] = moved
        q[b] = _round(q[b] + (p[a] - moved), fmt)
    else:  # subnormal: token i's mass moves to another token; p keeps a subnormal there
        i = where[0] if where else 0
        j = (i + 1) % len(p)
        q[j] = _round(q[j] + q[i], fmt)
        q[i] = 0.0
        p = list(q)
        p[i] = _smallest_subnormal(fmt) * steps
    return _exact(p), _exact(q)


@st.composite
def _pairs(draw: Any, low: int, high: int, fmt: str) -> tuple[Row, Row]:
    v = draw(st.integers(max(low, 2), max(high, 2)))
    kind = draw(st.sampled_from(FLOAT_HAZARDS))
    weights = draw(st.lists(st.integers(1, 12), min_size=v, max_size=v))
    where = sorted(set(draw(st.lists(st.integers(0, v - 1), min_size=1, max_size=v))))
    steps = draw(st.integers(1, 3))
    src, dst = draw(st.integers(0, v - 1)), draw(st.integers(0, v - 1))
    return _hazard(kind, rounded_row(weights, fmt), fmt, where=where, steps=steps,
                   src=src, dst=dst)


def float_hazard_pairs(*, vocab_sizes: tuple[int, int] = (2, 5), fmt: str = "float64"
                       ) -> st.SearchStrategy[tuple[Row, Row]]:
    """(p, q) float rows of ``fmt`` with one of the :data:`FLOAT_HAZARDS`, as exact values."""
    _check_fmt(fmt)
    low, high = vocab_sizes
    return _pairs(low, high, fmt)


def float_hazard_edge_cases(low: int, high: int, fmt: str) -> list[tuple[Row, Row]]:
    """One case of each hazard at the smallest vocabulary of the range (at least 2) and at 3."""
    _check_fmt(fmt)
    out: list[tuple[Row, Row]] = []
    for v in sorted({max(low, 2), min(max(high, 2), 3)}):
        p = rounded_row([1] + [2] * (v - 1), fmt)  # 1/3, 2/3 and the like: inexact in binary
        for kind in FLOAT_HAZARDS:
            out.append(_hazard(kind, p, fmt, where=range(v), steps=1, src=0, dst=1))
    return out
