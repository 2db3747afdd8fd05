"""``specexact catalogue``, ``specexact explain NAME`` and ``specexact audit`` (no target)."""

from __future__ import annotations

import json
import re
import textwrap
import time
from collections.abc import Sequence
from typing import Any, TextIO

from specexact.audit import AuditOptions, Finding, audit, model_lines
from specexact.errors import InvalidArgument, SamplerFailure, SpecexactError, Undecided
from specexact.exact.verdict import check_sampler
from specexact.executors import Executor, Lost
from specexact.frontends.cli.progress import Progress
from specexact.tables import render_table
from specexact.witness import (
    SamplerWitness,
    fraction_text,
    sampler_case_json,
    step_witness_json,
    vector_text,
)

__all__ = ["audit_catalogue", "explain", "list_catalogue"]


def _entries() -> Sequence[Any]:
    from specexact.counterexamples import catalogue

    return tuple(catalogue())


def _left_out() -> tuple[str, ...]:
    from specexact.counterexamples import left_out

    return left_out()


def _get(name: str) -> Any:
    from specexact.counterexamples import get

    try:
        return get(name)
    except KeyError as exc:
        message = exc.args[0] if exc.args else f"no catalogue entry named {name!r}"
        msg = f"{message} (list them with: specexact catalogue)"
        if name.startswith("batch-") and _left_out():  # a batch kernel's, without torch
            msg += "; left out here: " + "; ".join(_left_out())
        raise InvalidArgument(msg) from None


def expected_label(entry: Any) -> str:
    """'lossless', 'wrong' or 'lossy' (lossy by design: quantified, never blessed)."""
    if entry.lossless:
        return "lossless"
    return "lossy" if getattr(entry, "lossy_by_design", False) else "wrong"


def _first_sentence(text: str) -> str:
    """Up to the first full stop followed by a capital ("i.i.d. drafts" is not an end)."""
    flat = " ".join(text.split())
    match = re.search(r"\.\s+(?=[A-Z(])", flat)
    return flat if match is None else flat[: match.start() + 1]


def _witness_text(data: dict[str, Any]) -> str:
    witness = data["witness"]
    if witness is None:
        return ""
    if "p" in witness:
        return f"p = ({', '.join(witness['p'])}), q = ({', '.join(witness['q'])})"
    if "target_vocab" in witness:
        return (f"target vocabulary ({', '.join(witness['target_vocab'])}), draft "
                f"({', '.join(witness['draft_vocab'])}), horizon {witness['horizon']} "
                f"character{'s' if witness['horizon'] != 1 else ''}")
    return f"models on {len(witness['target'])} target prefixes, horizon {witness['horizon']}"


# --------------------------------------------------------------------------
# catalogue
# --------------------------------------------------------------------------


def _witness_json(entry: Any) -> Any:
    witness = entry.witness
    if witness is None:
        return None
    if isinstance(witness, SamplerWitness):
        return witness.to_json()
    if entry.kind == "cross-vocab":
        return _crossvocab_witness(entry)[0]
    return _step_witness(entry)[0]


def _crossvocab_witness(entry: Any) -> tuple[dict[str, Any], list[str]]:
    """A cross-vocabulary rule's stored witness, re-run exactly: JSON and the evidence."""
    from specexact.crossvocab import check_crossvocab_step

    witness = entry.witness
    verdict = check_crossvocab_step(entry.rule, witness.target, witness.draft, witness.horizon)
    found = Finding("cross-vocab", witness, verdict)
    data: dict[str, Any] = {**verdict.to_json(), "reproduced": not verdict.passed,
                            "reason": found.reason}
    lines = [f"witness (horizon {verdict.horizon} characters):", *verdict.models_lines(), "",
             found.crash or found.table(), "",
             f"{'FAIL' if not verdict.passed else 'PASS'}: {found.reason}"]
    return data, lines


def _step_witness(entry: Any) -> tuple[dict[str, Any], list[str]]:
    """A step rule's stored witness, re-run exactly: JSON and the human evidence."""
    from specexact import check_step

    witness = entry.witness
    verdict = check_step(entry.rule, witness.target, witness.draft, witness.horizon,
                         uniform_bits=getattr(entry, "uniform_bits", None),
                         processors=getattr(entry, "processors", None))
    found = Finding("step", witness, verdict)
    processors = verdict.processors
    data: dict[str, Any] = {
        **step_witness_json(verdict.target_rows, verdict.draft_rows, verdict.horizon,
                            found.expected, found.actual, processors),
        "tv": None if found.tv is None else fraction_text(found.tv),
        "reproduced": not verdict.passed, "reason": found.reason}
    under = [] if processors is None else [f"processors: {processors}"]
    lines = [f"witness (horizon {verdict.horizon}):", *under,
             *model_lines("target", verdict.target_rows),
             *model_lines("draft", verdict.draft_rows), "", found.table(), "",
             f"{'FAIL' if not verdict.passed else 'PASS'}: {found.reason}"]
    return data, lines


