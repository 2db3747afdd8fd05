"""Decoding exactly with a cross-vocabulary step: the law of the emitted text.

The protocol.  A cross-vocabulary step is

    step(target, draft, prefix, rng) -> tuple of target ids

* ``target`` and ``draft`` are :class:`~specexact.crossvocab.models.VocabModel`
  objects over two vocabularies of strings (``target.vocab``,
  ``draft.vocab``) with the same alphabet; ``target(ids)`` is the target's
  next-token row after target ids, ``draft(ids)`` the draft's after draft ids;
* ``prefix`` is the tuple of target ids emitted so far (its text is
  ``target.vocab.decode(prefix)``); what context the draft gets (usually
  ``draft.vocab.encode(text)``) is the rule's business;
* the step returns the target ids it appends, at least one.

The law preserved is **the target's law over text**: the law of the first
``horizon`` characters of the text the target generates, summed over every
target tokenization (a target may put mass on non-canonical ones).  A step is
lossless when the text its decode emits has that law.  The state of the
decode is the emitted target-token sequence, not its text, since a target's
next row depends on its tokens: a step that emits the target's own tokens
(rejection sampling over target ids, exact match) keeps the law of target
token sequences, which implies the law of text; a step that re-tokenizes
text on its own (canonically, say) changes the target's context and is
judged by what that does to the text.  For a canonical target (mass only on
canonical tokenizations) the law of text and the law of target token
sequences determine each other.

States are processed by the length of their text: each call emits at least
one token, so at least one character, and every state is enumerated once
(one call of :func:`~specexact.crossvocab.enumeration.enumerate_crossvocab_step`
per reachable state).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from specexact.crossvocab.enumeration import enumerate_crossvocab_step
from specexact.crossvocab.models import VocabModel, continuation_law
from specexact.distribution import Distribution
from specexact.errors import InvalidArgument
from specexact.exact.tree import Budget
from specexact.numbers import ZERO
from specexact.steps.decode import DecodeClock, compose_levels
from specexact.steps.models import RecordingModel
from specexact.validation import check_integer, fail

__all__ = [
    "CrossVocabRun",
    "CrossVocabStep",
    "HandedModels",
    "check_horizon",
    "crossvocab_law",
    "crossvocab_step_law",
    "new_clock",
    "prepare_models",
    "run_crossvocab",
    "target_text_law",
]

Ids = tuple[int, ...]
#: ``step(target, draft, prefix, rng) -> tuple of target ids``.
CrossVocabStep = Callable[[Any, Any, Ids, Any], Any]


def check_horizon(horizon: Any) -> int:
    try:
        return check_integer(horizon, "horizon", min_value=1)
    except InvalidArgument:
        fail("horizon", horizon, "an integer >= 1 (the number of characters of text compared)")


@dataclass
class HandedModels:
    """The two models as the step gets them: recording every row read, validated."""

    target: VocabModel
    draft: VocabModel
    target_recorder: RecordingModel
    draft_recorder: RecordingModel

    def input_error(self) -> BaseException | None:
        for recorder in (self.target_recorder, self.draft_recorder):
            if recorder.error is not None:
                return recorder.error
        return None


def prepare_models(target: Any, draft: Any) -> HandedModels:
    """Check the pair and wrap each model in a recorder; InvalidArgument naming the problem."""
    for name, model in (("target", target), ("draft", draft)):
        if not isinstance(model, VocabModel):
            msg = (f"{name}={model!r} is not a cross-vocabulary model; give a "
                   "specexact.crossvocab.VocabModel(vocabulary, model)")
            raise InvalidArgument(msg)
    if target.vocab.alphabet != draft.vocab.alphabet:
        msg = (f"the target's alphabet {target.vocab.alphabet!r} and the draft's "
               f"{draft.vocab.alphabet!r} differ; each side must be able to tokenize the "
               "other's text")
        raise InvalidArgument(msg)
    t_rec = RecordingModel(target.model, name="target", vocab_size=len(target.vocab))
    d_rec = RecordingModel(draft.model, name="draft", vocab_size=len(draft.vocab))
    return HandedModels(VocabModel(target.vocab, t_rec), VocabModel(draft.vocab, d_rec),
                        t_rec, d_rec)


def _enumerate(step: CrossVocabStep, models: HandedModels, prefix: Ids, keep: int | None,
               budget: Budget, uniform_bits: int | None) -> dict[Hashable, Fraction]:
    t, d = models.target, models.draft
    recorders = (models.target_recorder, models.draft_recorder)

    def run(rng: Any) -> Any:
        out = step(t, d, prefix, rng)
        for recorder in recorders:
            recorder.settle()
        return out

    context: dict[str, Any] = {"prefix": prefix, "text": t.vocab.decode(prefix)}
    return enumerate_crossvocab_step(run, prefix=prefix, vocab=t.vocab, keep=keep,
                                     budget=budget, uniform_bits=uniform_bits,
                                     context=context, input_error=models.input_error)


@dataclass
class CrossVocabRun:
    """What one decode produced: the law of text and the states enumerated."""

    horizon: int
    text_law: Distribution = field(default_factory=Distribution)
    states: int = 0


def run_crossvocab(step: CrossVocabStep, models: HandedModels, horizon: int, *,
                   clock: Any = None, uniform_bits: int | None = None) -> CrossVocabRun:
    """Decode with ``step`` from the empty text until ``horizon`` characters (exactly)."""
    clock = clock or new_clock(None)
    vocab = models.target.vocab

    def law_at(prefix: Ids, keep: int, budget: Budget) -> dict[Hashable, Fraction]:
        return _enumerate(step, models, prefix, keep, budget, uniform_bits)

    def advance(prefix: Ids, out: Ids, weight: Fraction) -> tuple[int | None, Hashable]:
        ids = prefix + out
        text = vocab.decode(ids)
        return (None, text[:horizon]) if len(text) >= horizon else (len(text), ids)

    texts, states = compose_levels((), horizon, clock, law_at, advance)
    return CrossVocabRun(horizon, Distribution(texts.items()), states)


def target_text_law(target: VocabModel, horizon: int) -> Distribution:
    """The target's own law over the first ``horizon`` characters of its text.

    >>> from specexact.crossvocab.models import context_free_model
    >>> target_text_law(context_free_model(("a", "b", "ab"), ["1/2", "0", "1/2"]), 2)
    Distribution({'aa': 1/2, 'ab': 1/2})
    """
    horizon = check_horizon(horizon)
    if not isinstance(target, VocabModel):
        fail("target", target, "a specexact.crossvocab.VocabModel")
    return Distribution(continuation_law(target, (), horizon).items())


def crossvocab_law(step: CrossVocabStep, target: Any, draft: Any, horizon: int, *,
                   budget: Budget | None = None,
                   uniform_bits: int | None = None) -> Distribution:
    """The exact law of the first ``horizon`` characters of text the step's decode emits."""
    horizon = check_horizon(horizon)
    models = prepare_models(target, draft)
    return run_crossvocab(step, models, horizon, clock=new_clock(budget),
                          uniform_bits=uniform_bits).text_law


def crossvocab_step_law(step: CrossVocabStep, target: Any, draft: Any,
                        prefix: Ids = (), *, budget: Budget | None = None,
                        uniform_bits: int | None = None) -> Distribution:
    """The exact law of the tuple of target ids one call of ``step`` emits at ``prefix``."""
    models = prepare_models(target, draft)
    ids = tuple(prefix)
    for token in ids:
        if not isinstance(token, int) or not 0 <= token < len(target.vocab):
            fail("prefix", prefix, f"a tuple of target ids 0..{len(target.vocab) - 1}")
    law = _enumerate(step, models, ids, None, new_clock(budget).next_budget(ZERO), uniform_bits)
    return Distribution(law)


def new_clock(budget: Budget | None) -> DecodeClock:
    """One time budget for a check: the target's law and the decode share it."""
    return DecodeClock(budget, "cross-vocabulary decoding")
