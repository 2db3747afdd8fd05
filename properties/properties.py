"""The properties the search checks, as plain exact predicates.

Each takes exact inputs and returns a bool (or an exact number), so it can
be used directly in a Hypothesis test:

>>> from specexact.counterexamples.samplers import textbook
>>> preserves_target(textbook, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
True
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from specexact.distribution import Distribution, total_variation
from specexact.exact.engine import enumerate_law
from specexact.exact.tree import Budget
from specexact.exact.verdict import check_sampler
from specexact.numbers import ZERO, as_distribution
from specexact.steps.efficiency import (
    acceptance_upper_bound,
    draft_law_iid,
    iid_acceptance,
    iid_expected_tokens,
)
from specexact.steps.verdict import check_step

__all__ = [
    "acceptance_is_one_minus_tv",
    "efficiency_bounds_hold",
    "is_distribution_over_vocabulary",
    "multidraft_acceptance",
    "multidraft_acceptance_within_bound",
    "no_mass_where_target_is_zero",
    "preserves_joint_law",
    "preserves_target",
    "textbook_acceptance",
]


def preserves_target(sampler: Any, p: Sequence[Any], q: Sequence[Any], *,
                     uniform_bits: int | None = None, budget: Budget | None = None) -> bool:
    """True iff the exact law of ``sampler(p, q, rng)`` is p (single position)."""
    return check_sampler(sampler, p, q, uniform_bits=uniform_bits, budget=budget).passed


def preserves_joint_law(step: Any, target: Any, draft: Any, horizon: int, *,
                        budget: Budget | None = None) -> bool:
    """True iff the step's joint law of ``horizon`` tokens is the target's (caches in step)."""
    return check_step(step, target, draft, horizon, budget=budget).passed


def _valid(outcome: Hashable, vocab_size: int) -> bool:
    if isinstance(outcome, tuple):
        return all(_valid(o, vocab_size) for o in outcome)
    return type(outcome) is int and 0 <= outcome < vocab_size


def is_distribution_over_vocabulary(law: Mapping[Hashable, Any], vocab_size: int) -> bool:
    """Every outcome is a token id in ``range(vocab_size)`` (or a tuple of them), mass 1."""
    total = sum((Fraction(v) for v in law.values()), ZERO)
    return total == 1 and all(_valid(o, vocab_size) and law[o] >= 0 for o in law)


def no_mass_where_target_is_zero(law: Mapping[Hashable, Any], p: Sequence[Any]) -> bool:
    """The law puts no mass on a token with p = 0."""
    pf = as_distribution(p, name="p")
    return all(not (isinstance(o, int) and 0 <= o < len(pf) and pf[o] == 0 and law[o])
               for o in law)


def textbook_acceptance(p: Sequence[Any], q: Sequence[Any]) -> Fraction:
    """The exact probability that the textbook rule accepts its draft, by enumeration."""
    pf, qf = as_distribution(p, name="p"), as_distribution(q, name="q")

    def run(rng: Any) -> int:
        x = rng.categorical(qf)
        return 1 if rng.random() * qf[x] < pf[x] else 0

    return Distribution(enumerate_law(run)).prob(1)


def acceptance_is_one_minus_tv(p: Sequence[Any], q: Sequence[Any]) -> bool:
    """The textbook acceptance equals sum min(p, q) and 1 - TV(p, q), exactly."""
    pf, qf = as_distribution(p, name="p"), as_distribution(q, name="q")
    accepted = textbook_acceptance(pf, qf)
    tv = total_variation(Distribution.from_probabilities(pf), Distribution.from_probabilities(qf))
    return accepted == 1 - tv == iid_acceptance(pf, qf)


def multidraft_acceptance(p: Sequence[Any], q: Sequence[Any], k: int) -> Fraction:
    """The exact probability that SpecInfer multi-round accepts one of k i.i.d. drafts."""
    pf, qf = as_distribution(p, name="p"), as_distribution(q, name="q")

    def run(rng: Any) -> int:
        r = list(pf)
        for _ in range(k):
            x = rng.categorical(qf)
            if rng.random() * qf[x] < r[x]:
                return 1
            rest = [max(a - b, ZERO) for a, b in zip(r, qf, strict=True)]
            total = sum(rest, ZERO)
            r = [w / total for w in rest]
        return 0

    return Distribution(enumerate_law(run)).prob(1)


def multidraft_acceptance_within_bound(p: Sequence[Any], q: Sequence[Any], k: int) -> bool:
    """Multi-round acceptance never beats min over H of [p(not H) + P(some draft in H)],
    and for one draft the bound is sum min(p, q), attained."""
    bound = acceptance_upper_bound(p, draft_law_iid(q, k))
    accepted = multidraft_acceptance(p, q, k)
    if k == 1:
        return accepted == bound == iid_acceptance(p, q)
    return accepted <= bound


def efficiency_bounds_hold(alpha: Any, gamma: int) -> bool:
    """1 <= (1 - alpha^(gamma+1)) / (1 - alpha) <= gamma + 1, with the ends at alpha 0 and 1."""
    tokens = iid_expected_tokens(alpha, gamma)
    a = Fraction(alpha)
    ends_ok = (a != 0 or tokens == 1) and (a != 1 or tokens == gamma + 1)
    return 1 <= tokens <= gamma + 1 and ends_ok
