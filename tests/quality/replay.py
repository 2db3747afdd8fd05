"""A second, independent exact path for sampler, step and cross-vocabulary witnesses
(issue 25: no false FAIL).

A plain depth-first replay, written without any of specexact's random source: the
sampler is run once per leaf of its choice tree, each run following a recorded list of
decisions and taking the first option past it.

* ``categorical(w)`` branches on every index with ``w_i / sum(w)`` (zero weights left
  out); ``bernoulli(f)`` on True and False.
* ``random()`` is a uniform kept as an interval: continuous on [0, 1), or the grid
  ``k / 2^bits`` for ``k`` in a range of integers (``bits=24``: torch's float32
  ``rand``, 0 included).  Affine forms ``a * u + b`` of it are compared with numbers;
  a comparison that cuts the interval branches, weighted by the parts' lengths (by
  their counts on the grid: strict and non-strict comparisons differ there).

A step's decode (:func:`replay_step_law`) is composed here too: each call's law is
replayed the same way from every prefix the decode reaches, shortest prefixes first,
with models that are plain lookups in the witness's rows.

It knows only what the catalogue's samplers and steps use (``categorical``, ``bernoulli``,
``random``, affine arithmetic on a uniform and comparisons); anything else raises, so a
test using it on other code fails loudly instead of agreeing by accident.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any


class Unsupported(Exception):
    """The replay does not model what the sampler did."""


def _number(x: Any) -> Fraction:
    if isinstance(x, Affine):
        raise Unsupported("a comparison of two uniforms")
    if isinstance(x, bool) or not isinstance(x, int | float | Fraction):
        raise Unsupported(f"a uniform compared with {type(x).__name__}")
    return Fraction(x)


class Affine:
    """``a * u + b`` for the uniform number ``index`` of one run."""

    def __init__(self, rng: ReplayRandom, index: int, a: Fraction, b: Fraction) -> None:
        self._rng, self._index, self._a, self._b = rng, index, a, b

    def _with(self, a: Fraction, b: Fraction) -> Affine:
        return Affine(self._rng, self._index, a, b)

    def __mul__(self, c: Any) -> Affine:
        c = _number(c)
        return self._with(self._a * c, self._b * c)

    __rmul__ = __mul__

    def __truediv__(self, c: Any) -> Affine:
        return self * (1 / _number(c))

    def __add__(self, c: Any) -> Affine:
        return self._with(self._a, self._b + _number(c))

    __radd__ = __add__

    def __sub__(self, c: Any) -> Affine:
        return self + (-_number(c))

    def __rsub__(self, c: Any) -> Affine:
        return self._with(-self._a, _number(c) - self._b)

    def __neg__(self) -> Affine:
        return self._with(-self._a, -self._b)

    def _compare(self, x: Any, op: str) -> bool:
        a, b = self._a, self._b
        x = _number(x)
        if a == 0:
            return {"<": b < x, "<=": b <= x, ">": b > x, ">=": b >= x}[op]
        t = (x - b) / a
        if a < 0:  # a u + b < x  <=>  u > t
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
        return self._rng.compare(self._index, op, t)

    def __lt__(self, x: Any) -> bool:
        return self._compare(x, "<")

    def __le__(self, x: Any) -> bool:
        return self._compare(x, "<=")

    def __gt__(self, x: Any) -> bool:
        return self._compare(x, ">")

    def __ge__(self, x: Any) -> bool:
        return self._compare(x, ">=")

    def __bool__(self) -> bool:
        raise Unsupported("the truth value of a uniform")

    def __float__(self) -> float:
        raise Unsupported("a uniform turned into a float")


class ReplayRandom:
    """One run of the sampler along ``decisions`` (extended with first options)."""

    def __init__(self, decisions: list[int], bits: int | None) -> None:
        self.decisions = decisions
        self.options: list[int] = []  # how many options each decision had
        self.weight = Fraction(1)
        self._bits = bits
        self._intervals: list[tuple[Any, Any]] = []

    def _choose(self, options: Sequence[tuple[Any, Fraction]]) -> Any:
        position = len(self.options)
        if position == len(self.decisions):
            self.decisions.append(0)
        self.options.append(len(options))
        value, prob = options[self.decisions[position]]
        self.weight *= prob
        return value

    def categorical(self, weights: Sequence[Any]) -> int:
        ws = [Fraction(w) for w in weights]
        total = sum(ws, Fraction(0))
        if total <= 0 or any(w < 0 for w in ws):
            raise ValueError(f"categorical over {weights!r}")
        return int(self._choose([(i, w / total) for i, w in enumerate(ws) if w > 0]))

    def bernoulli(self, prob: Any) -> bool:
        f = Fraction(prob)
        return bool(self._choose([(v, w) for v, w in ((True, f), (False, 1 - f)) if w > 0]))

    def random(self) -> Affine:
        full = (Fraction(0), Fraction(1)) if self._bits is None else (0, 2 ** self._bits)
        self._intervals.append(full)
        return Affine(self, len(self._intervals) - 1, Fraction(1), Fraction(0))

    def compare(self, index: int, op: str, t: Fraction) -> bool:
        """Whether uniform ``index`` satisfies ``u op t``, branching where it cuts."""
        lo, hi = self._intervals[index]
        if self._bits is None:
            cut = min(max(t, lo), hi)
        else:
            n = 2 ** self._bits
            # k / n < t  <=>  k < ceil(t n);   k / n <= t  <=>  k < floor(t n) + 1
            edge = math.ceil(t * n) if op in ("<", ">=") else math.floor(t * n) + 1
            cut = min(max(edge, lo), hi)
        below, above = (lo, cut), (cut, hi)  # [lo, cut) below t, [cut, hi) above
        below_true = op in ("<", "<=")
        total = _length((lo, hi))
        parts = [(below_true, below), (not below_true, above)]
        options = [((truth, part), _length(part) / total) for truth, part in parts
                   if _length(part) > 0]
        truth, part = self._choose(options)
        self._intervals[index] = part
        return bool(truth)


def _length(part: tuple[Any, Any]) -> Fraction:
    """The measure of an interval of the uniform (a count of grid points on the grid)."""
    return Fraction(part[1] - part[0])


def replay_law(sampler: Callable[..., Any], p: Sequence[Fraction], q: Sequence[Fraction],
               bits: int | None = None) -> dict[Any, Fraction]:
    """The exact law of ``sampler(p, q, rng)``: uniforms continuous (``bits`` None) or on
    the grid ``k / 2^bits``."""
    law = _leaves(lambda rng: sampler(tuple(p), tuple(q), rng), bits)
    return {k: v for k, v in law.items() if v}


def _leaves(run: Callable[[ReplayRandom], Any], bits: int | None) -> dict[Any, Fraction]:
    """The law of ``run(rng)``'s outcome, one run per leaf of its choice tree."""
    law: dict[Any, Fraction] = {}
    stack: list[list[int]] = [[]]
    while stack:
        prefix = stack.pop()
        rng = ReplayRandom(list(prefix), bits)
        outcome = run(rng)
        for position in range(len(prefix), len(rng.options)):
            for other in range(1, rng.options[position]):
                stack.append([*rng.decisions[:position], other])
        law[outcome] = law.get(outcome, Fraction(0)) + rng.weight
    assert sum(law.values()) == 1
    return law


