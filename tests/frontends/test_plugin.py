"""The pytest plugin and the assertion helpers, tested with ``pytester``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from specexact import assert_preserves_target, assert_step_preserves_target
from specexact.counterexamples.samplers import naive_resample, textbook
from specexact.errors import HiddenRandomness, InvalidArgument
from specexact.frontends.assertions import option_defaults

pytest_plugins = ["pytester"]

RULES = '''
import random


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


def wrong_from_three(p, q, rng):
    return naive(p, q, rng) if len(p) >= 3 else textbook(p, q, rng)


def hidden(p, q, rng):
    return 0 if random.random() < 0.5 else rng.categorical(p)
'''


@pytest.fixture
def rules(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    pytester.makepyfile(rules=RULES)
    # In-process runs may load a Hypothesis profile (--hypothesis-profile) or force a
    # seed (--hypothesis-seed); both are global, so restore ours, or later tests inherit
    # max_examples=3, or a forced seed that turns off every example database.
    import hypothesis.core

    profile = settings.get_current_profile_name()
    seed = hypothesis.core.global_force_seed
    yield pytester
    settings.load_profile(profile)
    hypothesis.core.global_force_seed = seed


def test_a_passing_sampler(rules):
    rules.makepyfile(test_ok='''
        from specexact import assert_preserves_target
        from rules import textbook

        def test_textbook():
            result = assert_preserves_target(textbook, vocab_sizes=(2, 3), examples=10)
            assert result.passed and result.cases > 10
    ''')
    result = rules.runpytest()
    result.assert_outcomes(passed=1)


def test_a_failing_sampler_shows_the_exact_witness(rules):
    rules.makepyfile(test_bad='''
        from specexact import assert_preserves_target
        from rules import naive

        def test_naive():
            assert_preserves_target(naive, examples=10)
    ''')
    result = rules.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*AssertionError: naive does not preserve the target distribution*",
        "*FAIL*naive (sampler): biased, TV = *",
        "*p = (*",
        "*q = (*",
        "*token*p*q*expected*actual*actual - expected*",
        "*TV(actual, p) = *",
    ])


@pytest.mark.slow
def test_command_line_options_are_respected(rules):
    rules.makepyfile(test_opts='''
        from specexact import assert_preserves_target
        from rules import textbook, wrong_from_three

        def test_options_reach_the_audit():
            result = assert_preserves_target(textbook)
            assert result.options.examples == 7
            assert result.options.seed == 11
            assert result.options.vocab_sizes == (2, 2)

        def test_size_two_cannot_see_a_size_three_bug():
            assert_preserves_target(wrong_from_three)
    ''')
    result = rules.runpytest("--specexact-examples", "7", "--specexact-seed", "11",
                                        "--specexact-vocab-sizes", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["specexact: examples=7, seed=11, vocab_sizes=(2, 2)"])
    # without the restriction the default vocabularies (2..4) find the bug
    result = rules.runpytest("-k", "size_three")
    result.assert_outcomes(failed=1)


@pytest.mark.slow
def test_ini_settings_and_command_line_precedence(rules, monkeypatch):
    rules.makeini('''
        [pytest]
        specexact_examples = 5
        specexact_seed = 3
    ''')
    rules.makepyfile(test_ini='''
        import os
        from specexact import assert_preserves_target
        from rules import textbook

        def test_ini():
            result = assert_preserves_target(textbook, vocab_sizes=2)
            assert result.options.examples == int(os.environ["WANT_EXAMPLES"])
            assert result.options.seed == 3
            # an explicit argument beats every default
            explicit = assert_preserves_target(textbook, vocab_sizes=2, examples=1)
            assert explicit.options.examples == 1
    ''')
    monkeypatch.setenv("WANT_EXAMPLES", "5")
    rules.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("WANT_EXAMPLES", "9")
    rules.runpytest("--specexact-examples", "9").assert_outcomes(passed=1)


@pytest.mark.slow


def test_marker_sets_defaults_for_one_test(rules):
    rules.makepyfile(test_marker='''
        import pytest
        from specexact import assert_preserves_target
        from rules import wrong_from_three

        @pytest.mark.specexact(vocab_sizes=(2, 2), examples=5)
        def test_restricted():
            assert assert_preserves_target(wrong_from_three).options.examples == 5

        def test_unrestricted():
            assert_preserves_target(wrong_from_three, examples=5)
    ''')
    result = rules.runpytest("--strict-markers")
    result.assert_outcomes(passed=1, failed=1)


def test_hypothesis_seed_seeds_the_search(rules):
    rules.makepyfile(test_seed='''
        from specexact import assert_preserves_target
        from rules import textbook

        def test_seed():
            assert assert_preserves_target(textbook, vocab_sizes=2, examples=3).options.seed == 42
    ''')
    rules.runpytest("--hypothesis-seed", "42").assert_outcomes(passed=1)


def test_hypothesis_profile_reaches_the_search(rules):
    rules.makeconftest('''
        from hypothesis import settings
        settings.register_profile("tiny", max_examples=3, database=None)
    ''')
    rules.makepyfile(test_profile='''
        from specexact import assert_preserves_target
        from rules import textbook

        def test_profile():
            result = assert_preserves_target(textbook, vocab_sizes=2)
            assert result.options.settings.max_examples == 3
    ''')
    rules.runpytest("--hypothesis-profile", "tiny").assert_outcomes(passed=1)


def test_undecided_never_passes(rules):
    rules.makepyfile(test_hidden='''
        from specexact import assert_preserves_target
        from rules import hidden

        def test_hidden():
            assert_preserves_target(hidden, examples=3)
    ''')
    result = rules.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*HiddenRandomness*"])


def test_distribution_comparison_shows_an_exact_diff(rules):
    rules.makepyfile(test_repr='''
        from specexact import output_distribution
        from rules import naive

        def test_law():
            p, q = ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]
            assert output_distribution(naive, p, q) == p
    ''')
    result = rules.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*exact laws differ on 3 outcome(s), TV = 3/50*",
        "*outcome*left*right*left - right*",
        "*0*13/50*1/5*+3/50*<--*",
        "*1*9/20*1/2*-1/20*<--*",
    ])


# --------------------------------------------------------------------------
# the helpers called directly
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_assert_preserves_target_passes_and_fails():
    assert assert_preserves_target(textbook, vocab_sizes=(2, 3), examples=5).passed
    with pytest.raises(AssertionError, match="does not preserve the target") as info:
        assert_preserves_target(naive_resample, examples=5)
    assert "actual - expected" in str(info.value)


def test_option_defaults_nest_and_explicit_wins():
    with option_defaults(examples=4, seed=9), option_defaults(seed=10):
        result = assert_preserves_target(textbook, vocab_sizes=2)
        assert (result.options.examples, result.options.seed) == (4, 10)
        assert assert_preserves_target(textbook, vocab_sizes=2, seed=1).options.seed == 1


@pytest.mark.parametrize("options", [{"vocab_sizes": (3, 2)}, {"vocab_sizes": "x"},
                                     {"examples": -1}, {"seed": "zero"}, {"budget": 5}])
def test_bad_options_are_rejected(options):
    with pytest.raises(InvalidArgument):
        assert_preserves_target(textbook, **options)


def test_unknown_default_option_is_rejected():
    with pytest.raises(InvalidArgument, match="unknown option"), option_defaults(exampels=3):
        pass


def test_hidden_randomness_raises_undecided():
    import random

    def hidden(p, q, rng):
        return 0 if random.random() < 0.5 else rng.categorical(p)

    with pytest.raises(HiddenRandomness):
        assert_preserves_target(hidden, examples=2)


def test_a_step_cannot_be_audited_as_a_sampler():
    def step(target, draft, prefix, rng):
        return (rng.categorical(target(prefix)),)

    with pytest.raises(InvalidArgument, match="fn"):
        assert_preserves_target(step)
    with pytest.raises(InvalidArgument, match="fn"):
        assert_step_preserves_target(textbook)


@pytest.mark.slow
def test_assert_step_preserves_target_passes_and_fails():
    from functools import partial

    from specexact.counterexamples.chain_steps import chain, shared_uniform

    result = assert_step_preserves_target(partial(chain, gamma=2), examples=5)
    assert result.passed and result.kind == "step"
    with pytest.raises(AssertionError) as info:
        assert_step_preserves_target(partial(shared_uniform, gamma=2), examples=5)
    message = str(info.value)
    assert "does not preserve the target distribution" in message
    assert "joint law" in message
    assert "target:" in message and "draft:" in message
    assert "actual - expected" in message


@pytest.mark.slow
def test_step_horizon_option_is_respected():
    from functools import partial

    from specexact.counterexamples.chain_steps import shared_uniform

    # the first token's marginal is right: horizon 1 cannot see the bug
    result = assert_step_preserves_target(partial(shared_uniform, gamma=2), horizon=1,
                                          examples=5)
    assert result.options.horizon == 1 and result.horizon == 1


def test_a_marker_or_ini_asking_for_no_case_never_passes(rules):
    # Issue 24: `@pytest.mark.specexact(vocab_sizes=(6, 6), examples=0)` and the ini
    # options passed the README's biased rule: no edge case exists at V = 6.
    rules.makepyfile(test_empty='''
        import pytest
        from specexact import assert_preserves_target
        from rules import naive, textbook

        @pytest.mark.specexact(vocab_sizes=(6, 6), examples=0)
        def test_marker_naive():
            assert_preserves_target(naive)

        @pytest.mark.specexact(vocab_sizes=(6, 6), examples=0)
        def test_marker_textbook():
            assert_preserves_target(textbook)

        @pytest.mark.specexact(vocab_sizes=(6, 6), examples=2)
        def test_with_cases():
            assert_preserves_target(textbook)
    ''')
    result = rules.runpytest()
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*no exact case was judged at vocabulary size 6*"])
    rules.makeini('''
        [pytest]
        specexact_examples = 0
        specexact_vocab_sizes = 6
    ''')
    rules.makepyfile(test_empty='''
        from specexact import assert_preserves_target
        from rules import naive

        def test_ini_naive():
            assert_preserves_target(naive)
    ''')
    result = rules.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no exact case was judged at vocabulary size 6*"])
