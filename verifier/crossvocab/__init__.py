"""Speculative decoding across vocabularies, verified on text.

Vocabularies of strings and their tokenizers (:mod:`~specexact.crossvocab.vocab`),
exact toy models over each (:mod:`~specexact.crossvocab.models`), the
cross-vocabulary step protocol and its exact decode
(:mod:`~specexact.crossvocab.decode`), the verdict on the law of the emitted
text (:mod:`~specexact.crossvocab.verdict`) and the efficiency per target call
(:mod:`~specexact.crossvocab.efficiency`).  Built on :mod:`specexact.exact`
and the toy models of :mod:`specexact.steps`.
"""

from __future__ import annotations

from specexact.crossvocab.decode import (
    CrossVocabStep,
    crossvocab_law,
    crossvocab_step_law,
    target_text_law,
)
from specexact.crossvocab.efficiency import CrossVocabEfficiency, crossvocab_efficiency
from specexact.crossvocab.models import (
    VocabModel,
    context_free_model,
    continuation_law,
    prefix_probability,
    random_vocab_model,
    table_model,
)
from specexact.crossvocab.verdict import (
    CrossVocabVerdict,
    TextComparison,
    check_crossvocab_step,
    compare_texts,
)
from specexact.crossvocab.vocab import Vocabulary, shared_tokens
from specexact.crossvocab.witness import CrossVocabWitness

__all__ = [
    "CrossVocabEfficiency",
    "CrossVocabStep",
    "CrossVocabVerdict",
    "CrossVocabWitness",
    "TextComparison",
    "VocabModel",
    "Vocabulary",
    "check_crossvocab_step",
    "compare_texts",
    "context_free_model",
    "continuation_law",
    "crossvocab_efficiency",
    "crossvocab_law",
    "crossvocab_step_law",
    "prefix_probability",
    "random_vocab_model",
    "shared_tokens",
    "table_model",
    "target_text_law",
]
