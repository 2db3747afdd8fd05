"""Turning audit results into text for people and JSON for programs.

JSON writes every probability as an exact fraction string ("3/10"), token
ids as strings ("2"), token sequences and prefixes as comma-joined ids
("0,1"; "" for the empty prefix).
"""

from __future__ import annotations

import textwrap
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from verifier.doors.audit import AuditResult, SamplerCounterexample, StepCounterexample

__all__ = [
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


def fraction_text(value: Any) -> str:
    """An exact probability as a string: ``Fraction(3, 10)`` -> ``"3/10"``."""
    return str(value if isinstance(value, Fraction) else Fraction(value))


def vector_text(values: Sequence[Any]) -> str:
    return "(" + ", ".join(fraction_text(v) for v in values) + ")"


def outcome_key(outcome: Hashable) -> str:
    """A token id or a token sequence as a JSON key: ``2`` -> "2", ``(0, 1)`` -> "0,1"."""
    if isinstance(outcome, bool):
        return repr(outcome)
    if isinstance(outcome, int):
        return str(outcome)
    if isinstance(outcome, tuple):
        return ",".join(outcome_key(x) for x in outcome)
    return repr(outcome)


def prefix_key(prefix: Sequence[int]) -> str:
    return ",".join(str(t) for t in prefix)


def law_json(law: Mapping[Hashable, Fraction] | None,
             keys: Sequence[Hashable] = ()) -> dict[str, str]:
    """``{outcome: probability}`` with string keys; ``keys`` are listed even when 0."""
    out: dict[str, str] = {outcome_key(k): "0" for k in keys}
    if law is not None:
        for outcome, prob in law.items():
            out[outcome_key(outcome)] = fraction_text(prob)
    return out


def rows_json(rows: Mapping[tuple[int, ...], Sequence[Fraction]]) -> dict[str, list[str]]:
    """A model as ``{"0,1": ["1/2", "1/2"], ...}``, shortest prefixes first."""
    ordered = sorted(rows, key=lambda prefix: (len(prefix), prefix))
    return {prefix_key(prefix): [fraction_text(x) for x in rows[prefix]] for prefix in ordered}


def counterexample_json(result: AuditResult) -> dict[str, Any] | None:
    found = result.counterexample
    if found is None:
        return None
    if isinstance(found, SamplerCounterexample):
        vocab = range(len(found.p))
        verdict = found.verdict
        crash = verdict.crash
        data: dict[str, Any] = {
            "p": [fraction_text(x) for x in found.p],
            "q": [fraction_text(x) for x in found.q],
            "expected": law_json(found.expected, vocab),
            "actual": law_json(found.actual, vocab if found.actual is not None else ()),
            "tv": None if found.tv is None else fraction_text(found.tv),
            "reason": found.reason,
        }
        comparison = verdict.comparison
        if comparison is not None:
            data["support_violation"] = fraction_text(comparison.support_violation)
            data["invalid_mass"] = fraction_text(comparison.invalid_mass)
        if crash is not None:
            data["crash"] = str(crash)
        return data
    assert isinstance(found, StepCounterexample)
    # A crash leaves no comparison, hence no expected law to list.
    keys = list(found.expected) if found.expected is not None else []
    step: dict[str, Any] = {
        "target": rows_json(found.target),
        "draft": rows_json(found.draft),
        "horizon": found.horizon,
        "expected": law_json(found.expected, keys),
        "actual": law_json(found.actual, keys if found.actual is not None else ()),
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
    if result.kind == "step":
        data["horizon"] = result.options.depth
    return data


def result_human(result: AuditResult) -> str:
    """The report printed by ``specexact audit TARGET``."""
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
    if isinstance(found, SamplerCounterexample):
        lines.append("minimal witness:")
        lines.append(f"  p = {vector_text(found.p)}")
        lines.append(f"  q = {vector_text(found.q)}")
        lines.append("")
        lines.append(found.table())
        if found.tv is not None:
            lines.append("")
            lines.append(f"TV(actual, p) = {found.tv} ~ {float(found.tv):.6g}")
        if found.verdict.crash is not None:
            lines.append("")
            lines.append(str(found.verdict.crash))
    else:
        lines.append(f"minimal witness (models over every prefix the run asked for, "
                     f"horizon {found.horizon}):")
        lines.extend(model_lines("target", found.target))
        lines.extend(model_lines("draft", found.draft))
        lines.append("")
        if found.crash is not None:
            lines.append(found.crash)
        else:
            lines.append("joint law of the first tokens emitted:")
            lines.append(found.table())
            if found.tv is not None:
                lines.append("")
                lines.append(f"TV(actual, target) = {found.tv} ~ {float(found.tv):.6g}")
    return "\n".join(lines)


def _wrap(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=88, break_on_hyphens=False)


def model_lines(name: str, rows: Mapping[tuple[int, ...], Sequence[Fraction]]) -> list[str]:
    out = [f"  {name}:"]
    for prefix in sorted(rows, key=lambda p: (len(p), p)):
        shown = "(" + ", ".join(map(str, prefix)) + ")"
        out.append(f"    after {shown:<12} {vector_text(rows[prefix])}")
    return out
