"""The exact law of one call of a cross-vocabulary step: the one enumerator, adapted.

This is :func:`specexact.exact.enumerator.enumerate_outcomes` with what a
cross-vocabulary step returns as its outcome: a non-empty tuple of
*target* ids, validated at each leaf (the message names the target
vocabulary and the emitted text), cut to the tokens the decode still needs
before lazy tokens are folded.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any

from specexact.crossvocab.vocab import Vocabulary
from specexact.distribution import InvalidToken
from specexact.errors import InvalidOutput
from specexact.exact.enumerator import enumerate_outcomes
from specexact.exact.random_source import ExactRandom, LazyToken, LazyUniform
from specexact.exact.tree import Budget, Chooser

__all__ = ["enumerate_crossvocab_step"]

Ids = tuple[int, ...]


def _invalid(prefix: Ids, vocab: Vocabulary, out: Any, why: str, weight: Fraction,
             chooser: Chooser) -> InvalidOutput:
    msg = (f"the cross-vocabulary step at target prefix {prefix} (text "
           f"{vocab.decode(prefix)!r}) returned {out!r}{why}")
    context = {"prefix": prefix, "output": out, "probability at least": weight}
    return InvalidOutput(msg, context=context, path=chooser.describe())


def _target_ids(out: Any, prefix: Ids, vocab: Vocabulary, weight: Fraction,
                chooser: Chooser) -> list[Any]:
    shown = out
    if isinstance(out, list):
        out = tuple(out)
    if isinstance(out, str):
        raise _invalid(prefix, vocab, shown, ", a str; a cross-vocabulary step returns the "
                       "target ids it appends (encode text with target.vocab.encode, or pick "
                       "the tokenization the target itself would)", weight, chooser)
    if not isinstance(out, tuple):
        raise _invalid(prefix, vocab, shown, ", not a tuple of target ids, e.g. (2,) or (0, 1)",
                       weight, chooser)
    if not out:
        raise _invalid(prefix, vocab, shown, ", an empty tuple; a step must emit at least one "
                       "target token", weight, chooser)
    size = len(vocab)
    valid = f"the target vocabulary's ids 0..{size - 1} {vocab.tokens!r}"
    items: list[Any] = []
    for token in out:
        if isinstance(token, LazyToken) and not token.is_fixed:
            ids = token.possible_ids()
            if max(ids) >= size:
                raise _invalid(prefix, vocab, shown, f": it can emit id {max(ids)}, outside "
                               f"{valid}", weight, chooser)
            items.append(token)
            continue
        if isinstance(token, (bool, LazyUniform)):
            raise _invalid(prefix, vocab, shown, f", which holds "
                           f"{InvalidToken(token).description}, not a target id", weight, chooser)
        try:
            value = operator.index(token)
        except Exception:
            raise _invalid(prefix, vocab, shown, f", which holds "
                           f"{InvalidToken(token).description}, not a target id",
                           weight, chooser) from None
        if not 0 <= value < size:
            raise _invalid(prefix, vocab, shown, f": id {value} is outside {valid}",
                           weight, chooser)
        items.append(value)
    return items


def enumerate_crossvocab_step(run: Callable[[ExactRandom], Any], *, prefix: Ids,
                              vocab: Vocabulary, keep: int | None, budget: Budget,
                              uniform_bits: int | None, context: dict[str, Any],
                              input_error: Callable[[], BaseException | None] | None = None
                              ) -> dict[Hashable, Fraction]:
    """The law of ``run(rng)``, a step call at target ``prefix``: tuples of target ids,
    cut to ``keep`` tokens (all when None)."""

    def normalise(value: Any, weight: Fraction, chooser: Chooser) -> Any:
        items = _target_ids(value, prefix, vocab, weight, chooser)
        return tuple(items if keep is None else items[:keep])

    return enumerate_outcomes(run, normalise=normalise, budget=budget,
                              uniform_bits=uniform_bits, context=context,
                              input_error=input_error)
