"""The exact layer: the choice tree, the lazy random sources, the enumerator, the verdict.

Data flows code under test -> random source -> choice-tree enumeration ->
exact distribution -> verdict.  Nothing here imports the multi-step layer,
the other modes or the frontends.
"""

from __future__ import annotations

from specexact.exact.engine import enumerate_law, output_distribution
from specexact.exact.random_source import (
    ExactRandom,
    LazyToken,
    LazyUniform,
    SeededRandom,
    check_uniform_bits,
)
from specexact.exact.tree import Budget, ChoiceTree, Chooser
from specexact.exact.verdict import Comparison, Verdict, check_sampler, compare_laws, format_table

__all__ = [
    "Budget",
    "ChoiceTree",
    "Chooser",
    "Comparison",
    "ExactRandom",
    "LazyToken",
    "LazyUniform",
    "SeededRandom",
    "Verdict",
    "check_sampler",
    "check_uniform_bits",
    "compare_laws",
    "enumerate_law",
    "format_table",
    "output_distribution",
]
