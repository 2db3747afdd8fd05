"""The ``specexact_mutate`` fixture, tested with ``pytester``: a mutation run from a test,
its assertion helper, and the skip inside a mutation run of its own."""

from __future__ import annotations

import shlex
import sys
import textwrap

import pytest

from specexact.mutation import MUTANT_ENV

pytest_plugins = ["pytester"]

SAMPLER = textwrap.dedent('''\
    def textbook(p, q, rng):
        x = rng.categorical(q)
        if rng.random() < min(1, p[x] / q[x]):
            return x
        return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
''')

# Only looks at the type of the output: kills nothing.
CHECK = textwrap.dedent('''\
    import random
    from sampler import textbook

    class Rng:
        random = random.Random(0).random
        def categorical(self, w):
            return 0 if float(w[0]) > 0 else 1

    assert textbook([1, 0], [0, 1], Rng()) in (0, 1)
''')

TEST = textwrap.dedent(f'''\
    def test_mutants(specexact_mutate):
        report = specexact_mutate("sampler.py:textbook",
                                  tests={shlex.quote(sys.executable)!r} + " check.py",
                                  operators=["ratio-to-one"],
                                  audit_args=["--examples", "0", "--vocab-sizes", "2..2"])
        assert [r.tests for r in report.results] == ["survived"]
        report.assert_killed()
''')


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(sampler=SAMPLER, check=CHECK, test_mutation=TEST)
    return pytester


@pytest.mark.slow
def test_the_fixture_runs_the_mutants_and_the_helper_fails_on_a_survivor(project):
    result = project.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*AssertionError: FAIL  mutation testing of sampler.py:textbook: 1 mutant,*",
        "*M1  ratio-to-one  sampler.py:3  survived  FAIL*",
        "*tests' mutation score:      0/1 (0%) non-equivalent mutants killed*",
    ])


def test_the_fixture_skips_inside_a_mutation_run(project, monkeypatch):
    monkeypatch.setenv(MUTANT_ENV, "M2")
    result = project.runpytest("-q", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*inside specexact mutate's own run (SPECEXACT_MUTANT=M2)*"])
