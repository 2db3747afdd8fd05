"""How each kind shows its witness, to people and to programs.

The JSON conventions (exact fraction strings, comma-joined prefixes) are
:mod:`specexact.witness`'s.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specexact.audit.options import AuditResult, Finding
from specexact.witness import (
    fraction_text,
    prefix_key,
    sampler_case_json,
    step_witness_json,
    vector_text,
)

__all__ = [
    "batch_json",
    "batch_lines",
    "batch_properties_json",
    "crossvocab_json",
    "crossvocab_lines",
    "float_json",
    "float_lines",
    "model_lines",
    "sampler_json",
    "sampler_lines",
    "step_json",
    "step_lines",
    "tv_line",
    "wrap",
]


def wrap(text: str, *, indent: str = "") -> str:
    """``text`` filled to 88 columns, words never split at hyphens."""
    return textwrap.fill(" ".join(text.split()), width=88, break_on_hyphens=False,
                         initial_indent=indent, subsequent_indent=indent)


def tv_line(tv: Fraction | None, against: str) -> list[str]:
    """``['', 'TV(actual, p) = 1/4 ~ 0.25']``, or nothing without a TV."""
    return [] if tv is None else ["", f"TV(actual, {against}) = {tv} ~ {float(tv):.6g}"]


def model_lines(name: str, rows: Mapping[tuple[int, ...], Sequence[Fraction]]) -> list[str]:
    """A model's rows, one line per prefix, shortest prefix first."""
    out = [f"  {name}:"]
    for prefix in sorted(rows, key=lambda p: (len(p), p)):
        shown = "(" + ", ".join(map(str, prefix)) + ")"
        out.append(f"    after {shown:<12} {vector_text(rows[prefix])}")
    return out


# -- samplers ---------------------------------------------------------------


def sampler_lines(result: AuditResult, found: Finding, verbose: bool) -> list[str]:
    witness, verdict = found.witness, found.verdict
    minimality = (f"({result.minimality})" if result.minimality is not None
                  else "(shrunk greedily; not proven minimal: too many smaller candidates "
                       "to enumerate)")
    lines = ["minimal witness:", f"  p = {vector_text(witness.p)}",
             f"  q = {vector_text(witness.q)}", wrap(minimality, indent="  "),
             "", found.table(verbose=verbose), *tv_line(found.tv, "p")]
    if verdict.crash is not None:
        lines.extend(["", str(verdict.crash)])
    return lines


def sampler_json(result: AuditResult, found: Finding) -> dict[str, Any]:
    witness, verdict = found.witness, found.verdict
    data: dict[str, Any] = {
        **sampler_case_json(witness.p, witness.q, found.expected, found.actual),
        "tv": None if found.tv is None else fraction_text(found.tv),
        "reason": found.reason,
    }
    comparison = verdict.comparison
    if comparison is not None:
        data["support_violation"] = fraction_text(comparison.support_violation)
        data["invalid_mass"] = fraction_text(comparison.invalid_mass)
    if verdict.crash is not None:
        data["crash"] = str(verdict.crash)
    minimality = result.minimality
    data["minimality"] = None if minimality is None else {
        "proven": minimality.proven, "text": minimality.text,
        "pairs_checked": minimality.checked}
    return data


# -- float code --------------------------------------------------------------


def float_lines(result: AuditResult, found: Finding, verbose: bool) -> list[str]:
    """The witness rows (floats as given, where they are not the exact law) and the
    float verdict's split of the deviation (its headline is the report's reason)."""
    witness, verdict = found.witness, found.verdict
    _, _, split = str(verdict.format()).partition("\n")
    return ["minimal witness:", _float_row("p", witness.p, verdict.p),
            _float_row("q", witness.q, verdict.q), "", split]


def _float_row(name: str, given: Any, law: Any) -> str:
    """A witness row: exact, or float values as given (they need not sum to 1) and their
    law."""
    if tuple(given) == tuple(law):
        return f"  {name} = {vector_text(law)}"
    floats = ", ".join(repr(float(x)) for x in given)
    return f"  {name} = ({floats})  (float values as given; judged as {name} / sum({name}))"


def float_json(result: AuditResult, found: Finding) -> dict[str, Any]:
    """A float-mode witness: (p, q), both laws, the TV, the severity and the float
    verdict."""
    witness, verdict = found.witness, found.verdict
    return {**sampler_case_json(witness.p, witness.q, found.expected, found.actual),
            "tv": fraction_text(verdict.total_tv), "severity": verdict.severity,
            "reason": found.reason, "floats": verdict.to_json()}


# -- steps --------------------------------------------------------------------


def step_lines(result: AuditResult, found: Finding, verbose: bool) -> list[str]:
    verdict = found.verdict
    lines = [f"minimal witness (models over every prefix the run asked for, "
             f"horizon {verdict.horizon}):"]
    processors = getattr(verdict, "processors", None)
    if processors is not None:
        lines.append(f"  processors (applied to the target's rows below): {processors}")
    lines.extend(model_lines("target", verdict.target_rows))
    lines.extend(model_lines("draft", verdict.draft_rows))
    return [*lines, "", *_joint_law(found, "joint law of the first tokens emitted:", verbose)]


