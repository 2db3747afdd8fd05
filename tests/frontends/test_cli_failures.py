"""Code that crashes, exits or raises a BaseException: a finding or exit 2, never a traceback
and never a hung worker.

Regressions from reviews of the user-facing doors: each test names the bug it guards.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from specexact import SamplerRaised, output_distribution
from specexact.frontends.cli import main
from tests.helpers import run_cli as run
from tests.helpers import run_specexact, write_module

TARGETS = '''
class Boom(BaseException):
    pass


def home_made_base_exception(p, q, rng):
    raise Boom("not an Exception")


def keyboard_interrupt(p, q, rng):
    raise KeyboardInterrupt
'''

STEPS = '''
from fractions import Fraction


def residual(p, q):
    return [max(a - b, 0) for a, b in zip(p, q)]


def rare_bad_id(target, draft, prefix, rng):
    q = draft(tuple(prefix))
    x = rng.categorical(q)
    p = target(tuple(prefix))
    u = rng.random()
    if u * q[x] < p[x]:
        return (x,)
    if u > Fraction(99, 100):
        return (len(p),)  # an id outside the vocabulary on a rare path
    return (rng.categorical(residual(p, q)),)
'''


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_module(tmp_path_factory.mktemp("failures"), "failing_targets", TARGETS)


@pytest.fixture
def steps(tmp_path: Path) -> str:
    return str(write_module(tmp_path, "failing_steps", STEPS))


def test_a_bare_exception_shows_its_type_and_no_empty_columns(capsys):
    def bare(p, q, rng):
        x = rng.categorical(q)
        if x == 1:
            raise RuntimeError()
        return x

    with pytest.raises(SamplerRaised) as info:
        output_distribution(bare, ["1/2", "1/2"], ["1/2", "1/2"])
    assert "raised RuntimeError (no message)" in str(info.value)
    assert "token #1 == 1: True" in str(info.value)  # the choices that led there

    module = types.ModuleType("bare_rule")
    module.bare = bare
    sys.modules["bare_rule"] = module
    try:
        assert main(["audit", "bare_rule:bare", "--examples", "0"]) == 1
        text = capsys.readouterr().out
    finally:
        del sys.modules["bare_rule"]
    assert "RuntimeError (no message)" in text
    assert "RuntimeError: \n" not in text
    assert "(no output law: the code crashed on this input)" in text
    assert "actual - expected" not in text


def test_a_home_made_base_exception_is_no_verdict_and_no_traceback(targets):
    code, out, _ = run("audit", f"{targets}:home_made_base_exception", "--json")
    assert code == 2
    data = json.loads(out)
    assert data["verdict"] == "undecided"
    assert "Boom" in data["error"] and "BaseException" in data["error"]


@pytest.mark.parametrize(("name", "code", "needle"), [
    ("home_made_base_exception", 2, "Boom"),
    ("keyboard_interrupt", 2, "raised KeyboardInterrupt"),
])
def test_base_exceptions_in_workers_do_not_hang_jobs(targets, name, code, needle):
    # A pool worker used to die on a BaseException and the parent waited forever.
    proc = run_specexact("audit", f"{targets}:{name}", "--jobs", "2", "--vocab-sizes", "2..3",
                         "--examples", "1", timeout=120)
    assert proc.returncode == code
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_reports_os_exit_as_a_failure(tmp_path):
    target = write_module(tmp_path, "exiting", """
        import os

        def sampler(p, q, rng):
            x = rng.categorical(q)
            if rng.random() * q[x] < p[x]:
                return x
            os._exit(0)
    """)
    for jobs in ("1", "2"):
        done = run_specexact("audit", f"{target}:sampler", "--examples", "5", "--jobs", jobs)
        assert done.returncode == 1, (jobs, done.stdout, done.stderr)
        assert "os._exit(0)" in done.stdout + done.stderr


def test_cli_exits_2_for_numpy_generator_code(tmp_path):
    target = write_module(tmp_path, "np_rule", """
        def sampler(p, q, rng):
            x = rng.choice(len(q), p=q)
            return x
    """)
    code, _, _ = run("audit", f"{target}:sampler", "--examples", "2")
    assert code == 2


def test_json_report_of_a_crashing_step(steps: str) -> None:
    # The JSON report used to die on the missing expected law (internal error, exit 2).
    code, out, err = run("audit", f"{steps}:rare_bad_id", "--examples", "1", "--json")
    assert code == 1, err
    found = json.loads(out)["counterexample"]
    assert "outside the vocabulary" in found["crash"]
    assert found["target"] and found["draft"]
