"""The catalogue: named rules with their expected verdict and exact witness."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from counterexamples import samplers

__all__ = ["Entry", "SamplerWitness", "catalogue", "get"]


@dataclass(frozen=True)
class SamplerWitness:
    """A minimal exact (p, q) on which a sampler does not preserve p."""

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]


def _w(p: Sequence[str], q: Sequence[str]) -> SamplerWitness:
    return SamplerWitness(tuple(Fraction(x) for x in p), tuple(Fraction(x) for x in q))


@dataclass(frozen=True)
class Entry:
    """One rule of the catalogue."""

    name: str
    kind: Literal["sampler", "step"]
    lossless: bool
    rule: Callable[..., Any]
    summary: str
    source: str | None
    witness: Any


_ENTRIES: tuple[Entry, ...] = (
    Entry(
        name="textbook",
        kind="sampler",
        lossless=True,
        rule=samplers.textbook,
        summary=("Leviathan et al. / Chen et al.: accept the drafted x with probability "
                 "min(1, p(x)/q(x)); on rejection draw from norm(max(p - q, 0)). The "
                 "accepted mass min(p, q) plus the residual max(p - q, 0) is exactly p."),
        source="Leviathan et al., ICML 2023, Algorithm 1",
        witness=None,
    ),
    Entry(
        name="naive-resample",
        kind="sampler",
        lossless=False,
        rule=samplers.naive_resample,
        summary=("After a rejection it resamples from p, so mass already covered by "
                 "acceptance is added again: the output is min(p, q) + (1 - A) p, not p."),
        source="reference sheet, section 5: resample from p after a rejection",
        witness=_w(["1/2", "1/2"], ["1", "0"]),
    ),
)


def catalogue() -> tuple[Entry, ...]:
    """Every rule in the catalogue, lossless ones first."""
    return _ENTRIES


def get(name: str) -> Entry:
    """The entry called ``name``; raises KeyError listing close names."""
    for entry in _ENTRIES:
        if entry.name == name:
            return entry
    import difflib

    close = difflib.get_close_matches(name, [e.name for e in _ENTRIES], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"no catalogue entry named {name!r}{hint}")