def _entry_json(entry: Any) -> dict[str, Any]:
    max_tv = getattr(entry, "max_tv", None)
    return {
        "name": entry.name,
        "kind": entry.kind,
        "lossless": bool(entry.lossless),
        "lossy_by_design": bool(getattr(entry, "lossy_by_design", False)),
        "max_tv": None if max_tv is None else fraction_text(max_tv),
        "uniform_bits": getattr(entry, "uniform_bits", None),
        "processors": None if getattr(entry, "processors", None) is None
        else entry.processors.to_json(),
        "source": entry.source,
        "summary": " ".join(entry.summary.split()),
        "witness": _witness_json(entry),
    }


def list_catalogue(*, as_json: bool, out: TextIO, markdown: bool = False) -> int:
    entries = _entries()
    if as_json:
        json.dump([_entry_json(e) for e in entries], out, indent=2)
        out.write("\n")
        return 0
    if markdown:
        lines = ["| rule | kind | verdict | minimal witness | what it does |",
                 "|---|---|---|---|---|"]
        for entry in entries:
            data = _entry_json(entry)
            verdict = expected_label(entry)
            if data["max_tv"] is not None:
                verdict += f" (max TV {data['max_tv']})"
            summary = _first_sentence(entry.summary).replace("|", "\\|")
            witness = _witness_text(data)
            if getattr(entry, "processors", None) is not None:
                witness = f"{witness}; " if witness else ""
                witness += f"under {entry.processors}".replace("|", "\\|")
            lines.append(f"| `{entry.name}` | {entry.kind} | {verdict} | "
                         f"{witness} | {summary} |")
        out.write("\n".join(lines) + "\n")
        return 0
    rows = [("rule", "kind", "verdict", "source")]
    rows += [(e.name, e.kind, expected_label(e), e.source or "") for e in entries]
    out.write(_table(rows) + "\n")
    lossless = sum(1 for e in entries if e.lossless)
    out.write(f"\n{len(entries)} rules: {lossless} lossless, {len(entries) - lossless} not. "
              "Details: specexact explain NAME\n")
    for line in _left_out():
        out.write(f"left out: {line}\n")
    return 0


# --------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------


def explain(name: str, *, as_json: bool, out: TextIO) -> int:
    entry = _get(name)
    data = _entry_json(entry)
    witness = entry.witness
    evidence: list[str] = []
    if isinstance(witness, SamplerWitness):
        verdict = check_sampler(entry.rule, witness.p, witness.q,
                                uniform_bits=getattr(entry, "uniform_bits", None))
        data["witness"].update({
            **sampler_case_json(verdict.p, verdict.q, verdict.expected, verdict.actual),
            "tv": None if verdict.tv is None else fraction_text(verdict.tv),
            "reproduced": not verdict.passed,
            "reason": verdict.reason,
        })
        evidence = [f"witness: p = {vector_text(verdict.p)}, q = {vector_text(verdict.q)}",
                    "", verdict.table(), "", f"{'FAIL' if not verdict.passed else 'PASS'}: "
                    f"{verdict.reason}"]
    elif witness is not None and entry.kind == "cross-vocab":
        data["witness"], evidence = _crossvocab_witness(entry)
    elif witness is not None:
        data["witness"], evidence = _step_witness(entry)
    if as_json:
        json.dump(data, out, indent=2)
        out.write("\n")
        return 0
    label = expected_label(entry)
    head = {"lossless": "lossless", "wrong": "WRONG", "lossy": "lossy by design"}[label]
    out.write(f"{entry.name}  ({entry.kind}, {head})\n")
    if entry.source:
        out.write(f"source: {entry.source}\n")
    if data["uniform_bits"]:
        out.write(f"judged with rng.random() on the {data['uniform_bits']}-bit grid\n")
    if data["max_tv"] is not None:
        out.write(f"largest exact TV found: {data['max_tv']}\n")
    if getattr(entry, "processors", None) is not None:
        out.write(f"judged under the processors: {entry.processors}\n")
    out.write("\n" + textwrap.fill(" ".join(entry.summary.split()), width=88) + "\n")
    if evidence:
        out.write("\n" + "\n".join(evidence) + "\n")
    elif entry.lossless:
        path = _importable(entry.rule)
        flag = " --kind cross-vocab" if entry.kind == "cross-vocab" else ""
        command = f"specexact audit {path}{flag}" if path else \
            "specexact audit (it audits the whole catalogue)"
        out.write("\nNo witness: the rule preserves the target on every case the search "
                  f"tries.\nRe-check it with: {command}\n")
    return 0


def _importable(rule: Any) -> str | None:
    """``module:function`` naming ``rule`` when that path loads it back, else None."""
    module, name = getattr(rule, "__module__", None), getattr(rule, "__qualname__", None)
    if not module or not name or "<" in name:
        return None
    from specexact.frontends.targets import load_target

    try:
        loaded = load_target(f"{module}:{name}")
    except SpecexactError:
        return None
    return f"{module}:{name}" if loaded is rule else None


# --------------------------------------------------------------------------
# audit with no target: the whole catalogue
# --------------------------------------------------------------------------


