"""Hand-picked (p, q) pairs every search tries before Hypothesis takes over.

They cover the reference sheet's worked examples and the families where
real bugs hide: p = q exactly, zeros in q where p > 0, disjoint supports,
one-hot laws, vocabulary 3 (the smallest where a residual can have two
positive entries), and differences of 2^-10, 2^-20 and 2^-30 (tolerances
computed at run time, casts to a lower precision), and rows that round to
p <= q in a float format (the residual an engine computes in that format is
all zero, though exact arithmetic has one).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from specexact.properties.constants import constant_pairs

__all__ = ["BLOCK_FAMILIES", "BLOCK_VOCAB_SIZES", "EDGE_FAMILIES", "block_edge_cases",
           "sampler_edge_cases"]

Probs = tuple[Fraction, ...]

#: What the edge cases cover, for the search's "covered" sentence.
EDGE_FAMILIES = ("reference-sheet examples", "p = q", "zeros in q", "disjoint supports",
                 "one-hot", "vocabulary 3", "fine differences (2^-10, 2^-20, 2^-30)",
                 "rows that round to p <= q (bfloat16, float16, float32, float64)")

#: Differences far below any small denominator: a tolerance the code computes at run
#: time (``1 / (16 * V**4)``, ``float.fromhex(...)``) or a cast to a lower precision
#: shows on them.
_FINE = (Fraction(1, 2**10), Fraction(1, 2**20), Fraction(1, 2**30))


def _f(*values: str) -> Probs:
    return tuple(Fraction(v) for v in values)


# The reference sheet's examples, then small cases of each family.
_SHEET: tuple[tuple[Probs, Probs], ...] = (
    (_f("1/5", "1/2", "3/10"), _f("1/2", "3/10", "1/5")),
    (_f("1/2", "3/10", "1/5"), _f("9/10", "1/20", "1/20")),
    (_f("1/3", "2/3"), _f("2/3", "1/3")),
    (_f("0", "1/4", "3/4"), _f("1/2", "0", "1/2")),
    (_f("1/4", "1/4", "1/2"), _f("0", "3/4", "1/4")),
)


def _uniform(v: int) -> Probs:
    return tuple(Fraction(1, v) for _ in range(v))


def _ramp(v: int) -> Probs:
    total = v * (v + 1) // 2
    return tuple(Fraction(i + 1, total) for i in range(v))


def _hot(v: int, i: int) -> Probs:
    return tuple(Fraction(int(t == i)) for t in range(v))


def _family_cases(v: int) -> list[tuple[Probs, Probs]]:
    ramp, uniform = _ramp(v), _uniform(v)
    cases: list[tuple[Probs, Probs]] = []
    if v == 1:
        return [(_hot(1, 0), _hot(1, 0))]
    # p = q exactly: uniform, skewed and one-hot.
    cases += [(uniform, uniform), (ramp, ramp), (_hot(v, 0), _hot(v, 0))]
    # zeros in q where p > 0.
    cases.append((uniform, _hot(v, 0)))
    cases.append((ramp, _normalise([0, *[1] * (v - 1)])))
    # disjoint supports.
    half = v // 2
    cases.append((_normalise([1] * half + [0] * (v - half)),
                  _normalise([0] * half + [1] * (v - half))))
    cases.append((_hot(v, v - 1), _hot(v, 0)))
    # one-hot against a spread law, both ways.
    cases.append((_hot(v, 0), uniform))
    cases.append((ramp[::-1], ramp))
    return cases


def _fine_cases() -> list[tuple[Probs, Probs]]:
    """At two tokens, for each fine difference s: a total variation of s, p nearly
    one-hot against a uniform q, and q nearly one-hot against a uniform p."""
    half = Fraction(1, 2)
    cases: list[tuple[Probs, Probs]] = []
    for s in _FINE:
        cases += [((half, half), (half + s, half - s)),
                  ((1 - s, s), (half, half)),
                  ((half, half), (1 - s, s))]
    return cases


#: Below 1/4, one ulp of bfloat16, float16, float32 and float64.
_ULPS_BELOW_A_QUARTER = (Fraction(1, 2**10), Fraction(1, 2**13), Fraction(1, 2**26),
                         Fraction(1, 2**55))


def _rounding_cases() -> list[tuple[Probs, Probs]]:
    """At three tokens, for each float format: q = (1/2, 1/4, 1/4) and p the row
    (1/2, 1/4, 1/4 - ulp) normalised.  Exactly, p > q at tokens 0 and 1 (a positive
    residual); stored in the format, p rounds back to (1/2, 1/4, 1/4 - ulp) <= q
    everywhere, so the residual the format computes is all zero while a rejection
    still has positive probability (0/0, or a floor that makes it uniform)."""
    q = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))
    cases: list[tuple[Probs, Probs]] = []
    for ulp in _ULPS_BELOW_A_QUARTER:
        flat = (q[0], q[1], q[2] - ulp)
        total = sum(flat, Fraction(0))
        cases.append((tuple(x / total for x in flat), q))
    return cases


def _normalise(weights: list[int]) -> Probs:
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


def sampler_edge_cases(low: int, high: int, constants: Sequence[Fraction] = ()
                       ) -> list[tuple[Probs, Probs]]:
    """The edge cases whose vocabulary lies in ``[low, high]``, without repeats.

    Vocabulary 3 is always included when the range reaches it, and the
    sheet's examples come first; pairs at the code's ``constants``
    (:func:`specexact.properties.constants.constant_pairs`) come last.
    """
    seen: set[tuple[Probs, Probs]] = set()
    out: list[tuple[Probs, Probs]] = []
    candidates = list(_SHEET)
    for v in range(low, min(high, 5) + 1):
        candidates += _family_cases(v)
    candidates += _fine_cases()
    candidates += _rounding_cases()
    candidates += constant_pairs(constants, low, high)
    for case in candidates:
        if low <= len(case[0]) <= high and case not in seen:
            seen.add(case)
            out.append(case)
    return out


# --------------------------------------------------------------------------
# Large vocabularies with aligned blocks
# --------------------------------------------------------------------------

#: The larger vocabularies a default sampler search judges after the small ones.
BLOCK_VOCAB_SIZES = (8, 16, 64)

#: What the block-structured cases cover, for the coverage sentence.
BLOCK_FAMILIES = ("irregular rows over every aligned block (2, 4, ..., V/2)", "p = q",
                  "zeros in q inside and across blocks", "disjoint supports across blocks",
                  "mass on one block")


#: Up to this size every block-structured family is tried; beyond, four of them.
_FULL_BLOCK_SIZE = 16


def _irregular(v: int, a: int, b: int, m: int) -> list[int]:
    """Weights ``1 + (a*i + b) mod m``: no two aligned blocks of any size share a total
    or a shape (for the ``a``, ``b``, ``m`` used here), so a per-block combination that
    is wrong shows."""
    return [1 + (a * i + b) % m for i in range(v)]


def block_edge_cases(sizes: Sequence[int] = BLOCK_VOCAB_SIZES) -> list[tuple[Probs, Probs]]:
    """Structured pairs at each vocabulary size of ``sizes`` (powers of two), smallest first.

    Engines shard the vocabulary (tensor parallelism, per-block kernels) and combine
    per-shard results: a combination that is wrong shows only when the residual, the
    acceptance mass or the support spans several shards with unequal totals.  The rows
    here put mass over every aligned block of size 2, 4, ..., V/2 with unequal block
    totals, and place the edge cases of the small search (p = q, zeros in q, disjoint
    supports) inside a block and across blocks.
    """
    out: list[tuple[Probs, Probs]] = []
    seen: set[tuple[Probs, Probs]] = set()
    for v in sizes:
        p = _irregular(v, 3, 1, 7)
        q = _irregular(v, 5, 2, 6)
        cases = [
            (p, q),                                                     # residual everywhere
            (p, p),                                                     # p = q
            (p, [w if i % 4 != 3 else 0 for i, w in enumerate(q)]),     # a zero in each block
            (p, [w if i < v // 2 else 0 for i, w in enumerate(q)]),     # q on half the blocks
            ([w if (i // 2) % 2 == 0 else 0 for i, w in enumerate(p)],  # disjoint, block 2
             [w if (i // 2) % 2 == 1 else 0 for i, w in enumerate(q)]),
            ([w if i < v // 2 else 0 for i, w in enumerate(p)],         # disjoint halves
             [w if i >= v // 2 else 0 for i, w in enumerate(q)]),
            ([w if v // 4 <= i < v // 2 else 0 for i, w in enumerate(p)], q),  # p on one block
        ]
        if v > _FULL_BLOCK_SIZE:
            # The largest size costs the most (V^2 executions for a textbook rule, more
            # for several drafts): the cases that span every block, p = q among them.
            cases = cases[:3] + cases[4:5]
        for wp, wq in cases:
            case = (_normalise(wp), _normalise(wq))
            if case not in seen:
                seen.add(case)
                out.append(case)
    return out
