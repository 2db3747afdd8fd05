"""Regressions: process exits and OS entropy inside a sampler are verdicts, the same every run."""

from __future__ import annotations

import os
import random
import secrets
import subprocess
import sys
import textwrap
import uuid
from fractions import Fraction

import pytest

from specexact import HiddenRandomness, SamplerFailure, output_distribution


def exits(p, q, rng):
    if rng.random() < p[0]:
        os._exit(0)
    return 0


def aborts(p, q, rng):
    os.abort()


def test_os_exit_is_a_finding_not_the_end_of_the_audit():
    with pytest.raises(SamplerFailure, match=r"os\._exit\(0\)"):
        output_distribution(exits, ["1/2", "1/2"], ["1/2", "1/2"])
    import posix

    assert os._exit is posix._exit  # the guard is lifted after the enumeration


def test_os_abort_is_a_finding():
    with pytest.raises(SamplerFailure, match=r"os\.abort\(\)"):
        output_distribution(aborts, ["1/2", "1/2"], ["1/2", "1/2"])


def test_a_sampler_catching_everything_cannot_swallow_the_exit():
    def stubborn(p, q, rng):
        try:
            os._exit(3)
        except BaseException:
            return 0
        return 1

    with pytest.raises(SamplerFailure, match=r"os\._exit\(3\)"):
        output_distribution(stubborn, ["1/2", "1/2"], ["1/2", "1/2"])


ENTROPY = {
    "os.urandom": lambda: os.urandom(1)[0] % 2,
    "secrets.randbelow": lambda: secrets.randbelow(2),
    "SystemRandom": lambda: random.SystemRandom().randrange(2),
    "uuid4": lambda: uuid.uuid4().int % 2,
}


@pytest.mark.parametrize("source", sorted(ENTROPY))
def test_os_entropy_is_hidden_randomness_on_every_run(source):
    draw = ENTROPY[source]

    def sampler(p, q, rng):
        return draw()

    for _ in range(8):  # the same verdict every time, not by the luck of replay
        with pytest.raises(HiddenRandomness, match="cannot be replayed"):
            output_distribution(sampler, ["1/2", "1/2"], ["1/2", "1/2"])


def test_guards_are_lifted_after_the_enumeration():
    output_distribution(lambda p, q, rng: 0, ["1"], ["1"])
    assert len(os.urandom(4)) == 4
    assert 0 <= secrets.randbelow(3) < 3


def test_cli_reports_os_exit_as_a_failure(tmp_path):
    target = tmp_path / "exiting.py"
    target.write_text(textwrap.dedent("""
        import os

        def sampler(p, q, rng):
            x = rng.categorical(q)
            if rng.random() * q[x] < p[x]:
                return x
            os._exit(0)
    """))
    for jobs in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-m", "specexact", "audit", f"{target}:sampler", "--examples", "5",
             "--jobs", jobs],
            capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 1, (jobs, done.stdout, done.stderr)
        assert "os._exit(0)" in done.stdout + done.stderr


def test_a_passing_audit_writes_nothing_into_the_working_directory(tmp_path):
    # A rule in a file of the user's own: Hypothesis collects constants from such
    # local modules and caches them in its storage directory.
    rules = tmp_path / "rules.py"
    rules.write_text(textwrap.dedent("""
        def textbook(p, q, rng):
            x = rng.categorical(q)
            if rng.random() * q[x] < p[x]:
                return x
            return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
    """))
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("HYPOTHESIS_STORAGE_DIRECTORY", "XDG_CACHE_HOME")}
    env["HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "specexact", "audit", f"{rules}:textbook", "--examples", "5"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(work.iterdir()) == []
    assert not (tmp_path / ".hypothesis").exists()


@pytest.mark.parametrize(("method", "hint"), [("choice", "--numpy"), ("integers", "--numpy"),
                                              ("randint", "--statistical"),
                                              ("manual_seed", "--torch")])
def test_another_random_api_points_to_the_mode_that_fits(method, hint):
    from specexact import UnsupportedOperation

    def sampler(p, q, rng):
        return getattr(rng, method)(2)

    with pytest.raises(UnsupportedOperation, match=f"rng.{method}\\(\\).*{hint}"):
        output_distribution(sampler, ["1/2", "1/2"], ["1/2", "1/2"])


def test_code_that_supports_both_apis_is_judged_on_the_one_it_uses():
    def either(p, q, rng):
        if hasattr(rng, "integers"):  # a numpy Generator
            return int(rng.integers(len(p)))
        x = rng.categorical(q)
        if rng.random() * q[x] < p[x]:
            return x
        return rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])

    assert dict(output_distribution(either, ["1/5", "4/5"], ["1/2", "1/2"])) == {
        0: Fraction(1, 5), 1: Fraction(4, 5)}


def test_cli_exits_2_for_numpy_generator_code(tmp_path):
    from specexact.frontends.cli import main

    target = tmp_path / "np_rule.py"
    target.write_text(textwrap.dedent("""
        def sampler(p, q, rng):
            x = rng.choice(len(q), p=q)
            return x
    """))
    assert main(["audit", f"{target}:sampler", "--examples", "2"]) == 2
