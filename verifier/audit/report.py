"""An audit's result as text for people and as JSON for programs.

The headline and the coverage are the same for every kind; the witness is
shown by the kind's own record (:mod:`specexact.audit.kinds`).
"""

from __future__ import annotations

from typing import Any

from specexact.audit.kinds import get_kind
from specexact.audit.options import AuditResult
from specexact.audit.render import wrap

__all__ = ["counterexample_json", "result_human", "result_json"]


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
                          wrap(result.coverage)])
    lines = [f"FAIL  {result.name} ({_label(result)}): {found.reason}",
             wrap(f"after {result.cases} exact cases. {result.coverage}"), ""]
    lines.extend(kind.witness_lines(result, found, verbose))
    return "\n".join(lines)


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
    if kind.has_horizon:
        data["horizon"] = result.horizon
    if kind.details is not None:
        data.update(kind.details(result))
    if "processors" in kind.options:
        pipeline = result.options.processors
        data["processors"] = None if pipeline is None else pipeline.to_json()
    return data
