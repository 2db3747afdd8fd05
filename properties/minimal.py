"""Exactly minimal sampler witnesses: smallest vocabulary, then smallest largest denominator.

Greedy shrinking (:func:`specexact.properties.search.shrink_pair`) gives a small
witness, not a minimal one.  :func:`minimise_pair` then enumerates, in
order, every (p, q) over a smaller vocabulary whose entries have
denominators up to the witness's largest, and every pair over the
witness's vocabulary with a smaller largest denominator; the first failing
pair in (vocabulary size, largest denominator, common denominator,
numerators) order replaces the witness.  When every enumeration it needs
fits the check budget it says what is proven:

* the witness's vocabulary is the smallest audited size and no pair there
  with a smaller largest denominator fails: **proven minimal** (in the
  audited range);
* otherwise, no smaller vocabulary fails with denominators up to the
  witness's, and no pair of its size with a smaller largest denominator
  does: minimal in its denominator, with the bound on the rest stated.

A budget the enumeration would exceed leaves the greedy witness, and the
report says it is not proven minimal.  The count of candidates is known
before any check runs, so the outcome never depends on time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

__all__ = ["MAX_MINIMAL_CHECKS", "Minimality", "farey", "minimise_pair", "rows_with_denominators"]

Probs = tuple[Fraction, ...]
Pair = tuple[Probs, Probs]

#: Exact checks :func:`minimise_pair` may spend; beyond it the witness stays greedy.
MAX_MINIMAL_CHECKS = 1500
# Largest denominator the enumeration considers at all (larger: not attempted).
_MAX_DENOMINATOR = 24


@final
@dataclass(frozen=True)
class Minimality:
    """What is known about a witness's minimality, in words and as flags."""

    proven: bool
    text: str
    checked: int

    def __str__(self) -> str:
        return self.text


def farey(d: int) -> list[Fraction]:
    """The fractions in [0, 1] with denominator at most ``d``, in increasing order."""
    return sorted({Fraction(a, b) for b in range(1, d + 1) for a in range(b + 1)})


def _rows(v: int, values: list[Fraction], allowed: frozenset[Fraction], rest: Fraction
          ) -> Iterator[Probs]:
    if v == 1:
        if rest in allowed:
            yield (rest,)
        return
    for x in values:
        if x > rest:
            break
        for tail in _rows(v - 1, values, allowed, rest - x):
            yield (x, *tail)


def rows_with_denominators(v: int, d: int, *, limit: int | None = None) -> list[Probs] | None:
    """Every distribution over ``v`` tokens whose entries have denominators <= ``d``.

    None when there are more than ``limit`` of them (the enumeration stops early).
    """
    values = farey(d)
    out: list[Probs] = []
    for row in _rows(v, values, frozenset(values), Fraction(1)):
        out.append(row)
        if limit is not None and len(out) > limit:
            return None
    return out


def largest_denominator(pair: Pair) -> int:
    return max(x.denominator for x in (*pair[0], *pair[1]))


def _key(pair: Pair) -> tuple[Any, ...]:
    p, q = pair
    dens = [x.denominator for x in (*p, *q)]
    return (len(p), max(dens), math.lcm(*dens), sum(x.numerator for x in (*p, *q)), p, q)


def _candidates(v: int, d: int, limit: int) -> list[Pair] | None:
    """Pairs over ``v`` tokens with denominators <= ``d``, in minimality order; None when
    there are more than ``limit``."""
    rows = rows_with_denominators(v, d, limit=math.isqrt(max(limit, 0)) + 1)
    if rows is None or len(rows) ** 2 > limit:
        return None
    return sorted(((p, q) for p in rows for q in rows), key=_key)


def minimise_pair(pair: Pair, fails: Callable[[Pair], Any], *, low: int,
                  max_checks: int = MAX_MINIMAL_CHECKS) -> tuple[Pair, Minimality | None]:
    """The minimal failing pair the enumeration can reach from ``pair``, and what is proven.

    ``fails(candidate)`` is truthy when the candidate still fails; ``low`` is
    the smallest vocabulary size audited.  Returns ``(pair, None)`` when the
    witness is not exact (rows not summing to 1) or too large to enumerate.
    """
    p, q = pair
    if sum(p, Fraction(0)) != 1 or sum(q, Fraction(0)) != 1:
        return pair, None
    size, d = len(p), largest_denominator(pair)
    if d > _MAX_DENOMINATOR:
        return pair, None
    budget = max_checks
    plan: list[list[Pair]] = []
    for v in range(max(low, 1), size):
        pairs = _candidates(v, d, budget)
        if pairs is None:
            return pair, None
        budget -= len(pairs)
        plan.append(pairs)
    same = _candidates(size, d - 1, budget) if d > 1 else []
    if same is None:
        return pair, None
    plan.append(same)
    checked = 0
    for pairs in plan:
        for candidate in pairs:
            checked += 1
            if fails(candidate):
                return candidate, _words(candidate, low, d, checked, smaller_found=True)
    return pair, _words(pair, low, d, checked, smaller_found=False)


def _words(pair: Pair, low: int, d: int, checked: int, *, smaller_found: bool) -> Minimality:
    size, mine = len(pair[0]), largest_denominator(pair)
    where = f"V = {size} with largest denominator {mine}"
    if size == max(low, 1) and mine == 1:
        return Minimality(True, f"proven minimal: one-hot rows at V = {size}, the smallest "
                                "size audited", checked)
    if size == max(low, 1):
        return Minimality(True, f"proven minimal: {where}; V = {size} is the smallest size "
                                f"audited and every pair there with a smaller largest "
                                f"denominator passes ({checked} exact pairs checked)", checked)
    return Minimality(False, f"minimal in its denominator: {where}; every pair of size "
                             f"{size} with a smaller largest denominator passes, and so does "
                             f"every pair of sizes {max(low, 1)}..{size - 1} with denominators "
                             f"up to {d} ({checked} exact pairs checked); larger denominators "
                             "at smaller sizes are not ruled out", checked)
