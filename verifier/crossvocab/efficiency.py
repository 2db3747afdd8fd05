"""How much a cross-vocabulary step buys, exactly: target tokens and characters per call.

One call of a step is one target pass, so the expected number of target
tokens a call emits is the expected number of target tokens per target
call, as :func:`specexact.steps.step_efficiency` reports for steps; the
expected number of characters per call is the same figure in text, which is
what two rules with different tokenizers can be compared on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

from specexact.crossvocab.decode import CrossVocabStep, crossvocab_step_law
from specexact.distribution import Distribution
from specexact.exact.tree import Budget

__all__ = ["CrossVocabEfficiency", "crossvocab_efficiency"]


@final
@dataclass(frozen=True)
class CrossVocabEfficiency:
    """The exact efficiency of one call at one prefix.

    ``tokens``: law of the number of target tokens the call emits (target
    tokens per target call); ``characters``: law of the number of characters.
    """

    tokens: Distribution
    characters: Distribution

    @property
    def expected_tokens(self) -> Fraction:
        """Expected target tokens per target call."""
        return self.tokens.mean()

    @property
    def expected_characters(self) -> Fraction:
        """Expected characters of text per target call."""
        return self.characters.mean()


def crossvocab_efficiency(step: CrossVocabStep, target: Any, draft: Any,
                          prefix: Sequence[int] = (), *, budget: Budget | None = None,
                          uniform_bits: int | None = None) -> CrossVocabEfficiency:
    """Exact target tokens (and characters) per target call of ``step`` at ``prefix``.

    >>> from specexact.crossvocab.models import context_free_model
    >>> def plain(target, draft, prefix, rng):
    ...     return (rng.categorical(target(prefix)),)
    >>> t = context_free_model(("a", "b", "ab"), ["1/2", "1/4", "1/4"])
    >>> crossvocab_efficiency(plain, t, t).expected_characters
    Fraction(5, 4)
    """
    law = crossvocab_step_law(step, target, draft, tuple(prefix), budget=budget,
                              uniform_bits=uniform_bits)
    return CrossVocabEfficiency(law.map(len),
                                law.map(lambda ids: len(target.vocab.decode(ids))))
