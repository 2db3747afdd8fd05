"""A mutation run end to end on a tiny project: the copy, the user's tests, the audit's
verdict on each mutant, the scores, and the original left untouched."""

from __future__ import annotations

import json
import shlex
import sys
import textwrap

import pytest

from specexact.errors import InvalidArgument
from specexact.mutation import MUTANT_ENV, mutate, report_human, report_json
from tests.helpers import run_cli

SAMPLER = textwrap.dedent('''\
    def textbook(p, q, rng):
        x = rng.categorical(q)
        if rng.random() < min(1, p[x] / q[x]):  # the acceptance test
            return x
        return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
''')

# A check in the engines' style: it looks at what comes out, never at its law.  It
# catches only the mutant that accepts every draft (the draft's token 1 comes out).
CHECK = textwrap.dedent('''\
    import random
    import sys
    from fractions import Fraction as F

    from sampler import textbook

    class Rng:
        def __init__(self):
            self.r = random.Random(0)
        def random(self):
            return self.r.random()
        def categorical(self, w):
            return self.r.choices(range(len(w)), weights=[float(x) for x in w])[0]

    rng = Rng()
    sys.exit(any(textbook([F(1), F(0)], [F(0), F(1)], rng) != 0 for _ in range(20)))
''')


CHECK_COMMAND = f"{shlex.quote(sys.executable)} check.py"
# The edge cases only, on vocabularies 2..3: enough for these mutants, and fast.
FAST_AUDIT = "--examples 0 --vocab-sizes 2..3"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "sampler.py").write_text(SAMPLER)
    (tmp_path / "check.py").write_text(CHECK)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_the_cli_reports_each_mutant_and_the_two_scores(project):
    plot = project / "scores.png"
    code, out, err = run_cli("mutate", "sampler.py:textbook", "--tests", CHECK_COMMAND,
                             "--operators", "ratio-to-one,lt-to-le,ratio-unclamped",
                             "--audit", FAST_AUDIT, "--json", "--plot", str(plot))
    assert code == 1, err  # the lt-to-le mutant survives and specexact refutes it
    data = json.loads(out)
    rows = [(m["id"], m["operator"], m["location"], m["tests"], m["specexact"])
            for m in data["mutants"]]
    assert rows == [("M1", "lt-to-le", "sampler.py:3", "survived", "fail"),
                    ("M2", "ratio-unclamped", "sampler.py:3", "survived", "pass"),
                    ("M3", "ratio-to-one", "sampler.py:3", "killed", "fail")]
    assert data["scores"] == {
        "tests": {"numerator": 1, "denominator": 2, "score": "1/2"},
        "specexact": {"numerator": 2, "denominator": 2, "score": "1"}}
    assert data["survivors"] == ["M1"] and data["verdict"] == "fail"
    assert data["audit_args"] == FAST_AUDIT.split()
    assert "+    if rng.random() <= min(1, p[x] / q[x]):  # the acceptance test" \
        in data["mutants"][0]["diff"]
    assert data["mutants"][0]["detail"].startswith("mass 1/16777216 on tokens where p = 0")
    assert plot.read_bytes()[:4] == b"\x89PNG"
    assert (project / "sampler.py").read_text() == SAMPLER  # never written
    assert sorted(p.name for p in project.iterdir()) == ["check.py", "sampler.py",
                                                         "scores.png"]


def test_tests_that_kill_every_non_equivalent_mutant_pass(project):
    report = mutate("sampler.py:textbook", CHECK_COMMAND,
                    operators=["ratio-to-one", "ratio-unclamped"],
                    audit_args=FAST_AUDIT.split())
    assert report.outcome == "pass" and not report.survivors
    report.assert_killed()
    text = report_human(report)
    assert "tests' mutation score:      1/1 (100%)" in text
    assert "equivalent (specexact PASS, not counted): M1" in text
    assert report_json(report)["verdict"] == "pass"


def test_the_tests_and_the_audit_must_pass_on_the_original(project):
    with pytest.raises(InvalidArgument, match="the tests fail on the original code"):
        mutate("sampler.py:textbook", "python -c 'raise SystemExit(3)'")
    code, _, err = run_cli("mutate", "sampler.py:textbook", "--tests", "true",
                           "--audit", "--kind step --horizon 2")
    assert code == 2 and "specexact audit sampler.py:textbook" in err, err


def test_usage_errors(project, monkeypatch):
    code, _, err = run_cli("mutate", "sampler.py:textbook", "--tests", "true",
                           "--audit", "--json --seed 1")
    assert code == 2 and "--audit must not hold --json" in err
    code, _, err = run_cli("mutate", "sampler.py:textbook", "--tests", "true",
                           "--audit", "--statistical --samples 100")
    assert code == 2 and "mutate judges each mutant exactly" in err
    code, _, err = run_cli("mutate", "sampler.py:textbok", "--tests", "true")
    assert code == 2 and "did you mean textbook" in err
    code, _, err = run_cli("mutate", "sampler:textbook", "--tests", "true")
    assert code == 2 and "path/to/file.py:function" in err
    code, _, err = run_cli("mutate", "sampler.py:textbook", "--tests", "true",
                           "--audit", "--seed 1 --torhc")
    assert code == 2 and "unrecognized arguments: --torhc" in err
    monkeypatch.setenv(MUTANT_ENV, "M1")
    with pytest.raises(InvalidArgument, match="inside a mutation run"):
        mutate("sampler.py:textbook", "true")


@pytest.mark.slow
def test_timeouts_count_as_killed_errors_do_not_and_an_unwritable_plot_exits_3(project):
    # The command sleeps on M1 (stopped at --timeout, with its process group) and exits
    # 127 on M2, the shell's "command not found"; the original passes.
    script = ("import os, sys, time; m = os.environ['SPECEXACT_MUTANT']; "
              "time.sleep(60) if m == 'M1' else sys.exit(127 if m == 'M2' else 0)")
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"
    code, out, err = run_cli("mutate", "sampler.py:textbook", "--tests", command,
                             "--operators", "lt-to-le,ratio-to-one", "--timeout", "5",
                             "--audit", FAST_AUDIT, "--json")
    assert code == 1, err
    data = json.loads(out)
    assert [(m["id"], m["tests"], m["specexact"]) for m in data["mutants"]] == [
        ("M1", "timeout", "fail"), ("M2", "error", "fail")]
    assert data["scores"]["tests"] == {"numerator": 1, "denominator": 2, "score": "1/2"}
    assert data["survivors"] == ["M2"]
    # a plot that cannot be written is an output error (3) before any mutant runs
    code, out, err = run_cli("mutate", "sampler.py:textbook", "--tests", command,
                             "--operators", "lt-to-le,ratio-to-one", "--timeout", "5",
                             "--audit", FAST_AUDIT, "--json",
                             "--plot", str(project / "missing" / "plot.png"))
    assert code == 3 and "cannot write --plot" in err, err
    data = json.loads(out)
    assert data["verdict"] == "error" and "mutants" not in data