def audit_entry(name: str, examples: int | None, seed: int | None) -> dict[str, Any]:
    """Audit one catalogue rule with the default search; a picklable row."""
    entry = _get(name)
    step = entry.kind == "step"
    options = AuditOptions(kind=entry.kind, examples=examples, seed=seed,
                           uniform_bits=getattr(entry, "uniform_bits", None),
                           stateful=step and bool(getattr(entry, "stateful", False)),
                           one_hot_target=step and getattr(entry, "target_kind", "any")
                           == "one-hot", processors=getattr(entry, "processors", None),
                           vocab_sizes=getattr(entry, "vocab_sizes", None))
    row: dict[str, Any] = {"rule": entry.name, "kind": entry.kind,
                           "expected": expected_label(entry)}
    try:
        result = audit(entry.rule, options, name=entry.name)
    except Undecided as exc:
        row.update(found="undecided", detail=str(exc).splitlines()[0], cases=None, tv=None)
    except SamplerFailure as exc:
        row.update(found="wrong", detail=str(exc).splitlines()[0], cases=None, tv=None)
    except Exception as exc:
        row.update(found="error", detail=f"{type(exc).__name__}: {exc}".splitlines()[0],
                   cases=None, tv=None)
    else:
        found = result.counterexample
        row["cases"] = result.cases
        if found is None:
            row.update(found="lossless", detail="", tv=None)
        else:
            tv = found.tv
            row.update(found="wrong", tv=None if tv is None else fraction_text(tv),
                       detail=found.reason, finding=_finding(found))
            if isinstance(found.witness, SamplerWitness):
                row["witness"] = found.witness.to_json()
    expected_pass = row["expected"] == "lossless"
    row["match"] = row["found"] in ("lossless", "wrong") \
        and (row["found"] == "lossless") == expected_pass
    return row


def _finding(found: Any) -> str:
    """What kind of violation: crash, ids outside the vocabulary, support, cache, or bias."""
    reason = found.reason
    if reason.startswith("crash"):
        return "crash"
    if "outside the vocabulary" in reason or "non-token" in reason:
        return "invalid ids"
    if "where p = 0" in reason or "support" in reason:
        return "support"
    if "cache" in reason:
        return "cache"
    return "bias"


def _lost_row(name: str, lost: Lost) -> dict[str, Any]:
    """The row of a rule whose task no worker finished: undecided, never a verdict."""
    entry = _get(name)
    return {"rule": entry.name, "kind": entry.kind, "expected": expected_label(entry),
            "found": "undecided", "detail": str(lost), "cases": None, "tv": None,
            "match": False}


def audit_catalogue(*, as_json: bool, executor: Executor, examples: int | None,
                    seed: int | None, out: TextIO, err: TextIO,
                    names: Sequence[str] | None = None) -> int:
    """One task per rule (``names``, default the whole catalogue) on ``executor``; the
    rows in the catalogue's order, whatever the executor (no wall time in them: the
    report is the same bytes everywhere)."""
    names = [e.name for e in _entries()] if names is None else list(names)
    start = time.perf_counter()
    with Progress("auditing the catalogue", enabled=None if not as_json else False,
                  stream=err) as progress:
        answers = executor.map(audit_entry, [(n, examples, seed) for n in names],
                               progress=lambda done, detail: progress(done, len(names),
                                                                      detail))
    rows = [_lost_row(name, a) if isinstance(a, Lost) else a
            for name, a in zip(names, answers, strict=True)]
    elapsed = time.perf_counter() - start
    mismatches = [r for r in rows if not r["match"]]
    if as_json:
        # No timing in the report: the same command gives the same bytes under any load.
        document: dict[str, Any] = {"verdict": "pass" if not mismatches else "fail",
                                    "rules": rows, "mismatches": len(mismatches)}
        left_out = _left_out()
        if left_out:
            document["left_out"] = list(left_out)
        json.dump(document, out, indent=2)
        out.write("\n")
        return 0 if not mismatches else 1
    table = [("rule", "kind", "expected", "found", "evidence", "cases", "match")]
    for r in rows:
        evidence = r.get("finding", "")
        if r["tv"] and r["tv"] != "0":
            evidence = f"{evidence}, TV {r['tv']}" if evidence != "bias" else f"TV {r['tv']}"
        table.append((r["rule"], r["kind"], r["expected"], r["found"], evidence,
                      "" if r["cases"] is None else str(r["cases"]),
                      "ok" if r["match"] else "MISMATCH"))
    out.write(_table(table) + "\n\n")
    for r in mismatches:
        out.write(f"MISMATCH {r['rule']}: expected {r['expected']}, found {r['found']}"
                  f"{': ' + r['detail'] if r['detail'] else ''}\n")
    verdict = "every verdict matches" if not mismatches else \
        f"{len(mismatches)} of {len(rows)} verdicts do not match"
    out.write(f"{len(rows)} rules audited: {verdict}\n")
    for line in _left_out():
        out.write(f"left out: {line}\n")
    if getattr(err, "isatty", lambda: False)():
        err.write(f"(took {elapsed:.1f} s)\n")
    return 0 if not mismatches else 1


def _table(rows: Sequence[Sequence[str]]) -> str:
    return render_table(rows[0], rows[1:], align="left")
