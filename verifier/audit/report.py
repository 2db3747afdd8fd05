"""An audit's result as text for people and as JSON for programs.

The headline and the coverage are the same for every kind; the witness is
shown by the kind's own record (:mod:`specexact.audit.kinds`).
"""

from __future__ import annotations

from typing import Any

from specexact.audit.kinds import get_kind
from specexact.audit.options import FINDING_CLASSES, AuditResult, Finding
from specexact.audit.render import wrap
from specexact.witness import vector_text

__all__ = ["counterexample_json", "notes_json", "result_human", "result_json"]


def _label(result: AuditResult) -> str:
    kind = get_kind(result.kind)
    return kind.reported if result.mode is None else f"{kind.reported}, {result.mode}"


def result_human(result: AuditResult, *, verbose: bool = True) -> str:
    """The report printed by ``specexact audit TARGET``.

    ``verbose=False`` cuts the witness table's identical rows beyond the
    first few (the assertion helpers under pytest without ``-vv``).
    """
    kind = get_kind(result.kind)
    found = result.counterexample
    if found is None:
        return "\n".join([f"PASS  {result.name} ({_label(result)}): no violation found "
                          f"in {result.cases} exact cases{kind.pass_note}",
                          wrap(result.coverage), *_note_lines(result, verbose)])
    lines = [f"FAIL  {result.name} ({_label(result)}): {found.reason}",
             wrap(f"after {result.cases} exact cases. {result.coverage}")]
    if result.finding_class is not None:
        lines.append(f"class: {result.finding_class} "
                     f"({FINDING_CLASSES[result.finding_class]})")
    lines.append("")
    lines.extend(kind.witness_lines(result, found, verbose))
    lines.extend(_note_lines(result, verbose))
    return "\n".join(lines)


def _note_lines(result: AuditResult, verbose: bool) -> list[str]:
    """Each exact-only finding, as a NOTE with its exact witness."""
    kind = get_kind(result.kind)
    lines: list[str] = []
    for note in result.notes:
        lines += ["", f"NOTE  exact-only ({FINDING_CLASSES['exact-only']}): {note.reason}",
                  wrap("in exact arithmetic only: the dtype run on the same rows is clean "
                       "(no crash, no mass where the target has none)")]
        lines.extend(_witness_of(kind, result, note, verbose))
    return lines


def _witness_of(kind: Any, result: AuditResult, note: Finding, verbose: bool) -> list[str]:
    witness = note.witness
    if hasattr(witness, "p") and hasattr(witness, "q"):
        return [f"  p = {vector_text(witness.p)}", f"  q = {vector_text(witness.q)}", "",
                note.table(verbose=verbose)]
    try:
        return list(kind.witness_lines(result, note, verbose))
    except (AttributeError, TypeError):  # a witness the kind's record cannot show
        return [f"  {note.verdict}"]


def notes_json(result: AuditResult) -> list[dict[str, Any]]:
    """The ``notes`` array of the JSON report: each exact-only finding."""
    kind = get_kind(result.kind)
    out: list[dict[str, Any]] = []
    for note in result.notes:
        try:
            witness = kind.witness_json(result, note)
        except (AttributeError, TypeError):
            witness = {"reason": note.reason}
        out.append({"class": "exact-only", **witness})
    return out


def counterexample_json(result: AuditResult) -> dict[str, Any] | None:
    """The ``counterexample`` object of the JSON report (None for a pass)."""
    found = result.counterexample
    if found is None:
        return None
    return get_kind(result.kind).witness_json(result, found)


def result_json(result: AuditResult) -> dict[str, Any]:
    """The ``--json`` object of ``specexact audit TARGET``."""
    kind = get_kind(result.kind)
    low, high = kind.sizes(result.options)
    data: dict[str, Any] = {
        "verdict": "pass" if result.passed else "fail",
        "target": result.name,
        "kind": kind.reported,
    }
    if result.mode is not None:
        data["mode"] = result.mode
    data.update({
        "cases": result.cases,
        "vocab_sizes": [low, high],
        "seed": result.options.seed,
        "coverage": result.coverage,
        "counterexample": counterexample_json(result),
    })
    if result.options.classify:
        if data["counterexample"] is not None:
            data["counterexample"]["class"] = result.finding_class
        data["notes"] = notes_json(result)
    if kind.has_horizon:
        data["horizon"] = result.horizon
    if kind.details is not None:
        data.update(kind.details(result))
    if "processors" in kind.options:
        pipeline = result.options.processors
        data["processors"] = None if pipeline is None else pipeline.to_json()
    return data
