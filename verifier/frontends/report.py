"""Turning audit results into text for people and JSON for programs.

The JSON conventions (exact fraction strings, comma-joined prefixes) are
:mod:`specexact.witness`'s; its helpers are re-exported here.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from specexact.frontends.audit import (
    AuditResult,
    CrossVocabCounterexample,
    FloatCounterexample,
    SamplerCounterexample,
    StepCounterexample,
)
from specexact.witness import (
    fraction_text,
    law_json,
    outcome_key,
    prefix_key,
    rows_json,
    sampler_case_json,
    step_witness_json,
    vector_text,
)

__all__ = [
    "float_counterexample_json",
    "fraction_text",
    "law_json",
    "model_lines",
    "outcome_key",
    "prefix_key",
    "result_human",
    "result_json",
    "rows_json",
    "vector_text",
]


def float_counterexample_json(found: FloatCounterexample) -> dict[str, Any]:
    """A float-mode witness: (p, q), both laws, the TV, the severity and the float verdict."""
    verdict = found.verdict
    return {**sampler_case_json(found.p, found.q, found.expected, found.actual),
            "tv": fraction_text(found.tv), "severity": verdict.severity,
            "reason": found.reason, "floats": verdict.to_json()}


def counterexample_json(result: AuditResult) -> dict[str, Any] | None:
    found = result.counterexample
    if found is None:
        return None
    if isinstance(found, FloatCounterexample):
        return float_counterexample_json(found)
    if isinstance(found, SamplerCounterexample):
        verdict = found.verdict
        data: dict[str, Any] = {
            **sampler_case_json(found.p, found.q, found.expected, found.actual),
            "tv": None if found.tv is None else fraction_text(found.tv),
            "reason": found.reason,
        }
        comparison = verdict.comparison
        if comparison is not None:
            data["support_violation"] = fraction_text(comparison.support_violation)
            data["invalid_mass"] = fraction_text(comparison.invalid_mass)
        if verdict.crash is not None:
            data["crash"] = str(verdict.crash)
        return data
    if isinstance(found, CrossVocabCounterexample):
        data = {**found.verdict.to_json(), "reason": found.reason}
        if found.crash is not None:
            data["crash"] = found.crash
        return data
    assert isinstance(found, StepCounterexample)
    step: dict[str, Any] = {
        **step_witness_json(found.target, found.draft, found.horizon, found.expected,
                            found.actual, found.processors),
        "tv": None if found.tv is None else fraction_text(found.tv),
        "first_difference": None if found.first_difference is None
        else prefix_key(found.first_difference),
        "reason": found.reason,
    }
    if found.crash is not None:
        step["crash"] = found.crash
    return step


def result_json(result: AuditResult) -> dict[str, Any]:
    """The ``--json`` object of ``specexact audit TARGET``."""
    low, high = result.options.sizes
    data: dict[str, Any] = {
        "verdict": "pass" if result.passed else "fail",
        "target": result.name,
        "kind": result.kind,
        "cases": result.cases,
        "vocab_sizes": [low, high],
        "seed": result.options.seed,
        "coverage": result.coverage,
        "counterexample": counterexample_json(result),
    }
    if result.kind in ("step", "cross-vocab"):
        data["horizon"] = result.horizon
    elif data["counterexample"] is not None:
        minimality = result.minimality
        data["counterexample"]["minimality"] = None if minimality is None else {
            "proven": minimality.proven, "text": minimality.text,
            "pairs_checked": minimality.checked}
    if result.kind == "step":
        pipeline = result.options.processors
        data["processors"] = None if pipeline is None else pipeline.to_json()
    return data


def result_human(result: AuditResult, *, verbose: bool = True) -> str:
    """The report printed by ``specexact audit TARGET``.

    ``verbose=False`` cuts the witness table's identical rows beyond the
    first few (the assertion helpers under pytest without ``-vv``).
    """
    found = result.counterexample
    lines: list[str] = []
    if found is None:
        lines.append(f"PASS  {result.name} ({result.kind}): no violation found "
                     f"in {result.cases} exact cases")
        lines.append(_wrap(result.coverage))
        return "\n".join(lines)
    lines.append(f"FAIL  {result.name} ({result.kind}): {found.reason}")
    lines.append(_wrap(f"after {result.cases} exact cases. {result.coverage}"))
    lines.append("")
    if isinstance(found, FloatCounterexample | SamplerCounterexample):
        lines.extend(["minimal witness:", f"  p = {vector_text(found.p)}",
                      f"  q = {vector_text(found.q)}"])
        if isinstance(found, SamplerCounterexample):
            lines.append(_wrap(f"({result.minimality})" if result.minimality is not None
                               else "(shrunk greedily; not proven minimal: too many smaller "
                                    "candidates to enumerate)", indent="  "))
        lines.extend(["", found.table(verbose=verbose)])
    if isinstance(found, SamplerCounterexample):
        if found.tv is not None:
            lines.append("")
            lines.append(f"TV(actual, p) = {found.tv} ~ {float(found.tv):.6g}")
        if found.verdict.crash is not None:
            lines.append("")
            lines.append(str(found.verdict.crash))
    elif isinstance(found, CrossVocabCounterexample):
        lines.append(f"minimal witness (vocabularies and every row the run read, horizon "
                     f"{found.horizon} character{'s' if found.horizon != 1 else ''}):")
        lines.extend(found.model_lines())
        lines.append("")
        if found.crash is not None:
            lines.append(found.crash)
        else:
            lines.append("law of the first characters of text:")
            lines.append(found.table(verbose=verbose))
            if found.tv is not None:
                lines.append("")
                lines.append(f"TV(actual, target) = {found.tv} ~ {float(found.tv):.6g}")
    elif isinstance(found, StepCounterexample):
        lines.append(f"minimal witness (models over every prefix the run asked for, "
                     f"horizon {found.horizon}):")
        if found.processors is not None:
            lines.append(f"  processors (applied to the target's rows below): "
                         f"{found.processors}")
        lines.extend(model_lines("target", found.target))
        lines.extend(model_lines("draft", found.draft))
        lines.append("")
        if found.crash is not None:
            lines.append(found.crash)
        else:
            lines.append("joint law of the first tokens emitted:")
            lines.append(found.table(verbose=verbose))
            if found.tv is not None:
                lines.append("")
                lines.append(f"TV(actual, target) = {found.tv} ~ {float(found.tv):.6g}")
    return "\n".join(lines)


def _wrap(text: str, *, indent: str = "") -> str:
    return textwrap.fill(" ".join(text.split()), width=88, break_on_hyphens=False,
                         initial_indent=indent, subsequent_indent=indent)


def model_lines(name: str, rows: Mapping[tuple[int, ...], Sequence[Fraction]]) -> list[str]:
    out = [f"  {name}:"]
    for prefix in sorted(rows, key=lambda p: (len(p), p)):
        shown = "(" + ", ".join(map(str, prefix)) + ")"
        out.append(f"    after {shown:<12} {vector_text(rows[prefix])}")
    return out
