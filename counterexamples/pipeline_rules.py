"""Rules that mix sampling pipelines (reference sheet, section 4).

In these samplers p is the law plain sampling would draw from (the target
after its processors), and q is the draft model's law before the draft's
own processors.  The draft really proposes from ``DRAFT(q)``; correctness
only needs the ratio and the residual to use that true proposal law.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from specexact.counterexamples.samplers import residual
from specexact.pipelines import Pipeline, Temperature, TopK

__all__ = [
    "DRAFT_FILTER",
    "DRAFT_TEMPERATURE",
    "draft_filtered_ratio_default",
    "draft_filtered_true_q",
    "draft_tempered_ratio_untempered",
    "draft_tempered_true_q",
    "ratio_and_residual_on_different_pipelines",
]

#: The draft's temperature 1/2 (q squared, renormalised).
DRAFT_TEMPERATURE = Pipeline((Temperature(2),))
#: The draft's top-k filter, k = 2 (ties kept).
DRAFT_FILTER = Pipeline((TopK(2),))


def _textbook_with(p: list[Fraction], proposal: tuple[Fraction, ...],
                   ratio_q: list[Fraction] | tuple[Fraction, ...],
                   residual_q: list[Fraction] | tuple[Fraction, ...], rng: Any) -> Any:
    x = rng.categorical(proposal)
    if rng.random() * ratio_q[x] < p[x]:
        return x
    return rng.categorical(residual(p, residual_q))


def draft_tempered_true_q(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Draft sampled at temperature 1/2; ratio and residual use that tempered q (lossless)."""
    tempered = DRAFT_TEMPERATURE(q)
    return _textbook_with(p, tempered, tempered, tempered, rng)


def draft_filtered_true_q(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Draft filtered by top-2; ratio and residual use the filtered q (lossless)."""
    filtered = DRAFT_FILTER(q)
    return _textbook_with(p, filtered, filtered, filtered, rng)


def draft_tempered_ratio_untempered(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Draft sampled at temperature 1/2 while the ratio and residual use the raw q."""
    return _textbook_with(p, DRAFT_TEMPERATURE(q), q, q, rng)


def draft_filtered_ratio_default(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Draft filtered by top-2 while the probabilities used for verification come from
    default parameters (unfiltered q): identical to the textbook rule when V <= 2."""
    return _textbook_with(p, DRAFT_FILTER(q), q, q, rng)


def ratio_and_residual_on_different_pipelines(p: list[Fraction], q: list[Fraction],
                                              rng: Any) -> Any:
    """Acceptance on the tempered draft law, residual on the raw one."""
    tempered = DRAFT_TEMPERATURE(q)
    return _textbook_with(p, tempered, tempered, q, rng)
