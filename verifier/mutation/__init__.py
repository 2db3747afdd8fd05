"""Mutation testing of an engine's own sampler tests.

:func:`mutate` plants the catalogue's bug classes (:data:`OPERATORS`: ``<`` to
``<=`` against a uniform, the residual to the target, a clamp to a floor, a shared
uniform, the bonus row off by one, ...) in the user's sampler, one at a time, runs
the user's test command and specexact's audit on each mutant in an isolated copy,
and reports which mutants the tests kill.  A mutant the audit passes is equivalent
and does not count against the tests.
"""

from __future__ import annotations

from specexact.mutation.operators import OPERATORS, Mutant, Operator, find_mutants, get_operators
from specexact.mutation.report import (
    MutantResult,
    MutationReport,
    plot_scores,
    report_human,
    report_json,
)
from specexact.mutation.runner import MUTANT_ENV, mutate

__all__ = [
    "MUTANT_ENV",
    "OPERATORS",
    "Mutant",
    "MutantResult",
    "MutationReport",
    "Operator",
    "find_mutants",
    "get_operators",
    "mutate",
    "plot_scores",
    "report_human",
    "report_json",
]
