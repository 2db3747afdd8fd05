"""One versioned report document for every command, and the formats rendered from it.

Every command builds its report as one JSON-shaped object (its *payload*: the fields
documented per command).  :func:`build_document` wraps it in the envelope every command
shares, validated by the published schema (``report.schema.json``, shipped with the
package: :func:`report_schema`):

* ``schema`` and ``schema_version``: which schema the document follows;
* ``tool``: ``{"name": "specexact", "version": ...}``;
* ``command``, ``verdict`` (``pass``, ``fail``, ``undecided``, ``error``, or null for the
  commands that judge nothing) and ``exit_code``;
* ``checks``: one entry per judged thing (a target, a catalogue rule, a mutant) with its
  verdict, message, rule id and source location.

The machine formats (``json``, ``junit``, ``sarif``, ``github``) are rendered from that
document by :func:`render`; findings point at the audited function's file and line.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any

from specexact.frontends.targets import target_location

__all__ = [
    "FORMATS",
    "MACHINE_FORMATS",
    "RULES",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "build_document",
    "render",
    "report_schema",
]

#: The version of the report document's schema; it changes when a field changes meaning
#: or is removed (new fields keep it).
SCHEMA_VERSION = 1
#: The ``$id`` of ``report.schema.json`` and the ``schema`` field of every document.
SCHEMA_ID = "urn:specexact:report-schema:1"
FORMATS = ("text", "json", "junit", "sarif", "github")
MACHINE_FORMATS = FORMATS[1:]
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

#: The rule id of each kind of check that is not a pass, and what it means.
RULES: dict[str, str] = {
    "violation": "the exact law of the code differs from the target's (a bias, mass on a "
                 "token with p = 0, an id outside the vocabulary, a cache out of step, or a "
                 "crash on valid input)",
    "undecided": "no verdict was possible (budget, hidden randomness, an unsupported "
                 "operation, the time limit): not a pass",
    "error": "a usage error or an internal error: nothing was judged",
    "catalogue-mismatch": "a catalogue rule's audit disagrees with its catalogued verdict",
    "surviving-mutant": "a mutant specexact refutes passes the project's own tests",
}
_LEVELS = {"fail": "error", "undecided": "warning", "error": "error"}
_PROVE = {"proved": "pass", "refuted": "fail", "undecided": "undecided", "error": "error"}


def _version() -> str:
    try:
        return importlib.metadata.version("specexact")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "unknown"


def report_schema() -> dict[str, Any]:
    """The JSON schema of the report document (``report.schema.json``)."""
    text = importlib.resources.files("specexact.frontends").joinpath(
        "report.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


# --------------------------------------------------------------------------
# the document
# --------------------------------------------------------------------------


def _check(name: str, verdict: str, message: str, *, target: str | None, rule: str | None,
           location: tuple[str, int] | None) -> dict[str, Any]:
    return {"name": name, "target": target, "verdict": verdict,
            "rule": None if verdict == "pass" else rule or verdict,
            "message": message,
            "location": None if location is None
            else {"file": location[0], "line": location[1]}}


def _locate(target: Any) -> tuple[str, int] | None:
    return target_location(target) if isinstance(target, str) else None


def _witness_text(example: Mapping[str, Any]) -> str:
    if "p" in example and "q" in example:
        return f" at p = ({', '.join(example['p'])}), q = ({', '.join(example['q'])})"
    return ""


def _audit_check(data: Mapping[str, Any]) -> dict[str, Any]:
    target = data.get("target")
    verdict = str(data.get("verdict"))
    example = data.get("counterexample") or {}
    kind = data.get("kind") or "target"
    if data.get("error"):
        message = str(data["error"])
    elif verdict == "pass":
        message = f"PASS ({kind}) after {data.get('cases')} exact cases: {data.get('coverage')}"
    else:
        reason = example.get("reason") or "violation found"
        message = f"{verdict.upper()} ({kind}): {reason}{_witness_text(example)}"
    return _check(str(target or "audit"), verdict, message, target=target,
                  rule="violation" if verdict == "fail" else verdict,
                  location=_locate(target))


def _prove_check(data: Mapping[str, Any]) -> dict[str, Any]:
    target = data.get("target")
    verdict = _PROVE.get(str(data.get("status")), "error")
    message = str(data.get("summary") or data.get("message") or data.get("status"))
    return _check(str(target or "prove"), verdict, message, target=target,
                  rule="violation" if verdict == "fail" else verdict,
                  location=_locate(target))


def _catalogue_checks(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    checks = []
    for row in data["rules"]:
        detail = f": {row['detail']}" if row.get("detail") else ""
        message = f"expected {row['expected']}, found {row['found']}{detail}"
        checks.append(_check(str(row["rule"]), "pass" if row.get("match") else "fail",
                             message, target=None, rule="catalogue-mismatch",
                             location=None))
    return checks


def _mutant_check(data: Mapping[str, Any], mutant: Mapping[str, Any]) -> dict[str, Any]:
    target = data.get("target")
    name = f"{mutant['id']} {mutant['operator']} {mutant['location']}"
    if mutant.get("equivalent"):
        verdict, message = "pass", "equivalent: specexact passes this mutant"
    elif mutant.get("tests") != "survived":
        verdict, message = "pass", f"the tests kill this mutant ({mutant.get('tests')})"
    elif mutant.get("specexact") == "fail":
        verdict = "fail"
        message = (f"mutant {name} survives the tests ({data.get('tests')}) but specexact "
                   f"refutes it: {mutant.get('detail')}")
    else:
        verdict = "undecided"
        message = f"mutant {name} survives the tests; specexact has no verdict on it"
    location = _locate(target)
    if location is not None and isinstance(mutant.get("line"), int):
        location = (location[0], mutant["line"])
    return _check(name, verdict, message, target=target, rule="surviving-mutant",
                  location=location)


def _checks(command: str | None, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    if command == "audit" and "targets" in data:
        return [c for item in data["targets"] for c in _checks("audit", item)]
    if data.get("error") and command not in ("audit", "prove"):
        verdict = str(data.get("verdict") or "error")
        return [_check(f"specexact {command or ''}".strip(), verdict, str(data["error"]),
                       target=data.get("target"), rule=verdict, location=None)]
    if command == "audit" and "mismatches" in data:
        return _catalogue_checks(data)
    if command == "audit":
        return [_audit_check(data)]
    if command == "prove":
        return [_prove_check(data)]
    if command == "mutate":
        return [_mutant_check(data, m) for m in data.get("mutants", ())]
    return []


def _verdict(command: str | None, data: Mapping[str, Any]) -> str | None:
    if command == "prove" and "verdict" not in data:
        return _PROVE.get(str(data.get("status")), "error")
    verdict = data.get("verdict")
    return None if verdict is None else str(verdict)


def build_document(command: str | None, payload: Any, *, exit_code: int) -> dict[str, Any]:
    """The report document of ``command``: the envelope, then the command's own fields
    (``payload``; a list, as ``catalogue`` lists its rules, goes under ``rules``), then
    ``exit_code`` and ``checks``."""
    data: dict[str, Any] = {"rules": payload} if isinstance(payload, list) else dict(payload)
    data.pop("command", None)
    verdict = _verdict(command, data)
    data.pop("verdict", None)
    document: dict[str, Any] = {"schema": SCHEMA_ID, "schema_version": SCHEMA_VERSION,
                                "tool": {"name": "specexact", "version": _version()},
                                "command": command, "verdict": verdict}
    document.update(data)
    document["exit_code"] = exit_code
    document["checks"] = _checks(command, {**data, "verdict": verdict})
    return document


# --------------------------------------------------------------------------
# the formats
# --------------------------------------------------------------------------


def _findings(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in document["checks"] if c["verdict"] != "pass"]


def _render_json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


def _junit(document: Mapping[str, Any]) -> str:
    checks = list(document["checks"])
    command = document["command"] or "specexact"
    failures = sum(c["verdict"] == "fail" for c in checks)
    errors = sum(c["verdict"] in ("undecided", "error") for c in checks)
    suites = ET.Element("testsuites", name="specexact", tests=str(len(checks)),
                        failures=str(failures), errors=str(errors))
    suite = ET.SubElement(suites, "testsuite", name=f"specexact {command}",
                          tests=str(len(checks)), failures=str(failures),
                          errors=str(errors), skipped="0")
    for check in checks:
        attributes = {"classname": f"specexact.{command}", "name": check["name"]}
        if check["location"] is not None:
            attributes.update(file=check["location"]["file"],
                              line=str(check["location"]["line"]))
        case = ET.SubElement(suite, "testcase", attributes)
        if check["verdict"] != "pass":
            tag = "failure" if check["verdict"] == "fail" else "error"
            first = check["message"].splitlines()[0] if check["message"] else tag
            element = ET.SubElement(case, tag, message=first, type=check["rule"])
            element.text = check["message"]
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _artifact(file: str) -> dict[str, str]:
    if file.startswith("/"):
        return {"uri": "file://" + urllib.parse.quote(file)}
    return {"uri": urllib.parse.quote(file), "uriBaseId": "%SRCROOT%"}


def _sarif(document: Mapping[str, Any]) -> str:
    findings = _findings(document)
    used = sorted({f["rule"] for f in findings if f["rule"] != "error"})
    rules = [{"id": rule, "name": rule.title().replace("-", ""),
              "shortDescription": {"text": RULES[rule]},
              "defaultConfiguration": {"level": "warning" if rule == "undecided"
                                       else "error"}}
             for rule in used]
    results = []
    for finding in findings:
        if finding["rule"] == "error":
            continue
        result: dict[str, Any] = {"ruleId": finding["rule"],
                                  "ruleIndex": used.index(finding["rule"]),
                                  "level": _LEVELS.get(finding["verdict"], "error"),
                                  "message": {"text": finding["message"]}}
        if finding["location"] is not None:
            result["locations"] = [{"physicalLocation": {
                "artifactLocation": _artifact(finding["location"]["file"]),
                "region": {"startLine": finding["location"]["line"]}}}]
        result["properties"] = {"name": finding["name"], "verdict": finding["verdict"]}
        results.append(result)
    invocation: dict[str, Any] = {"executionSuccessful": document["verdict"] != "error",
                                  "exitCode": document["exit_code"]}
    notes = [{"level": "error", "message": {"text": f["message"]}}
             for f in findings if f["rule"] == "error"]
    if notes:
        invocation["toolExecutionNotifications"] = notes
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "specexact", "version": document["tool"]["version"],
                            "rules": rules}},
        "invocations": [invocation],
        "results": results,
    }]}
    return json.dumps(log, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github(document: Mapping[str, Any]) -> str:
    """GitHub Actions workflow commands: one annotation per finding, then a summary."""
    command = document["command"] or "specexact"
    lines = []
    for finding in _findings(document):
        level = "warning" if finding["verdict"] == "undecided" else "error"
        properties = []
        if finding["location"] is not None:
            properties += [f"file={_escape_property(finding['location']['file'])}",
                           f"line={finding['location']['line']}"]
        title = f"specexact {command}: {finding['verdict']} ({finding['rule']})"
        properties.append(f"title={_escape_property(title)}")
        lines.append(f"::{level} {','.join(properties)}::{_escape_data(finding['message'])}")
    checks = document["checks"]
    counts = {v: sum(c["verdict"] == v for c in checks)
              for v in ("pass", "fail", "undecided", "error")}
    shown = ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "nothing judged"
    verdict = document["verdict"] or "done"
    lines.append(f"specexact {command}: {verdict} ({shown}); exit {document['exit_code']}")
    return "\n".join(lines) + "\n"


_RENDERERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "json": _render_json, "junit": _junit, "sarif": _sarif, "github": _github}


def render(document: Mapping[str, Any], fmt: str) -> str:
    """``document`` as ``fmt`` (one of :data:`MACHINE_FORMATS`)."""
    return _RENDERERS[fmt](document)

