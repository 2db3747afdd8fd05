"""Quality: the default cross-vocabulary search finds every wrong rule and passes the lossless.

Each wrong rule is re-found from scratch (no stored witness is used) and its
witness is small: at most four tokens per vocabulary, two characters of
alphabet, three characters of text.  Each lossless rule passes the same
search.  The witness also shows the failure's character: the token-level
bugs need a draft token the target lacks, the re-tokenized target context
needs a target whose rows differ between two tokenizations of one text.
"""

from __future__ import annotations

import functools

import pytest

from specexact.counterexamples.crossvocab_rules import CROSSVOCAB_RULES, get_crossvocab_rule
from specexact.crossvocab import check_crossvocab_step, random_vocab_model, shared_tokens
from specexact.properties import search_crossvocab
from tests.quality.planted import PLANTED_CROSSVOCAB

WRONG = [r for r in CROSSVOCAB_RULES if not r.lossless]


@functools.cache
def found(name):
    """The default search's result for a rule (shared by the tests that read it)."""
    return search_crossvocab(get_crossvocab_rule(name).rule)

LOSSLESS = [r for r in CROSSVOCAB_RULES if r.lossless]


@pytest.mark.parametrize("rule", WRONG, ids=lambda r: r.name)
@pytest.mark.slow
def test_every_wrong_rule_is_found_with_a_small_witness(rule):
    result = found(rule.name)
    assert result.status == "fail", result
    w = result.witness
    assert w.horizon <= 3
    for model in (w.target, w.draft):
        assert len(model.vocab) <= 4 and len(model.vocab.alphabet) <= 2
    assert not check_crossvocab_step(rule.rule, w.target, w.draft, w.horizon).passed
    # The catalogue stores what this search finds.
    assert _shape(w) == _shape(rule.witness)


def _shape(w):
    """Vocabularies, horizon, and every row after at most one token."""
    def rows(model):
        prefixes = [(), *((i,) for i in range(len(model.vocab)))]
        return model.vocab.tokens, tuple(tuple(model(p)) for p in prefixes)

    return rows(w.target), rows(w.draft), w.horizon


@pytest.mark.parametrize("rule", LOSSLESS, ids=lambda r: r.name)
@pytest.mark.slow
def test_every_lossless_rule_passes(rule):
    result = search_crossvocab(rule.rule)
    assert result.status == "pass", result
    assert result.cases >= 40


@pytest.mark.parametrize("name", ["tli-unnormalised-q", "tli-oov-by-index"])
def test_token_level_bugs_need_a_draft_token_the_target_lacks(name):
    rule = get_crossvocab_rule(name).rule
    w = found(name).witness
    assert len(shared_tokens(w.draft.vocab, w.target.vocab)) < len(w.draft.vocab)
    # With the draft over the target's own vocabulary the mapping is the identity and
    # the rule is plain TLI: lossless.
    for tokens in (("a", "b"), ("b", "a", "ab"), ("a", "ab", "b", "ba")):
        for seed in range(3):
            target = random_vocab_model(tokens, seed, salt="target")
            draft = random_vocab_model(tokens, seed, salt="draft", zeros=True)
            assert check_crossvocab_step(rule, target, draft, 3).passed


@pytest.mark.slow


def test_retokenized_context_needs_rows_that_depend_on_the_tokenization():
    w = found("slem-retokenized-target-context").witness
    # A context-free target reads the same row whatever the tokenization: the witness
    # target has a row of its own after some token ...
    assert w.spec.target.overrides
    # ... and some text it can write two ways.
    vocab = w.target.vocab
    assert any(len(vocab.encodings(token + other)) > 1 for token in vocab for other in vocab)


# ---- planted rules: merges past the first step (issue 25) ------------------------------


@pytest.mark.parametrize("name", sorted(PLANTED_CROSSVOCAB))
@pytest.mark.slow
def test_planted_merge_bugs_are_found_with_defaults(name):
    result = search_crossvocab(PLANTED_CROSSVOCAB[name], seed=0)
    assert result.status == "fail", result


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANTED_CROSSVOCAB))
def test_planted_merge_bugs_are_found_at_five_seeds_of_five(name):
    # Before: slem-recommits-all-but-the-last-token passed at every seed, at horizon 3
    # and at horizon 5 (one-token tables cannot tell [a, b, x] from [ab, x]).
    assert [search_crossvocab(PLANTED_CROSSVOCAB[name], seed=s).status
            for s in range(5)] == ["fail"] * 5


@pytest.mark.slow
def test_a_bug_past_one_committed_merge_needs_four_characters():
    rule = PLANTED_CROSSVOCAB["slem-recommits-all-but-the-last-token"]
    assert search_crossvocab(rule, seed=0, horizon=3).status == "pass"
    result = search_crossvocab(rule, seed=0)
    assert result.status == "fail" and result.witness.horizon == 4


def test_the_default_horizon_is_the_longest_token_plus_two():
    from specexact.properties.crossvocab_search import CrossVocabSpec, default_horizon

    assert default_horizon(CrossVocabSpec.of(("a", "b"), (1, 1), ("a", "b"), (1, 1))) == 3
    assert default_horizon(CrossVocabSpec.of(("a", "b", "ab"), (1, 1, 1),
                                             ("a", "b"), (1, 1))) == 4
    assert default_horizon(CrossVocabSpec.of(("a", "b"), (1, 1),
                                             ("a", "b", "aba"), (1, 1, 1))) == 5
