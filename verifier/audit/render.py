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
