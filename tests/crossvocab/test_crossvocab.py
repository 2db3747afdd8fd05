"""Cross-vocabulary decoding: vocabularies, tokenizers, laws of text, the protocol, the doors."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pytest

from specexact import (
    InvalidArgument,
    InvalidDistribution,
    assert_crossvocab_preserves_target,
    check_crossvocab_step,
    crossvocab_efficiency,
    target_text_law,
)
from specexact.counterexamples import crossvocab_steps as cv
from specexact.crossvocab import (
    VocabModel,
    Vocabulary,
    context_free_model,
    continuation_law,
    crossvocab_law,
    crossvocab_step_law,
    prefix_probability,
    random_vocab_model,
    shared_tokens,
    table_model,
)
from tests.helpers import plain_step as plain
from tests.helpers import run_cli as run

pytest_plugins = ["pytester"]

V = Vocabulary(("a", "b", "ab"))


# ---- vocabularies and tokenizers ---------------------------------------------


def test_greedy_longest_match_and_every_tokenization():
    assert V.encode("abab") == (2, 2)
    assert V.encode("aab") == (0, 2)
    assert V.encodings("aab") == ((0, 0, 1), (0, 2))
    assert V.decode((0, 1, 2)) == "abab"
    assert V.is_canonical((2,)) and not V.is_canonical((0, 1))
    long = Vocabulary(("a", "b", "aba", "ab"))
    assert long.first_token("abab") == 2 and long.encode("abab") == (2, 1)
    assert long.encode("") == () and long.encodings("") == ((),)


@pytest.mark.parametrize(("tokens", "message"), [
    ((), "non-empty"),
    ("ab", "tuple of distinct"),
    (("a", "b", "a"), "appears twice"),
    (("a", ""), "non-empty strings"),
    (("a", 3), "non-empty strings"),
    (("a", "ab"), "'b' are not tokens of their own"),
])
def test_bad_vocabularies_are_named(tokens, message):
    with pytest.raises(InvalidArgument, match=message):
        Vocabulary(tokens)


def test_text_outside_the_alphabet_is_refused():
    with pytest.raises(InvalidArgument, match="outside the alphabet 'ab'"):
        V.encode("abc")
    with pytest.raises(KeyError, match="'ba' is not a token"):
        V.id("ba")


def test_shared_tokens_pair_strings_not_indices():
    draft = Vocabulary(("b", "a", "ba"))
    assert shared_tokens(draft, V) == ((0, 1), (1, 0))


# ---- laws of text ---------------------------------------------------------


def test_prefix_probability_sums_over_tokenizations_and_overhang():
    m = context_free_model(V, ["1/2", "1/4", "1/4"])
    # "a" comes from the token "a" or from "ab" running past it.
    assert prefix_probability(m, (), "a") == F(3, 4)
    # "ab" is [ab] or [a, b]: 1/4 + 1/2 * (1/4 + 1/4 * 0) ... + [a, ab] does not start "ab".
    assert prefix_probability(m, (), "ab") == F(1, 4) + F(1, 2) * F(1, 4)
    law = continuation_law(m, (), 2)
    assert sum(law.values()) == 1 and law["ab"] == prefix_probability(m, (), "ab")


def test_target_text_law_counts_non_canonical_mass():
    # The target only ever writes "ab" as [a, b], a non-canonical tokenization.
    t = table_model(V, {(0,): ["0", "1", "0"]}, ["1", "0", "0"])
    assert target_text_law(t, 2) == {"ab": 1}
    assert continuation_law(t, (), 3) == {"aba": 1}


# ---- the protocol and the verdict --------------------------------------------


def canonical_text(target, draft, prefix, rng):
    """Samples two tokens from the target itself, then emits their text re-tokenized
    canonically: the right text now, the wrong context for the target later."""
    x = rng.categorical(target(prefix))
    y = rng.categorical(target((*prefix, x)))
    return target.vocab.encode(target.vocab.decode((x, y)))


def test_plain_target_sampling_is_lossless_for_any_draft():
    t = random_vocab_model(V, 3, salt="t")
    d = random_vocab_model(("b", "a", "ba", "bb"), 3, salt="d")
    verdict = check_crossvocab_step(plain, t, d, 3)
    assert verdict.passed and "preserves" in verdict.reason
    assert crossvocab_law(plain, t, d, 2) == target_text_law(t, 2)


def test_recanonicalising_is_caught_on_a_non_canonical_target():
    # After the token "a" the target writes "b" then "b"; after "ab" it writes "a".
    t = table_model(V, {(0,): ["0", "1", "0"], (0, 1): ["0", "1", "0"],
                        (2,): ["1", "0", "0"]}, ["1", "0", "0"])
    verdict = check_crossvocab_step(canonical_text, t, t, 3)
    assert not verdict.passed
    assert verdict.comparison.first_difference == "aba"  # the first differing text, sorted
    assert verdict.tv == 1 and verdict.comparison.support_violation == 1
    data = verdict.to_json()
    assert data["target_vocab"] == ["a", "b", "ab"] and data["expected"] == {"abb": "1",
                                                                             "aba": "0"}
    assert "'abb'" in verdict.table() and "target vocabulary" in str(verdict)


@pytest.mark.parametrize(("step", "message"), [
    (lambda t, d, p, rng: "ab", "a str"),
    (lambda t, d, p, rng: (), "an empty tuple"),
    (lambda t, d, p, rng: (7,), "id 7 is outside the target vocabulary's ids 0..2"),
    (lambda t, d, p, rng: (True,), "not a target id"),
])
def test_bad_step_outputs_are_crash_verdicts_naming_the_vocabulary(step, message):
    m = context_free_model(V, ["1/3", "1/3", "1/3"])
    verdict = check_crossvocab_step(step, m, m, 2)
    assert not verdict.passed and verdict.crash is not None
    assert message in str(verdict.crash)


def test_bad_models_are_input_errors():
    m = context_free_model(V, ["1/3", "1/3", "1/3"])
    with pytest.raises(InvalidArgument, match="not a cross-vocabulary model"):
        check_crossvocab_step(plain, m, m.model, 2)
    other = context_free_model(("a", "c"), ["1/2", "1/2"])
    with pytest.raises(InvalidArgument, match="alphabet 'ab' and the draft's 'ac' differ"):
        check_crossvocab_step(plain, m, other, 2)
    with pytest.raises(InvalidArgument, match="2 entries but the vocabulary"):
        context_free_model(V, ["1/2", "1/2"])
    wide = VocabModel(V, lambda ids: [F(1, 2), F(1, 2)])
    with pytest.raises(InvalidDistribution, match="2 entries; the vocabulary has 3"):
        check_crossvocab_step(plain, wide, m, 2)
    with pytest.raises(InvalidArgument, match="horizon"):
        check_crossvocab_step(plain, m, m, 0)


def test_rules_on_one_pair_of_vocabularies():
    t = random_vocab_model(V, 5, salt="t")
    d = random_vocab_model(("a", "b", "ba", "bb"), 5, salt="d")
    for rule in (cv.tli, cv.slem, cv.slrs):
        assert check_crossvocab_step(rule, t, d, 3).passed, rule.__name__
    for rule in (cv.tli_unnormalised_q, cv.slem_compares_draft_ids,
                 cv.slrs_canonical_draft_probability, cv.slrs_drops_partial_token):
        assert not check_crossvocab_step(rule, t, d, 3).passed, rule.__name__


# ---- efficiency -----------------------------------------------------------


def test_efficiency_is_exact_target_tokens_per_call():
    m = context_free_model(V, ["1/2", "1/4", "1/4"])
    eff = crossvocab_efficiency(plain, m, m)
    assert eff.expected_tokens == 1 and eff.expected_characters == F(5, 4)
    # SLEM with the target as its own draft: two draft tokens, always matched, one bonus.
    same = crossvocab_efficiency(cv.slem, m, m)
    law = crossvocab_step_law(cv.slem, m, m)
    assert sum(law.values()) == 1
    assert 1 < same.expected_tokens <= 3
    # A draft over single characters cannot propose 'ab': TLI accepts less.
    chars = context_free_model(("a", "b"), ["1/2", "1/2"])
    assert crossvocab_efficiency(cv.tli, m, chars).expected_tokens \
        < crossvocab_efficiency(cv.tli, m, m).expected_tokens == 3


# ---- the doors ------------------------------------------------------------


RULES = '''
from specexact.counterexamples.crossvocab_steps import slem, tli_unnormalised_q


def good(target, draft, prefix, rng):
    return slem(target, draft, prefix, rng)


def bad(target, draft, prefix, rng):
    return tli_unnormalised_q(target, draft, prefix, rng)
'''


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("crossvocab") / "cv_rules.py"
    path.write_text(RULES)
    return path


@pytest.mark.slow
def test_cli_finds_the_wrong_rule_and_passes_the_right_one(rules_file):
    code, out, _ = run("audit", f"{rules_file}:bad", "--kind", "cross-vocab", "--examples", "5")
    assert code == 1
    assert "FAIL" in out and "(cross-vocab)" in out and "draft vocabulary ('a', 'b', 'ab')" in out
    code, out, _ = run("audit", f"{rules_file}:good", "--kind", "cross-vocab",
                       "--examples", "5", "--json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass" and data["kind"] == "cross-vocab"
    # No --horizon: each case to its longest token + 2; the report gives the longest.
    assert data["horizon"] == 5
    code, out, _ = run("audit", f"{rules_file}:bad", "--kind", "cross-vocab", "--examples", "5",
                       "--json")
    found = json.loads(out)["counterexample"]
    assert code == 1 and found["draft_vocab"] == ["a", "b", "ab"] and found["tv"] == "1/2"


@pytest.mark.parametrize("flags", [("--stateful",), ("--floats",), ("--uniform-bits", "24"),
                                   ("--torch",)])
def test_cli_refuses_options_that_do_not_apply(rules_file, flags):
    code, _, err = run("audit", f"{rules_file}:good", "--kind", "cross-vocab", *flags)
    assert code == 2 and "cross-vocab" in err and "Traceback" not in err


def test_explain_reruns_a_cross_vocabulary_witness():
    code, out, _ = run("explain", "tli-unnormalised-q")
    assert code == 0 and "cross-vocab, WRONG" in out and "FAIL: law of the first" in out
    code, out, _ = run("explain", "slrs", "--json")
    assert code == 0 and json.loads(out)["kind"] == "cross-vocab"


@pytest.mark.slow
def test_assertion_helper():
    result = assert_crossvocab_preserves_target(cv.slem, examples=5)
    assert result.passed and result.kind == "cross-vocab"
    with pytest.raises(AssertionError, match=r"(?s)does not preserve.*draft vocabulary"):
        assert_crossvocab_preserves_target(cv.tli_unnormalised_q, examples=5)


def test_plugin_marker_reaches_the_cross_vocabulary_helper(pytester: pytest.Pytester):
    pytester.makepyfile(test_cv='''
        import pytest
        from specexact import assert_crossvocab_preserves_target
        from specexact.counterexamples.crossvocab_steps import slrs

        @pytest.mark.specexact(examples=3, horizon=2)
        def test_slrs():
            result = assert_crossvocab_preserves_target(slrs)
            assert result.options.examples == 3 and result.horizon == 2
    ''')
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_time_budget_covers_the_targets_own_law():
    from specexact import Budget, BudgetExceeded

    m = context_free_model(V, ["1/3", "1/3", "1/3"])
    with pytest.raises(BudgetExceeded, match="max_seconds"):
        check_crossvocab_step(plain, m, m, 40, budget=Budget(max_seconds=0.05))


def test_a_cross_vocabulary_step_audited_as_a_step_says_so():
    from specexact import ForeignProtocol, check_step, random_model_pair

    t, d = random_model_pair(2)
    # No verdict (the models, not the step, were wrong), never a failing one.
    with pytest.raises(ForeignProtocol, match="--kind cross-vocab"):
        check_step(cv.tli, t, d, 2)


# ---- strategies -----------------------------------------------------------


def test_strategies_draw_valid_vocabularies_and_models():
    from hypothesis import find, given, settings

    from specexact.properties import crossvocab_specs, vocabularies

    @settings(max_examples=40, database=None, deadline=None)
    @given(vocabularies(alphabet_sizes=(1, 3), vocab_sizes=(2, 5)),
           crossvocab_specs(vocab_sizes=(2, 4)))
    def check(vocab, spec):
        assert 1 <= len(vocab.alphabet) <= 3 and len(vocab) <= 5
        assert all(len(t) <= 3 for t in vocab)
        target, draft = spec.models()
        assert target.vocab.alphabet == draft.vocab.alphabet
        assert sum(target(())) == 1 and sum(draft((0,))) == 1

    check()
    # Shrinking goes to the fewest tokens, single characters only, in id order.
    smallest = find(vocabularies(alphabet_sizes=(1, 2), vocab_sizes=(2, 4)), lambda v: True)
    assert smallest.tokens == ("a", "b")
    one = find(vocabularies(alphabet_sizes=1, vocab_sizes=(2, 4)), lambda v: True)
    assert one.tokens == ("a", "aa")


@pytest.mark.parametrize("kwargs", [{"alphabet_sizes": (1, 4)}, {"vocab_sizes": (0, 2)},
                                    {"max_length": 0}])
def test_strategy_options_are_checked(kwargs):
    from specexact.properties import crossvocab_specs

    with pytest.raises(InvalidArgument):
        crossvocab_specs(**kwargs)
