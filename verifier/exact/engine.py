"""Choice-tree enumeration -> exact law of whatever the code under test returns."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from specexact.distribution import Distribution, InvalidToken
from specexact.exact.enumerator import enumerate_outcomes
from specexact.exact.random_source import ExactRandom, LazyToken, LazyUniform, ValidatedRow
from specexact.exact.tree import Budget, Chooser
from specexact.numbers import as_distribution, check_same_vocabulary

__all__ = ["enumerate_law", "output_distribution"]

Sampler = Callable[[list[Fraction], list[Fraction], Any], Any]


def _normal(value: Any) -> Any:
    """A returned value as an outcome: ints (and numpy integers) stay tokens, tuples and
    lists become tuples, unfixed lazy tokens stay (to be folded), anything else becomes
    an :class:`InvalidToken`."""
    if type(value) is int or isinstance(value, (LazyToken, InvalidToken)):
        return value
    if isinstance(value, (tuple, list)):
        return tuple([_normal(v) for v in value])
    if isinstance(value, (bool, LazyUniform)) or type(value).__name__ == "bool_":
        return InvalidToken(value)
    try:
        return operator.index(value)
    except Exception:
        return InvalidToken(value)


def _normalise(value: Any, weight: Any, chooser: Chooser) -> Any:
    return _normal(value)


def enumerate_law(run: Callable[[ExactRandom], Any], *, budget: Budget | None = None,
                  uniform_bits: int | None = None,
                  context: dict[str, Any] | None = None) -> Distribution:
    """Exact law of ``run(rng)`` over every execution of the choice tree.

    ``run`` receives an :class:`ExactRandom`.  Returned values are
    normalised: ints (and numpy integers) stay tokens, tuples and lists become
    tuples, lazy tokens are folded in without branching, anything else becomes
    an :class:`InvalidToken`.  ``context`` (for example ``{"p": p, "q": q}``)
    is attached to the error if the code raises.
    """
    law = enumerate_outcomes(run, normalise=_normalise, budget=budget,
                             uniform_bits=uniform_bits, context=context)
    return Distribution(law)


def output_distribution(sampler: Sampler, p: Sequence[Any], q: Sequence[Any], *,
                        uniform_bits: int | None = None,
                        budget: Budget | None = None) -> Distribution:
    """The exact law of ``sampler(p, q, rng)``.

    ``p`` and ``q`` are validated (same nonzero length, nonnegative, summing
    to exactly 1) and handed to each execution as fresh lists of Fractions.

    >>> from fractions import Fraction as F
    >>> def naive(p, q, rng):
    ...     x = rng.categorical(q)
    ...     if rng.random() * q[x] < p[x]:
    ...         return x
    ...     return rng.categorical(p)
    >>> output_distribution(naive, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
    Distribution({0: 13/50, 1: 9/20, 2: 29/100})
    """
    pf = as_distribution(p, name="p")
    qf = as_distribution(q, name="q")
    check_same_vocabulary(pf, qf)
    # Each execution gets fresh lists; while the code leaves them untouched the
    # random source knows them to be distributions and skips re-validating them.
    return enumerate_law(lambda rng: sampler(ValidatedRow(pf), ValidatedRow(qf), rng),
                         budget=budget,
                         uniform_bits=uniform_bits, context={"p": pf, "q": qf})
