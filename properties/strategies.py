"""Hypothesis strategies for exact distributions, p/q pairs, toy models and pipelines.

Every strategy builds distributions from small nonnegative integer weights,
normalised exactly, so shrinking the weights shrinks the denominators; the
vocabulary size is drawn first and shrinks towards the smallest allowed.
Small weights are tried before larger ones (``one_of`` shrinks towards its
first branch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from specexact.errors import InvalidArgument
from specexact.pipelines import Pipeline, sampling_pipeline
from specexact.validation import check_integer

__all__ = [
    "PAIR_FAMILIES",
    "TOKEN_RELATIONS",
    "distributions",
    "pair_family",
    "pipelines",
    "pq_pairs",
    "vocab_range",
]

Probs = tuple[Fraction, ...]

#: The kinds of (p, q) pair ``pq_pairs`` draws, simplest first (shrinking goes left).
PAIR_FAMILIES = ("independent", "equal", "zeros-in-q", "disjoint", "nearly-equal", "one-hot",
                 "masked", "relations")

#: The relation of p(i) to q(i) a token gets in the "relations" family, simplest first.
TOKEN_RELATIONS = ("tie", "above", "below", "p-only", "q-only", "neither")


def vocab_range(vocab_sizes: int | Sequence[int], *, name: str = "vocab_sizes"
                ) -> tuple[int, int]:
    """Read ``vocab_sizes`` (an int, or an inclusive ``(low, high)`` pair) as a range."""
    if isinstance(vocab_sizes, int) and not isinstance(vocab_sizes, bool):
        low = high = vocab_sizes
    else:
        try:
            low, high = vocab_sizes  # type: ignore[misc]
        except (TypeError, ValueError):
            msg = f"{name}={vocab_sizes!r} must be an int or an inclusive (low, high) pair"
            raise InvalidArgument(msg) from None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)) \
            or not 1 <= low <= high:
        msg = f"{name}={vocab_sizes!r} must satisfy 1 <= low <= high (integers)"
        raise InvalidArgument(msg)
    return low, high


def _check_weight(max_weight: int) -> None:
    check_integer(max_weight, "max_weight", min_value=1)


@functools.cache
def _weight(max_weight: int, *, positive: bool = False) -> st.SearchStrategy[int]:
    low = 1 if positive else 0
    small = st.integers(low, min(3, max_weight))
    return small if max_weight <= 3 else st.one_of(small, st.integers(low, max_weight))


def _normalise(weights: Sequence[int]) -> Probs:
    total = sum(weights)
    if total == 0:
        # All weights shrank to zero: the simplest distribution, one-hot at token 0.
        return tuple(Fraction(int(i == 0)) for i in range(len(weights)))
    return tuple(Fraction(w, total) for w in weights)


@functools.cache
def _weights(size: int, max_weight: int, *, positive: bool = False
             ) -> st.SearchStrategy[list[int]]:
    return st.lists(_weight(max_weight, positive=positive), min_size=size, max_size=size)


def distributions(*, vocab_sizes: int | Sequence[int] = (2, 4), max_weight: int = 12,
                  allow_zeros: bool = True) -> st.SearchStrategy[Probs]:
    """Exact distributions over vocabularies of the given sizes.

    Entries are ``w_i / sum(w)`` for integer weights in ``[0, max_weight]``
    (``[1, max_weight]`` when ``allow_zeros`` is False), so zeros and one-hot
    laws come up, and shrinking goes towards small vocabularies and small
    denominators.
    """
    low, high = vocab_range(vocab_sizes)
    _check_weight(max_weight)
    return st.integers(low, high).flatmap(
        lambda v: _weights(v, max_weight, positive=not allow_zeros).map(_normalise))


def _independent(v: int, w: int) -> st.SearchStrategy[tuple[Probs, Probs]]:
    return st.tuples(_weights(v, w).map(_normalise), _weights(v, w).map(_normalise))


def _equal(v: int, w: int) -> st.SearchStrategy[tuple[Probs, Probs]]:
    return _weights(v, w).map(_normalise).map(lambda p: (p, p))


@st.composite
def _zeros_in_q(draw: Any, v: int, w: int) -> tuple[Probs, Probs]:
    # p has full support; q misses at least one token p needs.
    p = _normalise(draw(_weights(v, w, positive=True)))
    holes = draw(st.integers(1, max(1, v - 1)))
    q_weights = draw(_weights(v, w, positive=True))
    for i in range(min(holes, v - 1)):
        q_weights[-1 - i] = 0
    return p, _normalise(q_weights)


@st.composite
def _disjoint(draw: Any, v: int, w: int) -> tuple[Probs, Probs]:
    cut = draw(st.integers(1, v - 1))
    p_weights = draw(_weights(v, w, positive=True))
    q_weights = draw(_weights(v, w, positive=True))
    p = [x if i < cut else 0 for i, x in enumerate(p_weights)]
    q = [x if i >= cut else 0 for i, x in enumerate(q_weights)]
    return _normalise(p), _normalise(q)


@st.composite
def _nearly_equal(draw: Any, v: int, w: int) -> tuple[Probs, Probs]:
    # q moves one unit of mass, at a finer resolution than p's, between two tokens.
    weights = draw(_weights(v, w, positive=True))
    scale = draw(st.integers(2, 12))
    src = draw(st.integers(0, v - 1))
    dst = draw(st.integers(0, v - 2))
    dst = dst if dst < src else dst + 1
    p = [x * scale for x in weights]
    q = list(p)
    q[src] -= 1
    q[dst] += 1
    return _normalise(p), _normalise(q)


@st.composite
def _one_hot(draw: Any, v: int, w: int) -> tuple[Probs, Probs]:
    i = draw(st.integers(0, v - 1))
    p_hot = tuple(Fraction(int(t == i)) for t in range(v))
    which = draw(st.sampled_from(("both", "p", "q")))
    if which == "both":
        j = draw(st.integers(0, v - 1))
        return p_hot, tuple(Fraction(int(t == j)) for t in range(v))
    other = _normalise(draw(_weights(v, w)))
    return (p_hot, other) if which == "p" else (other, p_hot)


@st.composite
def _masked(draw: Any, v: int, w: int) -> tuple[Probs, Probs]:
    """One mask applied to both rows (as one top-k or grammar mask on target and draft):
    p and q share a support smaller than V."""
    keep = draw(st.lists(st.booleans(), min_size=v, max_size=v))
    if all(keep) or not any(keep):  # the mask must cut something and keep something
        keep = [i != v - 1 for i in range(v)]
    p = [x if k else 0 for x, k in zip(draw(_weights(v, w, positive=True)), keep, strict=True)]
    q = [x if k else 0 for x, k in zip(draw(_weights(v, w, positive=True)), keep, strict=True)]
    return _normalise(p), _normalise(q)


@st.composite
def _relations(draw: Any, v: int, w: int) -> tuple[Probs, Probs]:
    """Each token gets its own relation of p(i) to q(i): tied, above, below, in one support only,
    or in neither.

    The patterns random rows almost never produce come up often here: a
    residual with many positive entries next to exactly one zero in q, p and
    q sharing a support smaller than V (one mask on both), ties p(i) = q(i)
    at some tokens only.  Sizes balance exactly: what p has above q at some
    tokens, q has above p at the others, so both rows share one total.
    """
    relations = draw(st.lists(st.sampled_from(TOKEN_RELATIONS), min_size=v, max_size=v))
    small = st.integers(1, min(3, w))
    gains = [draw(small) if r in ("above", "p-only") else 0 for r in relations]
    losses = [draw(small) if r in ("below", "q-only") else 0 for r in relations]
    up, down = sum(gains), sum(losses)
    if (up == 0) != (down == 0):  # mass cannot move one way only: those tokens become ties
        relations = ["tie" if g or lo else r for r, g, lo in zip(relations, gains, losses,
                                                                   strict=True)]
        gains, losses, up, down = [0] * v, [0] * v, 0, 0
    p: list[int] = []
    q: list[int] = []
    for r, gain, loss in zip(relations, gains, losses, strict=True):
        shared = draw(small) if r in ("tie", "above", "below") else 0
        p.append(shared + gain * down)
        q.append(shared + loss * up)
    if not any(p):  # every token in neither support: the simplest pair there is
        p[0] = q[0] = 1
    return _normalise(p), _normalise(q)


# Cached: building strategies afresh inside every draw dominates the search's cost.
_BUILDERS: dict[str, Callable[[int, int], st.SearchStrategy[tuple[Probs, Probs]]]] = {
    name: functools.cache(builder) for name, builder in (
        ("independent", _independent),
        ("equal", _equal),
        ("zeros-in-q", _zeros_in_q),
        ("disjoint", _disjoint),
        ("nearly-equal", _nearly_equal),
        ("one-hot", _one_hot),
        ("masked", _masked),
        ("relations", _relations),
    )
}


def pair_family(family: str, vocab_size: int, max_weight: int
                ) -> st.SearchStrategy[tuple[Probs, Probs]]:
    """The (p, q) pairs of one of ``PAIR_FAMILIES`` at one vocabulary size (cached)."""
    return _BUILDERS[family](vocab_size, max_weight)


def pq_pairs(*, vocab_sizes: int | Sequence[int] = (2, 4), max_weight: int = 12,
             families: Sequence[str] = PAIR_FAMILIES) -> st.SearchStrategy[tuple[Probs, Probs]]:
    """Exact (p, q) pairs over one vocabulary, drawn from the named ``families``.

    Families: independent laws, p = q, q with zeros where p > 0, disjoint
    supports, nearly equal pairs (one unit of mass moved at a finer
    resolution), one-hot pairs, one mask applied to both rows (a shared
    support smaller than V), and per-token relations (each token tied,
    above, below, in one support or in neither: many-entry residuals next to
    one zero, shared supports smaller than V, partial ties).  Vocabulary 1 only allows p = q = (1,).
    """
    low, high = vocab_range(vocab_sizes)
    _check_weight(max_weight)
    unknown = [f for f in families if f not in PAIR_FAMILIES]
    if unknown or not families:
        msg = f"families={tuple(families)!r} must be a non-empty subset of {PAIR_FAMILIES}"
        raise InvalidArgument(msg)

    return _pairs(low, high, tuple(families), max_weight)


@st.composite
def _pairs(draw: Any, low: int, high: int, families: tuple[str, ...], max_weight: int
           ) -> tuple[Probs, Probs]:
    # A composite rather than flatmaps: the same shrinking order, a fraction of the cost.
    v = draw(st.integers(low, high))
    if v == 1:
        return (Fraction(1),), (Fraction(1),)
    family = draw(st.sampled_from(families))
    pair: tuple[Probs, Probs] = draw(_BUILDERS[family](v, max_weight))
    return pair


@st.composite
def pipelines(draw: Any, *, vocab_size: int = 4) -> Pipeline:
    """Sampling pipelines: temperature 1/m (m <= 3), top-k, top-p, min-p, in any order."""
    stages = ["temperature", "top_k", "top_p", "min_p"]
    order = draw(st.permutations(stages))
    fraction = st.builds(Fraction, st.integers(1, 9), st.just(10))
    return sampling_pipeline(
        temperature_m=draw(st.integers(1, 3)),
        top_k=draw(st.none() | st.integers(1, max(1, vocab_size))),
        top_p=draw(st.none() | fraction),
        min_p=draw(st.none() | fraction),
        top_p_rule=draw(st.sampled_from(("engine", "nucleus"))),
        order=order,
    )
