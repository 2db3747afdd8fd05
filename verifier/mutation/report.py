"""A mutation run's report: each mutant's outcomes, the two scores, and the report as
text for people, JSON for programs, and a bar chart."""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, final

from specexact.errors import MissingDependency
from specexact.mutation.operators import Mutant, Operator
from specexact.tables import render_table

__all__ = ["MutantResult", "MutationReport", "plot_scores", "report_human", "report_json"]

TestOutcome = Literal["killed", "survived", "timeout", "error"]
AuditVerdict = Literal["pass", "fail", "undecided"]


@final
@dataclass(frozen=True)
class MutantResult:
    """A mutant, what the user's tests did to it, and specexact's verdict on it.

    ``tests``: killed (the command exited non-zero), survived (exit 0), timeout, or
    error (the command could not be run).  ``verdict``: pass (the mutant preserves
    the target: equivalent), fail, or undecided.  ``detail``: the audit's reason
    (``biased, TV = 1/4``) or why there is no verdict.
    """

    mutant: Mutant
    tests: TestOutcome
    verdict: AuditVerdict
    detail: str | None
    tests_output: str

    @property
    def equivalent(self) -> bool:
        """specexact passes the mutant: it is not a gap in the tests."""
        return self.verdict == "pass"

    @property
    def detected(self) -> bool:
        """The tests caught the mutant (a timeout counts, as in mutmut and Stryker)."""
        return self.tests in ("killed", "timeout")


@final
@dataclass(frozen=True)
class MutationReport:
    """The mutants of ``target`` and their outcomes, with the two mutation scores."""

    target: str
    tests: str
    audit_args: tuple[str, ...]
    operators: tuple[Operator, ...]
    results: tuple[MutantResult, ...]

    @property
    def non_equivalent(self) -> tuple[MutantResult, ...]:
        """The mutants specexact does not pass (FAIL or UNDECIDED)."""
        return tuple(r for r in self.results if not r.equivalent)

    @property
    def killed(self) -> tuple[MutantResult, ...]:
        """Non-equivalent mutants the tests caught."""
        return tuple(r for r in self.non_equivalent if r.detected)

    @property
    def survivors(self) -> tuple[MutantResult, ...]:
        """Non-equivalent mutants the tests let through."""
        return tuple(r for r in self.non_equivalent if not r.detected)

    @property
    def failed(self) -> tuple[MutantResult, ...]:
        """Mutants specexact refutes."""
        return tuple(r for r in self.results if r.verdict == "fail")

    @property
    def outcome(self) -> Literal["pass", "fail", "undecided"]:
        """fail when a mutant specexact refutes survives the tests; undecided when only
        mutants without a verdict survive; pass otherwise."""
        if any(r.verdict == "fail" for r in self.survivors):
            return "fail"
        if self.survivors:
            return "undecided"
        return "pass"

    def assert_killed(self) -> None:
        """Raise AssertionError, with the table, when a non-equivalent mutant survives."""
        if self.survivors:
            raise AssertionError(report_human(self))



_VERDICT = {"pass": "PASS (equivalent)", "fail": "FAIL", "undecided": "UNDECIDED"}


def _score(part: int, whole: int) -> str:
    if whole == 0:
        return "n/a (no non-equivalent mutant)"
    return f"{part}/{whole} ({round(100 * Fraction(part, whole))}%)"


def _listed(results: tuple[MutantResult, ...]) -> str:
    return ", ".join(f"{r.mutant.id} ({r.mutant.operator}, {r.mutant.location})"
                     for r in results)