class Rows:
    """A model as a plain lookup: ``rows[prefix]``, else ``default``."""

    def __init__(self, default: Sequence[Fraction], rows: dict[tuple[int, ...], Any]) -> None:
        self._default = tuple(default)
        self._rows = {prefix: tuple(row) for prefix, row in rows.items()}

    def __call__(self, prefix: Sequence[Any]) -> tuple[Fraction, ...]:
        key = tuple(int(t) for t in prefix)
        return self._rows.get(key, self._default)


def spec_models(spec: Any) -> tuple[Rows, Rows]:
    """The target and draft a witness's ``ModelSpec`` describes, as plain lookups."""
    p, q = spec.default
    return (Rows(p, {pre: a for pre, a, _ in spec.overrides}),
            Rows(q, {pre: b for pre, _, b in spec.overrides}))


def _tokens_of(step_call: Callable[[ReplayRandom], Any], prefix: tuple[int, ...],
               bits: int | None) -> dict[tuple[int, ...], Fraction]:
    """The law of one call's emitted ids (a non-empty tuple of ints)."""
    def run(rng: ReplayRandom) -> tuple[int, ...]:
        tokens = tuple(int(t) for t in step_call(rng))
        assert tokens, f"the step emitted nothing at {prefix}"
        return tokens
    return _leaves(run, bits)


