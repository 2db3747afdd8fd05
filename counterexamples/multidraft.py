"""Several drafts for one position (the first level of a token tree), as samplers.

Each rule draws its k candidates itself, from q, and returns one token; the
sampler protocol then judges the law of that token against p.  Formulas
follow the reference sheet, section 3.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from specexact.counterexamples.samplers import normalise, residual
from specexact.numbers import ONE, ZERO

__all__ = [
    "deterministic_tree",
    "deterministic_tree_threshold",
    "multiround",
    "multiround_original_p",
    "multiround_sorted_siblings",
    "rrs_plain_q",
    "rrs_without_replacement",
    "spectr",
    "spectr_rho_one",
]

K = 2


def multiround(p: list[Fraction], q: list[Fraction], rng: Any, k: int = K) -> Any:
    """SpecInfer multi-round: k i.i.d. siblings, each tested against the running residual."""
    drafts = [rng.categorical(q) for _ in range(k)]
    r = list(p)
    for x in drafts:
        if rng.random() * q[x] < r[x]:
            return x
        r = normalise(residual(r, q))
    return rng.categorical(r)


def multiround_original_p(p: list[Fraction], q: list[Fraction], rng: Any,
                          k: int = K) -> Any:
    """Every sibling tested against the original p (the residual only for the fallback)."""
    drafts = [rng.categorical(q) for _ in range(k)]
    for x in drafts:
        if rng.random() * q[x] < p[x]:
            return x
    return rng.categorical(residual(p, q))


def multiround_sorted_siblings(p: list[Fraction], q: list[Fraction], rng: Any,
                               k: int = K) -> Any:
    """Multi-round verification after sorting the i.i.d. siblings by token id."""
    drafts = sorted(int(rng.categorical(q)) for _ in range(k))
    r = list(p)
    for x in drafts:
        if rng.random() * q[x] < r[x]:
            return x
        r = normalise(residual(r, q))
    return rng.categorical(r)


def _without(q: list[Fraction], drawn: set[int]) -> list[Fraction] | None:
    """q restricted to tokens not drawn yet, renormalised; None when nothing is left."""
    rest = [ZERO if i in drawn else w for i, w in enumerate(q)]
    return normalise(rest) if any(rest) else None


def rrs_without_replacement(p: list[Fraction], q: list[Fraction], rng: Any,
                            k: int = K) -> Any:
    """Recursive rejection sampling: the j-th draft from q without the drawn tokens,
    and the ratio and residual use that same q^(j)."""
    r = list(p)
    drawn: set[int] = set()
    qj: list[Fraction] | None = list(q)
    for _ in range(k):
        if qj is None:
            break
        x = int(rng.categorical(qj))
        if rng.random() * qj[x] < r[x]:
            return x
        r = normalise(residual(r, qj))
        drawn.add(x)
        qj = _without(q, drawn)
    return rng.categorical(r)


def rrs_plain_q(p: list[Fraction], q: list[Fraction], rng: Any, k: int = K) -> Any:
    """Drafts drawn without replacement, but the ratio and residual use the plain q."""
    r = list(p)
    drawn: set[int] = set()
    qj: list[Fraction] | None = list(q)
    for _ in range(k):
        if qj is None:
            break
        x = int(rng.categorical(qj))
        if rng.random() * q[x] < r[x]:
            return x
        r = normalise(residual(r, q))
        drawn.add(x)
        qj = _without(q, drawn)
    return rng.categorical(r)


def _argsort_desc(q: list[Fraction]) -> list[int]:
    return sorted(range(len(q)), key=lambda i: (-q[i], i))


def deterministic_tree(p: list[Fraction], q: list[Fraction], rng: Any, k: int = K) -> Any:
    """EAGLE-2 style one-hot siblings (the k most likely tokens of q): accept sibling x
    with prob r(x), else zero it in r and renormalise; fallback y ~ r."""
    r = list(p)
    for x in _argsort_desc(q)[:k]:
        if rng.bernoulli(r[x]):
            return x
        r[x] = ZERO
        r = normalise(r)
    return rng.categorical(r)


THRESHOLD = Fraction(1, 2)


def deterministic_tree_threshold(p: list[Fraction], q: list[Fraction], rng: Any,
                                 k: int = K) -> Any:
    """The one-hot tree with SGLang-style threshold_acc = 1/2: accept with min(1, r(x)/t)."""
    r = list(p)
    for x in _argsort_desc(q)[:k]:
        if rng.bernoulli(min(ONE, r[x] / THRESHOLD)):
            return x
        r[x] = ZERO
        r = normalise(r)
    return rng.categorical(r)


def _spectr(p: list[Fraction], q: list[Fraction], rng: Any, k: int, rho: Fraction) -> Any:
    capped = [min(b, a / rho) for a, b in zip(p, q, strict=True)]
    beta = sum(capped, ZERO)
    for _ in range(k):
        x = rng.categorical(q)
        if rng.random() * rho * q[x] < p[x]:
            return x
    if beta == 0:
        # Disjoint supports: nothing is ever accepted and the fallback is p.
        return rng.categorical(p)
    # beta = 1 forces acceptance above, so (1 - beta)^k > 0 here.
    miss = (1 - beta) ** k
    hit = (1 - miss) / beta
    return rng.categorical([(a - c * hit) / miss for a, c in zip(p, capped, strict=True)])


def spectr(p: list[Fraction], q: list[Fraction], rng: Any, k: int = K) -> Any:
    """SpecTr k-sequential selection with rho = k (always valid)."""
    return _spectr(p, q, rng, k, Fraction(k))


def spectr_rho_one(p: list[Fraction], q: list[Fraction], rng: Any, k: int = K) -> Any:
    """SpecTr k-sequential with rho = 1: 1 - (1 - beta)^k <= beta fails, so it is biased."""
    return _spectr(p, q, rng, k, ONE)
