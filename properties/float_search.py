"""Searching float code for counterexamples: the sampler search with float-mode verdicts.

Each case is judged by :func:`specexact.floats.check.check_floats`, which
splits a deviation into rounding (passes, reported) and structure (fails);
the cases, the Hypothesis search and the shrinking are those of
:func:`specexact.properties.search_sampler`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import settings as Settings

from specexact.exact.tree import Budget
from specexact.floats.check import FloatVerdict, check_float_options, check_floats
from specexact.properties.constants import code_constants
from specexact.properties.float_hazards import (
    FLOAT_HAZARDS,
    float_hazard_edge_cases,
    float_hazard_pairs,
)
from specexact.properties.runner import Progress, SearchResult, rule_key
from specexact.properties.search import DEFAULT_SAMPLER_VOCAB_SIZES, Pair, pair_search
from specexact.properties.strategies import vocab_range

__all__ = ["DEFAULT_FLOAT_EXAMPLES", "search_floats"]

DEFAULT_FLOAT_EXAMPLES = 100


def search_floats(sampler: Any, *, fmt: str | None = "float64", arrays: bool = False,
                  uniform_bits: int | None = None,
                  vocab_sizes: int | Sequence[int] = DEFAULT_SAMPLER_VOCAB_SIZES,
                  examples: int = DEFAULT_FLOAT_EXAMPLES, seed: int = 0,
                  budget: Budget | None = None, settings: Settings | None = None,
                  progress: Progress | None = None) -> SearchResult:
    """Search for an exact (p, q) on which float code ``sampler`` deviates beyond rounding.

    ``fmt`` (``"float64"``, ``"float32"``, or None for exact inputs) and
    ``arrays`` (numpy arrays instead of Python floats) say what the sampler
    is handed; ``uniform_bits=K`` draws ``rng.random()`` from the K-bit grid
    (with ``fmt=None``: the grid mode).  The verdict of a failure is a
    :class:`~specexact.floats.check.FloatVerdict`; other options as for
    :func:`specexact.properties.search_sampler`.

    >>> def naive(p, q, rng):
    ...     x = rng.categorical(q)
    ...     return x if rng.random() < p[x] / q[x] else rng.categorical(p)
    >>> result = search_floats(naive, examples=0)
    >>> result.status, result.verdict.severity
    ('fail', 'structural')
    """
    check_float_options(fmt, arrays, uniform_bits)
    low, high = vocab_range(vocab_sizes)

    def check(pair: Pair) -> FloatVerdict:
        return check_floats(sampler, pair[0], pair[1], fmt=fmt, arrays=arrays,
                            uniform_bits=uniform_bits, budget=budget)

    # Float rows are where rounding hazards live: rows summing to 1 only up to
    # rounding, p <= q everywhere after rounding, tiny residuals, subnormals.
    extra = None if fmt is None else (
        float_hazard_edge_cases(low, high, fmt),
        float_hazard_pairs(vocab_sizes=(low, high), fmt=fmt),
        "float rounding hazards (" + ", ".join(FLOAT_HAZARDS) + ")")
    return pair_search(check, low=low, high=high, examples=examples, seed=seed,
                       settings=settings, progress=progress, score=None, extra=extra,
                       key=rule_key(sampler, f"floats {fmt} {arrays} {low}-{high} "
                                             f"{uniform_bits}"),
                       constants=code_constants(sampler))