def _compose(call: Callable[[tuple[int, ...]], dict[tuple[int, ...], Fraction]],
             horizon: int,
             advance: Callable[[tuple[int, ...], tuple[int, ...]], tuple[int | None, Any]]
             ) -> dict[Any, Fraction]:
    """A decode's law, level by level from the empty prefix: ``advance(prefix, ids)``
    is ``(level, None)`` while it goes on at ``level`` (below ``horizon``), or
    ``(None, key)`` once it is finished under ``key``."""
    final: dict[Any, Fraction] = {}
    levels: list[dict[tuple[int, ...], Fraction]] = [{} for _ in range(horizon)]
    levels[0][()] = Fraction(1)
    for length in range(horizon):
        for prefix, mass in levels[length].items():
            for out, weight in call(prefix).items():
                ids = prefix + out
                level, key = advance(prefix, ids)
                if level is None:
                    final[key] = final.get(key, Fraction(0)) + mass * weight
                else:
                    levels[level][ids] = levels[level].get(ids, Fraction(0)) + mass * weight
    assert sum(final.values()) == 1
    return {k: v for k, v in final.items() if v}


def replay_step_law(step: Callable[..., Any], target: Rows, draft: Rows, horizon: int,
                    bits: int | None = None, processors: Any = None
                    ) -> dict[tuple[int, ...], Fraction]:
    """The exact joint law of the first ``horizon`` tokens of ``step`` decoding from the
    empty prefix (a sequence that stops first, under ``processors``, ends there)."""
    takes = processors is not None and "processors" in inspect.signature(step).parameters
    extra = {"processors": processors} if takes else {}  # a step ignoring them is as it is

    def advance(prefix: tuple[int, ...], ids: tuple[int, ...]) -> tuple[int | None, Any]:
        stopped = processors is not None and \
            processors.stop_length(ids, len(prefix)) is not None
        return (None, ids[:horizon]) if stopped or len(ids) >= horizon else (len(ids), None)

    return _compose(lambda prefix: _tokens_of(
        lambda rng: step(target, draft, prefix, rng, **extra), prefix, bits), horizon, advance)


def replay_crossvocab_law(step: Callable[..., Any], target: Any, draft: Any, horizon: int,
                          bits: int | None = None) -> dict[str, Fraction]:
    """The exact law of the first ``horizon`` characters of text a cross-vocabulary step's
    decode emits: ``step(target, draft, prefix_ids, rng)`` returns target ids; the decode
    goes on from every text shorter than ``horizon``, shortest texts first."""

    def advance(prefix: tuple[int, ...], ids: tuple[int, ...]) -> tuple[int | None, Any]:
        text = target.vocab.decode(ids)
        return (None, text[:horizon]) if len(text) >= horizon else (len(text), None)

    return _compose(lambda prefix: _tokens_of(
        lambda rng: step(target, draft, prefix, rng), prefix, bits), horizon, advance)


def target_sequence_law(target: Callable[[tuple[int, ...]], Sequence[Fraction]], horizon: int,
                        vocab_size: int) -> dict[tuple[int, ...], Fraction]:
    """The target's own joint law of ``horizon`` tokens: a product of its rows."""
    law = {(): Fraction(1)}
    for _ in range(horizon):
        law = {(*s, t): w * target(s)[t] for s, w in law.items() for t in range(vocab_size)}
    return {k: w for k, w in law.items() if w}
