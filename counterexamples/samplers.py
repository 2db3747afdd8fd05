"""Single-position rules written against the sampler protocol ``fn(p, q, rng) -> token``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def residual(p: list[Fraction], q: list[Fraction]) -> list[Fraction]:
    """max(p - q, 0), entrywise."""
    return [max(a - b, Fraction(0)) for a, b in zip(p, q, strict=True)]


def textbook(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Leviathan et al.: accept x ~ q with prob min(1, p/q), else draw from norm(max(p - q, 0))."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(residual(p, q))


def naive_resample(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """After a rejection, draw again from p instead of the residual."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(p)
