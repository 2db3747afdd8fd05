"""The guards around a run: process exits, OS entropy and other random APIs inside a sampler
are findings, the same every run, and the guards are lifted afterwards.

Regressions: each test names the bug it guards.
"""

from __future__ import annotations

import os
import random
import secrets
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
