"""CLI and plugin options: refused where they would be ignored, each bound named, any order.

Regressions from reviews of the user-facing doors: each test names the bug it guards.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from specexact.audit import detect_kind
from tests.helpers import run_cli as run
from tests.helpers import write_module

pytest_plugins = ["pytester"]

TARGETS = '''
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
'''


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_module(tmp_path_factory.mktemp("options"), "option_targets", TARGETS)


def test_prove_on_a_step_without_horizon_says_how_to_prove_it():
    # Before issue 14 a step could not be proved at all; now it is read from the
    # signature (or --kind step) and needs only --horizon, which the message names.
    code, _, err = run("prove", "specexact.counterexamples.chain_steps:chain", "--vocab-size", "2")
    assert code == 2
    assert "is a decoding step" in err
    assert ("specexact prove specexact.counterexamples.chain_steps:chain --kind step "
            "--vocab-size 2 --horizon 2") in err


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


def test_stateful_flag_is_refused_for_samplers(tmp_path: Path) -> None:
    path = write_module(tmp_path, "s", "def s(p, q, rng):\n    return rng.categorical(p)\n")
    code, _, err = run("audit", f"{path}:s", "--stateful")
    assert code == 2 and "--stateful applies to steps" in err


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
