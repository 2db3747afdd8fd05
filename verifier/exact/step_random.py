"""The random source handed to decoding steps: ExactRandom with cheaper hot paths.

A step draws several tokens per execution and every leaf of its choice tree
replays all of them, so two costs of the generic source dominate: summing
the weights of each ``categorical`` with Fraction additions, and computing a
token's whole conditional law each time it is fixed, even on a replay that
only needs the recorded choice.  This subclass sums Fraction and int
weights over a common denominator (one normalisation instead of one per
addition) and builds the law only when a choice point is first explored.
Comparisons of a continuous uniform still known to lie in one interval (every
acceptance test) skip the generic interval bookkeeping.  Anything unusual
(floats, numpy values, invalid weights, grid uniforms, equality tests) goes
through the generic path, which also raises the errors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from verifier.exact.random_source import (
    ExactRandom,
    LazyToken,
    LazyUniform,
    RowSource,
    ValidatedRow,
    _UniformState,
)

__all__ = ["StepRandom"]

_ONE = Fraction(1)
_ZERO = Fraction(0)


def _fast_weights(weights: Any) -> tuple[tuple[Fraction, ...], Fraction] | None:
    """Weights and their total when every weight is a nonnegative Fraction or int."""
    if isinstance(weights, RowSource):
        weights = weights.resolve()
    if type(weights) is ValidatedRow and weights.untouched():
        # A model row as the model gave it: validated, summing to exactly 1.
        return weights.source, _ONE
    if not isinstance(weights, (list, tuple, Sequence)) or isinstance(weights, (str, bytes)):
        return None
    ws: list[Fraction] = []
    common = 1
    for w in weights:
        kind = type(w)
        if kind is Fraction:
            if w.numerator < 0:
                return None
            d = w.denominator
            if d != 1 and common % d:
                common = common // math.gcd(common, d) * d
            ws.append(w)
        elif kind is int:
            if w < 0:
                return None
            ws.append(Fraction(w))
        else:
            return None
    total = 0
    for w in ws:
        total += w.numerator * (common // w.denominator)
    if total <= 0:
        return None
    return tuple(ws), Fraction(total, common)


_ORDER_OPS = frozenset(("<", "<=", ">", ">="))


class _StepUniform(LazyUniform):
    """A lazy uniform whose common uses skip generic conversions.

    ``u * c`` with a Fraction ``c`` and ``u * c < t`` (the acceptance test) go
    straight to the exact threshold t / c; everything else is LazyUniform's.
    """

    __slots__ = ()

    def _new(self, a: Fraction, b: Fraction) -> LazyUniform:
        return _StepUniform(self._rng, self._state, a, b)

    def __mul__(self, other: Any) -> LazyUniform:
        if type(other) is Fraction and self._b is _ZERO:
            a = self._a
            return _StepUniform(self._rng, self._state, other if a is _ONE else a * other,
                                _ZERO)
        return super().__mul__(other)

    __rmul__ = __mul__

    def _compare(self, op: str, other: Any) -> bool:
        a = self._a
        if (type(other) is Fraction and self._b is _ZERO and a.numerator > 0
                and op in _ORDER_OPS):
            rng = self._rng
            rng.chooser.tick()
            return rng.compare_uniform(self._state, op, other if a is _ONE else other / a)
        return super()._compare(op, other)


def _split_odds(lo: Fraction, hi: Fraction, cut: Fraction) -> tuple[tuple[bool, Fraction], ...]:
    below = (cut - lo) / (hi - lo)
    return ((True, below), (False, 1 - below))


class StepRandom(ExactRandom):
    """:class:`~verifier.exact.random_source.ExactRandom` with the fast paths described above."""

    __slots__ = ()

    def random(self) -> LazyUniform:
        self._check_active()
        self.chooser.tick()
        self._uniforms += 1
        return _StepUniform(self, _UniformState(self._uniforms, self._scale), _ONE, _ZERO)

    def categorical(self, weights: Sequence[Any]) -> LazyToken:
        fast = _fast_weights(weights)
        if fast is None:
            return super().categorical(weights)
        self._check_active()
        self.chooser.tick()
        self._draws += 1
        return LazyToken(self, self._draws, fast[0], fast[1])

    def compare_uniform(self, state: Any, op: str, threshold: Fraction) -> bool:
        # Fast path: a continuous uniform still known to lie in one interval
        # [lo, hi), compared with <, <=, > or >= (every acceptance test).
        intervals = state.intervals
        if state.scale is not None or len(intervals) != 1 or op not in _ORDER_OPS:
            return super().compare_uniform(state, op, threshold)
        self._check_active()
        lo, hi = intervals[0]
        truth_below = op in ("<", "<=")
        if threshold <= lo:
            return not truth_below
        if threshold >= hi:
            return truth_below
        below: bool = self.chooser.choose(
            ("u", state.index, op, threshold),
            lambda: _split_odds(lo, hi, threshold),
            # The choice is whether u < threshold, whatever the operator asked.
            f"u{state.index} < {threshold}")
        state.intervals = [(lo, threshold)] if below else [(threshold, hi)]
        return truth_below if below else not truth_below

    def fix_token(self, token: LazyToken) -> int:
        self._check_active()
        self.chooser.tick()
        ids = token.candidates
        if ids is None:
            ids = tuple([i for i, w in enumerate(token.weights) if w])
        if len(ids) == 1:
            return ids[0]
        draw = token._draw
        value: int = self.chooser.choose(
            ("token", draw, len(token.weights), len(ids)), token.law,
            f"token of categorical draw #{draw}")
        token.narrow((value,))
        return value
