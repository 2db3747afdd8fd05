"""Cross-vocabulary rules for the catalogue, each with its exact witness.

The steps are in :mod:`specexact.counterexamples.crossvocab_steps`.  Each witness is
what the default search (:func:`specexact.properties.search_crossvocab`, as
``specexact audit --kind cross-vocab`` runs it) shrank the failure to;
``tests/test_crossvocab.py`` re-verifies every one exactly, and the
catalogue audit re-finds them from scratch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from specexact.counterexamples import crossvocab_steps as cv
from specexact.counterexamples.lookup import by_name
from specexact.crossvocab import CrossVocabWitness, context_free_model, table_model

__all__ = ["CROSSVOCAB_RULES", "CrossVocabRule", "get_crossvocab_rule"]

_TIMOR = ("Timor et al., ICML 2025 (Lossless Speculative Decoding Algorithms for "
          "Heterogeneous Vocabularies)")


@dataclass(frozen=True)
class CrossVocabRule:
    """One cross-vocabulary rule: the step, whether it is lossless, why, and its witness."""

    name: str
    lossless: bool
    rule: Callable[..., Any]
    summary: str
    source: str | None
    witness: CrossVocabWitness | None


def _cf(target: Sequence[str], p: Sequence[str], draft: Sequence[str], q: Sequence[str],
        horizon: int) -> CrossVocabWitness:
    return CrossVocabWitness(context_free_model(tuple(target), p),
                             context_free_model(tuple(draft), q), horizon)


# After the token "ab" the target never emits "b"; after [a, b] it is uniform.
_AFTER_AB = table_model(("a", "b", "ab"), {(2,): ("2/3", "0", "1/3")}, ("1/3", "1/3", "1/3"))

CROSSVOCAB_RULES: tuple[CrossVocabRule, ...] = (
    CrossVocabRule(
        "tli", True, cv.tli,
        "Token-level intersection, 2 drafts: the draft's row restricted to the strings "
        "both vocabularies hold and renormalised; drafts drawn from it and verified over "
        "target ids with that same restricted q (min(1, p/q), residual max(p - q, 0)).",
        _TIMOR, None),
    CrossVocabRule(
        "slem", True, cv.slem,
        "String-level exact match: 2 draft tokens, their text re-tokenized by the target, "
        "each position kept only while the target's own sample equals it. Lossless as any "
        "proposal verified by exact match, whatever the tokenizers.", _TIMOR, None),
    CrossVocabRule(
        "slrs", True, cv.slrs,
        "String-level rejection sampling, written exactly: the proposal is the first target "
        "token of the draft's text (greedy, with enough look-ahead to settle it) and its law "
        "Q sums the draft's probability of each string over all its tokenizations; accept "
        "with min(1, p/Q), else the residual.", _TIMOR, None),
    CrossVocabRule(
        "tli-unnormalised-q", False, cv.tli_unnormalised_q,
        "TLI whose ratio and residual use the restricted q before renormalising: when the "
        "draft likes a token the target lacks (here 'ab'), q's mass is below 1, the ratio "
        "overshoots and the drafted token is always kept.", _TIMOR,
        _cf(("a", "b"), ("1/2", "1/2"), ("a", "b", "ab"), ("0", "1/2", "1/2"), 1)),
    CrossVocabRule(
        "tli-oov-by-index", False, cv.tli_oov_by_index,
        "TLI drawing from the whole draft row and mapping a token the target lacks to the "
        "target id with the same index: the proposal law is not the restricted q the ratio "
        "uses, and an index past the target vocabulary crashes.", None,
        _cf(("a", "b"), ("0", "1"), ("a", "b", "ab"), ("0", "1/2", "1/2"), 1)),
    CrossVocabRule(
        "slem-compares-draft-ids", False, cv.slem_compares_draft_ids,
        "SLEM whose match test compares the target's sampled id with the draft's id at the "
        "same position instead of the text: the draft's [a, b] is the target's [ab], and "
        "a target sample 'a' (id 0, as the draft's 'a') keeps 'ab'.", None,
        _cf(("a", "b", "ab"), ("1/4", "1/4", "1/2"), ("a", "b"), ("1/2", "1/2"), 2)),
    CrossVocabRule(
        "slem-retokenized-target-context", False, cv.slem_retokenized_target_context,
        "SLEM reading the target's rows after the canonical tokenization of the emitted "
        "text instead of the target's own tokens: a non-canonical tokenization treated as "
        "canonical. On the witness the target's row after the token 'ab' differs from its "
        "row after [a, b], and the rule reads the first for both.", None,
        CrossVocabWitness(_AFTER_AB, context_free_model(("a", "b"), ("1/2", "1/2")), 3)),
    CrossVocabRule(
        "slrs-canonical-draft-probability", False, cv.slrs_canonical_draft_probability,
        "SLRS whose Q takes each string's draft probability from its canonical draft "
        "tokenization only: the draft writing 'a' as the start of 'ab' is missed, Q is "
        "not the proposal law.", _TIMOR,
        _cf(("a", "b"), ("1/2", "1/2"), ("a", "b", "ab"), ("0", "0", "1"), 1)),
    CrossVocabRule(
        "slrs-drops-partial-token", False, cv.slrs_drops_partial_token,
        "SLRS proposing from 2 draft tokens re-tokenized by the target, with the last target "
        "token dropped as possibly partial: a token is proposed only when a second one "
        "follows, which changes the proposal law the ratio assumes.", _TIMOR,
        _cf(("a", "b", "ab"), ("1/4", "1/4", "1/2"), ("a", "b"), ("1/2", "1/2"), 1)),
)


def get_crossvocab_rule(name: str) -> CrossVocabRule:
    """The rule called ``name``; KeyError listing close names."""
    return by_name(CROSSVOCAB_RULES, name, "cross-vocabulary rule")
