"""Speculative decoding across vocabularies, verified on text.

Vocabularies of strings and their tokenizers (:mod:`~verifier.crossvocab.vocab`),
exact toy models over each (:mod:`~verifier.crossvocab.models`), the
cross-vocabulary step protocol and its exact decode
(:mod:`~verifier.crossvocab.decode`), the verdict on the law of the emitted
text (:mod:`~verifier.crossvocab.verdict`) and the efficiency per target call
(:mod:`~verifier.crossvocab.efficiency`).  Built on :mod:`verifier.exact`
and the toy models of :mod:`verifier.steps`.
"""

from __future__ import annotations

from verifier.crossvocab.decode import (
    CrossVocabStep,
    crossvocab_law,
    crossvocab_step_law,
    target_text_law,
)
from verifier.crossvocab.efficiency import CrossVocabEfficiency, crossvocab_efficiency
from verifier.crossvocab.models import (
    VocabModel,
    context_free_model,
    continuation_law,
    prefix_probability,
    random_vocab_model,
    table_model,
)
from verifier.crossvocab.verdict import (
    CrossVocabVerdict,
    TextComparison,
    check_crossvocab_step,
    compare_texts,
)
from verifier.crossvocab.vocab import Vocabulary, shared_tokens
from verifier.crossvocab.witness import CrossVocabWitness

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
