"""A catalogue of speculative-sampling rules, right and wrong, each with its exact witness."""

from __future__ import annotations

from specexact.counterexamples.catalogue import (
    Entry,
    SamplerWitness,
    StepWitness,
    catalogue,
    get,
    left_out,
)

__all__ = [
    "Entry",
    "SamplerWitness",
    "StepWitness",
    "catalogue",
    "get",
    "left_out",
]