def report_human(report: MutationReport, *, diffs: bool | None = None) -> str:
    """The report printed by ``specexact mutate``: the table of mutants, the two scores,
    and the diff of each surviving non-equivalent mutant (every mutant's with
    ``diffs=True``, none with ``False``)."""
    results = report.results
    rows = [(r.mutant.id, r.mutant.operator, r.mutant.location, r.tests,
             _VERDICT[r.verdict]) for r in results]
    non_equivalent = len(report.non_equivalent)
    headline = {"pass": "PASS", "fail": "FAIL", "undecided": "UNDECIDED"}[report.outcome]
    lines = [f"{headline}  mutation testing of {report.target}: {len(results)} "
             f"mutant{'' if len(results) == 1 else 's'}, "
             f"tests: {report.tests}", "",
             render_table(("id", "operator", "location", "tests", "specexact"), rows,
                          align="left"), "",
             f"tests' mutation score:      {_score(len(report.killed), non_equivalent)} "
             "non-equivalent mutants killed",
             f"specexact's mutation score: {_score(len(report.failed), non_equivalent)} "
             "non-equivalent mutants refuted (FAIL)"]
    equivalent = [r for r in results if r.equivalent]
    if equivalent:
        lines.append(f"equivalent (specexact PASS, not counted): "
                     f"{', '.join(r.mutant.id for r in equivalent)}")
    if report.survivors:
        lines.append(f"survived the tests: {_listed(report.survivors)}")
    shown = results if diffs else () if diffs is False else report.survivors
    for r in shown:
        why = f": {r.detail}" if r.detail else ""
        lines.extend(["", f"{r.mutant.id} {r.mutant.operator} at {r.mutant.location} "
                          f"(tests: {r.tests}; specexact: {_VERDICT[r.verdict]}{why})",
                      r.mutant.diff.rstrip("\n")])
    return "\n".join(lines)


def _per_operator(report: MutationReport) -> list[dict[str, Any]]:
    rows = []
    for op in report.operators:
        mine = [r for r in report.results if r.mutant.operator == op.name]
        if not mine:
            continue
        counted = [r for r in mine if not r.equivalent]
        rows.append({"operator": op.name, "mutants": len(mine),
                     "non_equivalent": len(counted),
                     "killed": sum(r.detected for r in counted),
                     "refuted": sum(r.verdict == "fail" for r in counted)})
    return rows


def _score_json(part: int, whole: int) -> dict[str, Any]:
    return {"numerator": part, "denominator": whole,
            "score": None if whole == 0 else str(Fraction(part, whole))}


def report_json(report: MutationReport) -> dict[str, Any]:
    """The ``--json`` object of ``specexact mutate``."""
    non_equivalent = len(report.non_equivalent)
    return {
        "verdict": report.outcome,
        "command": "mutate",
        "target": report.target,
        "tests": report.tests,
        "audit_args": list(report.audit_args),
        "operators": [op.name for op in report.operators],
        "mutants": [{
            "id": r.mutant.id, "operator": r.mutant.operator,
            "location": r.mutant.location, "line": r.mutant.line,
            "tests": r.tests, "specexact": r.verdict, "equivalent": r.equivalent,
            "detail": r.detail, "diff": r.mutant.diff,
        } for r in report.results],
        "scores": {
            "tests": _score_json(len(report.killed), non_equivalent),
            "specexact": _score_json(len(report.failed), non_equivalent),
        },
        "per_operator": _per_operator(report),
        "survivors": [r.mutant.id for r in report.survivors],
    }


def plot_scores(report: MutationReport, path: str | os.PathLike[str]) -> None:
    """Bars of the tests' and specexact's mutation scores per operator, written to
    ``path`` (PNG, or any format matplotlib reads from the suffix)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency.of("matplotlib", "--plot") from None
    rows = [r for r in _per_operator(report) if r["non_equivalent"]]
    rows.append({"operator": "all", "non_equivalent": len(report.non_equivalent),
                 "killed": len(report.killed), "refuted": len(report.failed)})
    width = max(5.0, 1.0 * len(rows) + 1.5)
    fig, ax = plt.subplots(figsize=(width, 3.8))
    for shift, key, label, colour in ((-0.2, "killed", "the tests (killed)", "#d9822b"),
                                      (0.2, "refuted", "specexact (FAIL)", "#2b6cb0")):
        xs = [i + shift for i in range(len(rows))]
        heights = [r[key] / r["non_equivalent"] if r["non_equivalent"] else 0.0
                   for r in rows]
        ax.bar(xs, heights, 0.4, label=label, color=colour)
        for x, h, r in zip(xs, heights, rows, strict=True):
            ax.text(x, h + 0.02, f"{r[key]}/{r['non_equivalent']}", ha="center",
                    va="bottom", fontsize=7)
    ax.set_xticks(range(len(rows)), [r["operator"] for r in rows], fontsize=7,
                  rotation=30, ha="right")
    ax.set_ylim(0, 1.3)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("non-equivalent mutants caught")
    ax.set_title(f"mutation scores of {report.target}", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
