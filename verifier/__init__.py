"""specexact's engine: the exact law of a sampler, and verdicts against the target.

Data flows sampler -> random source -> choice-tree enumeration -> exact
distribution -> verdict.
"""

from __future__ import annotations

from verifier.distribution import Distribution, InvalidToken, total_variation
from verifier.engine import enumerate_law, output_distribution
from verifier.errors import (
    BudgetExceeded,
    HiddenRandomness,
    InvalidArgument,
    InvalidDistribution,
    InvalidInput,
    InvalidOutput,
    SamplerFailure,
    SamplerRaised,
    SpecexactError,
    Undecided,
    UnsupportedOperation,
)
from verifier.numbers import as_distribution, to_fraction
from verifier.random_source import ExactRandom, LazyToken, LazyUniform, SeededRandom
from verifier.tree import Budget
from verifier.verdict import Comparison, Verdict, check_sampler, compare_laws, format_table

__all__ = [
    "Budget",
    "BudgetExceeded",
    "Comparison",
    "Distribution",
    "ExactRandom",
    "HiddenRandomness",
    "InvalidArgument",
    "InvalidDistribution",
    "InvalidInput",
    "InvalidOutput",
    "InvalidToken",
    "LazyToken",
    "LazyUniform",
    "SamplerFailure",
    "SamplerRaised",
    "SeededRandom",
    "SpecexactError",
    "Undecided",
    "UnsupportedOperation",
    "Verdict",
    "as_distribution",
    "check_sampler",
    "compare_laws",
    "enumerate_law",
    "format_table",
    "output_distribution",
    "to_fraction",
    "total_variation",
]