def _joint_law(found: Finding, title: str, verbose: bool) -> list[str]:
    """A joint-law finding's table and TV, or its crash."""
    if found.crash is not None:
        return [found.crash]
    return [title, found.table(verbose=verbose), *tv_line(found.tv, "target")]


def step_json(result: AuditResult, found: Finding) -> dict[str, Any]:
    verdict = found.verdict
    comparison = verdict.comparison
    first = None if comparison is None else comparison.first_difference
    data: dict[str, Any] = {
        **step_witness_json(verdict.target_rows, verdict.draft_rows, int(verdict.horizon),
                            found.expected, found.actual,
                            getattr(verdict, "processors", None)),
        "tv": None if found.tv is None else fraction_text(found.tv),
        "first_difference": None if first is None else prefix_key(first),
        "reason": found.reason,
    }
    if found.crash is not None:
        data["crash"] = found.crash
    return data


# -- cross-vocabulary steps ---------------------------------------------------


def crossvocab_lines(result: AuditResult, found: Finding, verbose: bool) -> list[str]:
    verdict = found.verdict
    horizon = int(verdict.horizon)
    lines = [f"minimal witness (vocabularies and every row the run read, horizon "
             f"{horizon} character{'s' if horizon != 1 else ''}):",
             *verdict.models_lines(), ""]
    return [*lines, *_joint_law(found, "law of the first characters of text:", verbose)]


def crossvocab_json(result: AuditResult, found: Finding) -> dict[str, Any]:
    data: dict[str, Any] = {**found.verdict.to_json(), "reason": found.reason}
    if found.crash is not None:
        data["crash"] = found.crash
    return data


# -- batches --------------------------------------------------------------------


def _batch_row_lines(b: int, row: Any, k: int) -> list[str]:
    generator = "its own torch.Generator" if row.seeded else "None (the global generator)"
    label = f" ({row.label})" if row.label else ""
    lines = [f"  row {b}{label}: {row.drafts} of {k} drafts, generator {generator}"]
    lines.extend(f"    q[{j}] = {vector_text(q)}" for j, q in enumerate(row.q))
    lines.extend(f"    p[{j}] = {vector_text(p)}" for j, p in enumerate(row.p))
    if row.drafts < k:
        filler = "uniform" if row.filler is None else vector_text(row.filler)
        lines.append(f"    padded positions hold {filler}")
    return lines


def _batch_contexts(verdict: Any) -> list[list[Any]]:
    """The batches a verdict's case ran: the batch, then its variants (seeds: contexts)."""
    case = verdict.case
    if case.property == "seeds":
        return [list(rows) for rows, _ in case.variants]
    return [list(case.rows), *(list(v) for v in case.variants)]


def batch_lines(result: AuditResult, found: Finding, verbose: bool) -> list[str]:
    """The failing property, the smallest batch (B, k, V) it failed on, its rows, and the
    exact laws compared."""
    verdict = found.verdict
    case, run = verdict.case, verdict.run
    batch, _, vocab = case.size
    lines = [f"property: {case.property}",
             f"minimal witness (the smallest case of the panel): B = {batch}, k = {run.k}, "
             f"V = {vocab}; {run.line()}"]
    batches = _batch_contexts(verdict)
    for n, rows in enumerate(batches):
        if len(batches) > 1:
            lines.append(f" batch {n + 1} of {len(batches)}:")
        for b, row in enumerate(rows):
            lines.extend(_batch_row_lines(b, row, run.k))
    lines.append("")
    if found.crash is not None:
        return [*lines, found.crash]
    lines.append(found.table(verbose=verbose))
    if found.tv is not None:
        lines.extend(["", f"TV = {found.tv} ~ {float(found.tv):.6g}"])
    return lines


def _batch_row_json(row: Any) -> dict[str, Any]:
    return {"drafts": row.drafts, "seeded": row.seeded, "label": row.label,
            "q": [[fraction_text(x) for x in r] for r in row.q],
            "p": [[fraction_text(x) for x in r] for r in row.p],
            "filler": None if row.filler is None else [fraction_text(x) for x in row.filler]}


def batch_json(result: AuditResult, found: Finding) -> dict[str, Any]:
    """The failing property, B, k, V, the batches with their rows, the TV and reason."""
    verdict = found.verdict
    case, run = verdict.case, verdict.run
    batch, _, vocab = case.size
    return {"property": case.property, "B": batch, "k": run.k, "V": vocab,
            "semantics": run.line(),
            "batches": [[_batch_row_json(r) for r in rows] for rows in _batch_contexts(verdict)],
            "tv": None if found.tv is None else fraction_text(found.tv),
            "reason": found.reason, "crash": found.crash}


def batch_properties_json(result: AuditResult) -> dict[str, Any]:
    """Each property's verdict and number of cases (``properties`` of the JSON report)."""
    report = getattr(result.details, "report", None)
    if report is None:
        return {}
    properties: dict[str, Any] = {}
    for name in report.names:
        entry: dict[str, Any] = {"verdict": report.status(name),
                                 "cases": report.cases.get(name, 0)}
        if name in report.not_applicable:
            entry["why"] = report.not_applicable[name]
        elif name in report.undecided:
            entry["why"] = str(report.undecided[name]).splitlines()[0]
        properties[name] = entry
    return {"properties": properties}
