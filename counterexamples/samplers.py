"""Single-draft rules written against the sampler protocol ``fn(p, q, rng) -> token``.

Each wrong rule reproduces one public bug pattern (reference sheet, section
5) in exact form; the lossless ones include the wasteful-but-right variants
a checker must pass.  ``p`` and ``q`` arrive as lists of Fractions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from specexact.numbers import ZERO

__all__ = [
    "always_accept",
    "argmax_draft_softmax_q",
    "argmax_residual",
    "exact_match",
    "fallback_next_token",
    "fallback_over_proposed",
    "fallback_p_after_onehot",
    "greedy_at_temperature",
    "inclusive_uniform",
    "inverted_ratio",
    "lenient",
    "naive_resample",
    "normalise",
    "onehot_verification",
    "padded_lanes",
    "positionwise_residual",
    "residual",
    "residual_floor",
    "residual_normalised_eagerly",
    "residual_plus_epsilon",
    "residual_without_clamp",
    "shared_uniform",
    "textbook",
    "textbook_bernoulli",
    "typical_acceptance",
]


def residual(p: Sequence[Fraction], q: Sequence[Fraction]) -> list[Fraction]:
    """max(p - q, 0), entrywise."""
    return [max(a - b, ZERO) for a, b in zip(p, q, strict=True)]


def normalise(weights: Sequence[Fraction]) -> list[Fraction]:
    """weights / sum(weights); raises ZeroDivisionError on all zeros, as 0/0 would."""
    total = sum(weights, ZERO)
    return [w / total for w in weights]


def argmax(weights: Sequence[Fraction]) -> int:
    """The first index of the largest weight (torch.argmax's tie rule)."""
    best = 0
    for i, w in enumerate(weights):
        if w > weights[best]:
            best = i
    return best


# --------------------------------------------------------------------------
# Lossless
# --------------------------------------------------------------------------


def textbook(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Leviathan et al.: accept x ~ q with prob min(1, p/q), else draw from norm(max(p - q, 0))."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(residual(p, q))


def textbook_bernoulli(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """The textbook rule with the acceptance coin as a Bernoulli draw."""
    x = rng.categorical(q)
    if rng.bernoulli(min(Fraction(1), p[x] / q[x])):
        return x
    return rng.categorical(residual(p, q))


def onehot_verification(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Verify x as if q were one-hot at x: accept with prob p(x), else p with x removed.

    Wasteful (acceptance sum q p instead of sum min(p, q)) but lossless,
    because x does not depend on the verifier's coins.
    """
    x = rng.categorical(q)
    if rng.bernoulli(p[x]):
        return x
    return rng.categorical([ZERO if i == x else w for i, w in enumerate(p)])


def exact_match(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Sample y ~ p; keep the draft x only when y == x, else emit y (always emits y)."""
    x = rng.categorical(q)
    y = rng.categorical(p)
    return x if y == x else y


# --------------------------------------------------------------------------
# Wrong: the fallback
# --------------------------------------------------------------------------


def naive_resample(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """After a rejection, draw again from p instead of the residual."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(p)


# The floor used by the epsilon bugs: large enough to see in a table.
EPSILON = Fraction(1, 100)


def residual_floor(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Fallback from norm(max(p - q, eps)): tokens with p <= q get mass they must not."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([max(a - b, EPSILON) for a, b in zip(p, q, strict=True)])


def residual_plus_epsilon(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Fallback from norm(max(p - q, 0) + eps), an epsilon added to dodge 0/0."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([w + EPSILON for w in residual(p, q)])


def padded_lanes(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """The floored residual over a vocabulary padded by two lanes: ids >= V come out."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    padded = [*p, ZERO, ZERO], [*q, ZERO, ZERO]
    return rng.categorical([max(a - b, EPSILON) for a, b in zip(*padded, strict=True)])


def residual_without_clamp(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Fallback from p - q without the max(., 0): negative weights make the draw fail."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([a - b for a, b in zip(p, q, strict=True)])


def residual_normalised_eagerly(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Normalises the residual before the test: 0/0 (NaN in float code) when p = q."""
    fallback = normalise(residual(p, q))
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(fallback)


def argmax_residual(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Greedy fallback: argmax of the residual.  Exact for V = 2 (the residual is one-hot)."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return argmax(residual(p, q))


def fallback_next_token(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """On rejection emit the next id, (x + 1) mod V: right for V = 2 only."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return (int(x) + 1) % len(p)


def fallback_over_proposed(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """The residual built only over tokens the draft can propose (q > 0)."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([r if b > 0 else ZERO for r, b in zip(residual(p, q), q,
                                                                   strict=True)])


def fallback_p_after_onehot(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """One-hot verification (accept with prob p(x)) but the fallback is p, x not removed."""
    x = rng.categorical(q)
    if rng.bernoulli(p[x]):
        return x
    return rng.categorical(p)


def positionwise_residual(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Residual taken position-wise over candidate lists sorted by p and by q.

    The target's and the draft's candidate lists (each sorted by its own
    probability) hold different tokens at the same position, so the
    difference p[cp[j]] - q[cq[j]] mixes two tokens.
    """
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    by_p = sorted(range(len(p)), key=lambda i: (-p[i], i))
    by_q = sorted(range(len(q)), key=lambda i: (-q[i], i))
    weights = [max(p[a] - q[b], ZERO) for a, b in zip(by_p, by_q, strict=True)]
    return by_p[rng.categorical(weights)]


# --------------------------------------------------------------------------
# Wrong: the acceptance test and its uniform
# --------------------------------------------------------------------------


def shared_uniform(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """One uniform for the test and the inverse-CDF fallback draw (FlashInfer #424).

    After a rejection u >= p(x)/q(x), so the fallback walk sees a biased u.
    """
    u = rng.random()
    x = rng.categorical(q)
    if u * q[x] < p[x]:
        return x
    weights = normalise(residual(p, q))
    cumulative = ZERO
    last = 0
    for i, w in enumerate(weights):
        if w:
            cumulative += w
            last = i
            if u < cumulative:
                return i
    return last


def inclusive_uniform(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """``u <= p/q`` with u in [0, 1): a grid uniform equal to 0 accepts tokens with p = 0."""
    x = rng.categorical(q)
    if rng.random() * q[x] <= p[x]:
        return x
    return rng.categorical(residual(p, q))


def always_accept(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """A degenerate uniform that is always 0 accepts every draft: the output is q."""
    u = ZERO  # the kernel's uniform buffer was never filled
    x = rng.categorical(q)
    if u * q[x] <= p[x]:
        return x
    return rng.categorical(residual(p, q))


def inverted_ratio(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Accepts with min(1, q/p) instead of min(1, p/q)."""
    x = rng.categorical(q)
    if rng.random() * p[x] < q[x]:
        return x
    return rng.categorical(residual(p, q))


def argmax_draft_softmax_q(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """The draft proposes argmax q, but the ratio uses the softmax q (transformers #32867).

    The proposal law is one-hot, so the correct ratio is p(x)/1.
    """
    x = argmax(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(residual(p, q))


def greedy_at_temperature(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Greedy verification (keep x iff x = argmax p, else emit argmax p) used for sampling."""
    x = rng.categorical(q)
    best = argmax(p)
    return x if x == best else best


# --------------------------------------------------------------------------
# Lossy by design
# --------------------------------------------------------------------------

LENIENCE = Fraction(2)


def lenient(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Relaxed acceptance min(1, lenience * p/q) with lenience 2, textbook fallback."""
    x = rng.categorical(q)
    if rng.random() * q[x] < LENIENCE * p[x]:
        return x
    return rng.categorical(residual(p, q))


# Medusa's defaults: posterior_threshold 0.09, posterior_alpha 0.3.
TYPICAL_EPSILON = 0.09
TYPICAL_DELTA = 0.3


def typical_acceptance(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Medusa's typical acceptance: keep x if p(x) > min(eps, delta exp(-H(p))), else y ~ p.

    The threshold is float code (exp and log are irrational), judged by its
    exact binary value.
    """
    entropy = -sum(float(a) * math.log(float(a)) for a in p if a > 0)
    threshold = Fraction(min(TYPICAL_EPSILON, TYPICAL_DELTA * math.exp(-entropy)))
    x = rng.categorical(q)
    if p[x] > threshold:
        return x
    return rng.categorical(p)
