"""Regressions found by reviewing the user-facing doors (CLI, statistical mode, plugin)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from specexact.frontends.cli import main

pytest_plugins = ["pytester"]

TARGETS = '''
print("module-level chatter")


class Boom(BaseException):
    pass


def textbook(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])


def float_textbook(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    r = [max(a - b, 0.0) for a, b in zip(p, q)]
    if not any(r):  # rounded rows can have p <= q everywhere
        return x
    return rng.categorical([v / sum(r) for v in r])


def naive(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(p)


def home_made_base_exception(p, q, rng):
    raise Boom("not an Exception")


def keyboard_interrupt(p, q, rng):
    raise KeyboardInterrupt
'''


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("review_cli") / "review_targets.py"
    path.write_text(TARGETS)
    return path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_json_stdout_stays_clean_when_the_module_prints_at_import(targets, capsys):
    # The report goes to the real stdout, where module-level prints used to land too.
    code = main(["audit", f"{targets}:textbook", "--examples", "1", "--vocab-sizes", "2",
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert json.loads(captured.out)["verdict"] == "pass"
    assert "module-level chatter" in captured.err


def test_a_home_made_base_exception_is_no_verdict_and_no_traceback(targets):
    code, out, _ = run("audit", f"{targets}:home_made_base_exception", "--json")
    assert code == 2
    data = json.loads(out)
    assert data["verdict"] == "undecided"
    assert "Boom" in data["error"] and "BaseException" in data["error"]


@pytest.mark.parametrize(("name", "code", "needle"), [
    ("home_made_base_exception", 2, "Boom"),
    ("keyboard_interrupt", 130, "interrupted"),
])
def test_base_exceptions_in_workers_do_not_hang_jobs(targets, name, code, needle):
    # A pool worker used to die on a BaseException and the parent waited forever.
    proc = subprocess.run(
        [sys.executable, "-m", "specexact", "audit", f"{targets}:{name}", "--jobs", "2",
         "--vocab-sizes", "2..3", "--examples", "1"],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == code
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_floats_before_the_target_reads_the_target(targets):
    code, out, err = run("audit", "--floats", f"{targets}:float_textbook", "--examples", "1",
                         "--vocab-sizes", "2")
    assert code == 0, err
    assert "PASS" in out
    code, _, err = run("audit", f"{targets}:float_textbook", "--floats", "float16")
    assert code == 2
    assert "float16" in err


@pytest.mark.parametrize("argv", [
    ["--statistical"], ["--floats"], ["--vocab-sizes", "2..3"], ["--kind", "step"],
])
def test_audit_without_target_refuses_options_it_would_ignore(argv):
    code, out, _ = run("audit", *argv, "--json")
    assert code == 2
    assert "TARGET" in json.loads(out)["error"]


def test_statistical_refuses_options_it_would_ignore(targets):
    code, _, err = run("audit", f"{targets}:textbook", "--statistical", "--vocab-sizes", "2")
    assert code == 2
    assert "--vocab-sizes" in err and "--statistical" in err


def test_positive_options_say_the_right_minimum():
    code, out, err = run("prove", "x.py:f", "--vocab-size", "-1", "--json")
    assert code == 2
    assert "must be >= 1" in json.loads(out)["error"]
    code, _, err = run("audit", "x.py:f", "--horizon", "-3")
    assert code == 2
    assert "-3 must be >= 1" in err


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


def test_detectable_tv_is_that_of_the_design_not_of_a_crash():
    pytest.importorskip("scipy")
    from specexact.statistical.audit import Case, Draws, judge_counts

    case = Case.of("worked", ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
    full = Draws((200, 500, 300))
    crashed = Draws((1, 0, 0), crash="ValueError: oops")  # one draw, then a crash
    ok, bad = judge_counts([case, case], [full, crashed], samples=1000)
    assert bad.rejected
    assert bad.detectable_tv == ok.detectable_tv


def test_detectable_tv_counts_mass_hidden_by_pooling():
    pytest.importorskip("scipy")
    from specexact.statistical.audit import Case, Draws, judge_counts

    # 50 equally likely tokens and 100 draws: every cell pools three tokens or more,
    # so a law that moves mass inside the cells (TV up to ~1) is invisible.
    case = Case("pooled", (Fraction(1, 50),) * 50, (Fraction(1, 50),) * 50)
    (result,) = judge_counts([case], [Draws((2,) * 50)], samples=100)
    assert not result.rejected
    assert result.detectable_tv >= 1


def test_statistical_pass_with_too_few_draws_says_so():
    pytest.importorskip("scipy")
    from specexact.statistical.audit import Case, Draws, StatisticalReport, judge_counts

    case = Case.of("worked", ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
    results = judge_counts([case], [Draws((2, 5, 3))], samples=10)
    report = StatisticalReport(results, Fraction(1, 1000), 10, 0, 0.0)
    assert report.passed
    text = report.format()
    assert "too few" in text
    assert "a TV of" not in text


def test_ini_horizon_message_states_the_minimum(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nspecexact_horizon = -2\n")
    pytester.makepyfile(test_nothing=textwrap.dedent("""
        def test_nothing():
            pass
    """))
    result = pytester.runpytest()
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*specexact_horizon = -2 must be >= 1*"])


def test_detect_kind_counts_arguments_before_reading_names():
    from specexact.audit import detect_kind

    def sampler_named_like_models(target, draft, rng): ...
    def sampler_with_option(target, draft, rng, temperature=1.0): ...
    def step_with_other_names(p_model, q_model, prefix_tokens, generator): ...
    def step_with_defaults(target, draft, prefix, rng, gamma=3): ...
    def anything(*args): ...

    assert detect_kind(sampler_named_like_models) == "sampler"
    assert detect_kind(sampler_with_option) == "sampler"
    assert detect_kind(step_with_other_names) == "step"
    assert detect_kind(step_with_defaults) == "step"
    assert detect_kind(anything) is None
