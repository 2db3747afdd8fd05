"""How much a step buys, exactly: tokens per target call, acceptance, bounds.

One call of a step is one target pass, so the expected number of tokens a
step emits is the expected number of tokens per target call.  For rules that
close each step with one token of their own (a replacement or a bonus), the
number of accepted drafts is that length minus one.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

from specexact.distribution import Distribution
from specexact.errors import InvalidArgument
from specexact.exact.tree import Budget
from specexact.numbers import ONE, ZERO, as_distribution
from specexact.steps.decode import Step, step_law
from specexact.validation import check_integer

__all__ = [
    "StepEfficiency",
    "acceptance_upper_bound",
    "draft_law_iid",
    "draft_law_without_replacement",
    "iid_acceptance",
    "iid_expected_tokens",
    "step_efficiency",
]


@final
@dataclass(frozen=True)
class StepEfficiency:
    """The exact efficiency of one step call at one prefix.

    ``emitted``: law of the number of tokens the call emits (tokens per
    target call); ``accepted``: law of the accepted drafts (emitted - 1);
    ``reach[i]``: P(at least i + 1 drafts accepted); ``acceptance[i]``: the
    acceptance rate at position i + 1, P(accepted >= i + 1 | accepted >= i).
    """

    emitted: Distribution
    accepted: Distribution

    @property
    def expected_tokens(self) -> Fraction:
        """Expected tokens per target call."""
        return self.emitted.mean()

    @property
    def expected_accepted(self) -> Fraction:
        return self.accepted.mean()

    @property
    def reach(self) -> tuple[Fraction, ...]:
        lengths = {int(k): v for k, v in self.accepted.items()}  # type: ignore[call-overload]
        return tuple(sum((v for k, v in lengths.items() if k >= i), ZERO)
                     for i in range(1, max(lengths, default=0) + 1))

    @property
    def acceptance(self) -> tuple[Fraction, ...]:
        rates = []
        before = ONE
        for here in self.reach:
            rates.append(here / before if before else ZERO)
            before = here
        return tuple(rates)


def step_efficiency(step: Step, target: Any, draft: Any, prefix: Sequence[int] = (), *,
                    budget: Budget | None = None,
                    uniform_bits: int | None = None) -> StepEfficiency:
    """Exact tokens per target call, acceptance per position and accepted-length law.

    >>> from specexact.steps.models import ContextFreeModel
    >>> def plain(target, draft, prefix, rng):
    ...     return (rng.categorical(target(prefix)),)
    >>> step_efficiency(plain, ContextFreeModel(["1/2", "1/2"]), None).expected_tokens
    Fraction(1, 1)
    """
    law = step_law(step, target, draft if draft is not None else target, tuple(prefix),
                   budget=budget, uniform_bits=uniform_bits)
    emitted = law.map(len)
    return StepEfficiency(emitted, emitted.map(lambda n: n - 1))


def iid_acceptance(p: Sequence[Any], q: Sequence[Any]) -> Fraction:
    """alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q), the one-draft acceptance rate."""
    pf, qf = as_distribution(p, name="p"), as_distribution(q, name="q")
    return sum((min(a, b) for a, b in zip(pf, qf, strict=True)), ZERO)


def iid_expected_tokens(alpha: Any, gamma: int) -> Fraction:
    """The paper's (1 - alpha^(gamma+1)) / (1 - alpha): tokens per target call when
    each of gamma drafts is accepted independently with probability alpha."""
    a = Fraction(alpha)
    if not 0 <= a <= 1:
        msg = f"alpha={a} must lie in [0, 1]"
        raise InvalidArgument(msg)
    gamma = check_integer(gamma, "gamma", min_value=0)
    if a == 1:
        return Fraction(gamma + 1)
    return (1 - a ** (gamma + 1)) / (1 - a)


def draft_law_iid(q: Sequence[Any], k: int) -> Distribution:
    """The joint law of k i.i.d. drafts from q, over k-tuples."""
    qf = as_distribution(q, name="q")
    support = [i for i, w in enumerate(qf) if w]
    out: dict[Hashable, Fraction] = {}
    for combo in itertools.product(support, repeat=k):
        prob = ONE
        for i in combo:
            prob *= qf[i]
        out[combo] = prob
    return Distribution(out)


def draft_law_without_replacement(q: Sequence[Any], k: int) -> Distribution:
    """The joint law of k drafts drawn from q without replacement (k <= |support of q|)."""
    qf = as_distribution(q, name="q")
    support = [i for i, w in enumerate(qf) if w]
    if k > len(support):
        msg = f"k={k} drafts without replacement need k <= {len(support)} tokens with q > 0"
        raise InvalidArgument(msg)
    out: dict[Hashable, Fraction] = {}
    for combo in itertools.permutations(support, k):
        prob, left = ONE, ONE
        for i in combo:
            prob *= qf[i] / left
            left -= qf[i]
        out[combo] = prob
    return Distribution(out)


def acceptance_upper_bound(p: Sequence[Any], draft_law: Mapping[Hashable, Any]) -> Fraction:
    """No lossless verifier of drafts with joint law Q accepts more often than
    min over H of [p(not H) + P_Q(some draft in H)] (for one draft: sum min(p, q)).

    ``draft_law`` maps k-tuples of token ids (or single ids) to probabilities.
    Every subset H of the vocabulary is tried, so keep the vocabulary small.
    """
    pf = as_distribution(p, name="p")
    law = draft_law if isinstance(draft_law, Distribution) else Distribution(draft_law)
    draws = [(set(k) if isinstance(k, tuple) else {k}, v) for k, v in law.items()]
    best: Fraction | None = None
    vocab = range(len(pf))
    for size in range(len(pf) + 1):
        for subset in itertools.combinations(vocab, size):
            h = set(subset)
            outside = sum((pf[i] for i in vocab if i not in h), ZERO)
            hit = sum((v for drawn, v in draws if drawn & h), ZERO)
            value = outside + hit
            if best is None or value < best:
                best = value
    assert best is not None
    return best
