"""What a report says: the same for any --jobs, clean JSON on stdout, small masses exact and
readable, nothing written to the working directory.

Regressions from reviews of the user-facing doors: each test names the bug it guards.
"""

from __future__ import annotations

import json
import os
import sys
import types
from fractions import Fraction
from pathlib import Path

import pytest

from specexact.frontends.cli import main
from tests.helpers import run_cli as run
from tests.helpers import run_specexact, write_module

TARGETS = '''
print("module-level chatter")


def textbook(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])


def naive(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(p)
'''

STEPS = '''
def residual(p, q):
    return [max(a - b, 0) for a, b in zip(p, q)]


def plain(target, draft, prefix, rng):
    return (rng.categorical(target(prefix)),)


def stateful_chain(target, draft, prefix, rng):
    q = draft.next_distribution()
    x = rng.categorical(q)
    p = target.next_distribution()
    if rng.random() * q[x] < p[x]:
        target.append(x)
        draft.append(x)
        y = rng.categorical(target.next_distribution())
        target.append(y)
        draft.append(y)
        return (x, y)
    y = rng.categorical(residual(p, q))
    target.append(y)
    draft.append(y)
    return (y,)
'''


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_module(tmp_path_factory.mktemp("reports"), "report_targets", TARGETS)


@pytest.fixture
def steps(tmp_path: Path) -> str:
    return str(write_module(tmp_path, "report_steps", STEPS))


@pytest.mark.parametrize("target", ["specexact.counterexamples.samplers:naive_resample",
                                    "specexact.counterexamples.samplers:textbook"])
@pytest.mark.slow
def test_jobs_never_change_the_report(target, capsys):
    reports = []
    for jobs in ("1", "3"):
        code = main(["audit", target, "--json", "--examples", "20", "--jobs", jobs])
        reports.append((code, capsys.readouterr().out))
    assert reports[0] == reports[1]


def test_tiny_support_masses_print_compactly_and_stay_exact_in_json(capsys):
    from specexact.tables import exact_text

    assert exact_text(Fraction(1, 2**126)) == "2^-126 ~ 1.18e-38"
    assert exact_text(Fraction(3, 2**126)) == "3*2^-126 ~ 3.53e-38"
    assert exact_text(Fraction(1, 2**24)) == "1/16777216"  # short ones stay whole
    assert exact_text(Fraction(1, 3**60)) == "~2.36e-29"

    def floor(p, q, rng):  # a residual floor at float32's smallest normal, as an engine has it
        x = rng.categorical(q)
        if rng.random() * q[x] < p[x]:
            return x
        tiny = Fraction(1, 2**126)
        return rng.categorical([max(a - b, tiny) for a, b in zip(p, q, strict=True)])

    module = types.ModuleType("tiny_floor")
    module.floor = floor
    sys.modules["tiny_floor"] = module
    try:
        assert main(["audit", "tiny_floor:floor", "--examples", "0"]) == 1
        text = capsys.readouterr().out
        # the mass is 1/(2^126 + 1) after normalisation: shown by its value
        assert "mass ~1.18e-38 on tokens where p = 0" in text
        assert "85070591730234615865843651857942052865" not in text.split("TV(actual")[0]
        assert main(["audit", "tiny_floor:floor", "--examples", "0", "--json"]) == 1
        data = json.loads(capsys.readouterr().out)
        assert "/" in data["counterexample"]["support_violation"]
    finally:
        del sys.modules["tiny_floor"]


def test_json_stdout_stays_clean_when_the_module_prints_at_import(targets, capsys):
    # The report goes to the real stdout, where module-level prints used to land too.
    code = main(["audit", f"{targets}:textbook", "--examples", "1", "--vocab-sizes", "2",
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert json.loads(captured.out)["verdict"] == "pass"
    assert "module-level chatter" in captured.err


@pytest.mark.slow
def test_jobs_coverage_accounts_for_every_size(targets):
    # Issue 13: --jobs no longer splits one target's search per vocabulary size
    # (that made the report depend on N); the coverage is the one search's.
    code, out, _ = run("audit", f"{targets}:naive", "--jobs", "2", "--vocab-sizes", "2..3",
                       "--examples", "1", "--json")
    assert code == 1
    coverage = json.loads(out)["coverage"]
    assert "sizes 2..3:" in coverage
    assert (code, out) == run("audit", f"{targets}:naive", "--vocab-sizes", "2..3",
                              "--examples", "1", "--json")[:2]


def test_a_passing_audit_writes_nothing_into_the_working_directory(tmp_path):
    # A rule in a file of the user's own: Hypothesis collects constants from such
    # local modules and caches them in its storage directory.
    rules = write_module(tmp_path, "rules", """
        def textbook(p, q, rng):
            x = rng.categorical(q)
            if rng.random() * q[x] < p[x]:
                return x
            return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
    """)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("HYPOTHESIS_STORAGE_DIRECTORY", "XDG_CACHE_HOME")}
    env["HOME"] = str(tmp_path / "home")
    done = run_specexact("audit", f"{rules}:textbook", "--examples", "5", cwd=work, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(work.iterdir()) == []
    assert not (tmp_path / ".hypothesis").exists()


@pytest.mark.slow
def test_examples_zero_runs_the_edge_cases_only(steps: str) -> None:
    # Hypothesis refuses max_examples=0; the audit used to end in an internal error.
    code, out, err = run("audit", f"{steps}:plain", "--examples", "0")
    assert code == 0, out + err
    assert "Hypothesis" not in out


@pytest.mark.slow
def test_cli_audits_stateful_steps(steps: str) -> None:
    code, out, err = run("audit", f"{steps}:stateful_chain", "--stateful", "--examples", "2")
    assert code == 0, out + err
    # Without --stateful: no verdict (the tool handed stateless models, the step has no
    # bug), saying how to audit it. Before: FAIL, a crash blamed on the step.
    code, out, err = run("audit", f"{steps}:stateful_chain", "--examples", "0")
    assert code == 2 and out == "" and "audit it with --stateful" in err
