"""Exact toy language models over a string vocabulary, and their laws over text.

A :class:`VocabModel` pairs a :class:`~specexact.crossvocab.vocab.Vocabulary`
with a next-token model over its ids, ``model(ids) -> row`` (any model of
:mod:`specexact.steps.models`: context-free, tables, random context-dependent
tables).  The model generates token ids; its text is their concatenation.  A
model may put mass on any tokenization of a text, canonical or not:
:func:`continuation_law` and :func:`prefix_probability` sum over all of them,
including a last token that runs past the text (a model that emits ``"ab"``
has produced a text starting with ``"a"``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any, final

from specexact.crossvocab.vocab import Vocabulary
from specexact.errors import InvalidArgument
from specexact.numbers import ONE, ZERO
from specexact.steps.models import ContextFreeModel, RandomModel, TableModel
from specexact.validation import check_integer, fail

__all__ = [
    "VocabModel",
    "context_free_model",
    "continuation_law",
    "prefix_probability",
    "random_vocab_model",
    "table_model",
]

Ids = tuple[int, ...]


@final
class VocabModel:
    """A language model over a string vocabulary: ``model(ids)`` is the next-token row.

    ``vocab`` is a :class:`Vocabulary` (or a tuple of strings, made into one);
    ``model`` a callable ``ids -> probabilities`` over ``len(vocab)`` tokens.

    >>> m = context_free_model(("a", "b", "ab"), ["1/2", "1/4", "1/4"])
    >>> m.vocab.tokens, m(())
    (('a', 'b', 'ab'), (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)))
    """

    __slots__ = ("model", "vocab")

    def __init__(self, vocab: Vocabulary | Iterable[str], model: Callable[[Ids], Any]) -> None:
        self.vocab: Vocabulary = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
        if not callable(model):
            fail("model", model, "a callable ids -> next-token probabilities")
        self.model: Any = model

    def __call__(self, ids: Iterable[Any]) -> Any:
        return self.model(tuple(ids))

    def text(self, ids: Iterable[Any]) -> str:
        """The text of ``ids`` in this model's vocabulary."""
        return self.vocab.decode(ids)

    def __repr__(self) -> str:
        return f"VocabModel({self.vocab.tokens!r}, {self.model!r})"


def context_free_model(vocab: Vocabulary | Iterable[str], row: Sequence[Any]) -> VocabModel:
    """The same next-token row after every prefix."""
    voc = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
    model = ContextFreeModel(row)
    _check_width(voc, len(model.p), "row")
    return VocabModel(voc, model)


def table_model(vocab: Vocabulary | Iterable[str], rows: dict[Sequence[int], Sequence[Any]],
                default: Sequence[Any]) -> VocabModel:
    """Rows at a few prefixes (of ids), ``default`` everywhere else."""
    voc = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
    model = TableModel(rows, default=default)
    assert model.default is not None
    _check_width(voc, len(model.default), "default")
    return VocabModel(voc, model)


def random_vocab_model(vocab: Vocabulary | Iterable[str], seed: int = 0, *,
                       salt: str = "", zeros: bool = False, max_weight: int = 4) -> VocabModel:
    """A random context-dependent table over ``vocab`` (see :class:`RandomModel`)."""
    voc = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
    return VocabModel(voc, RandomModel(len(voc), seed, zeros=zeros, max_weight=max_weight,
                                       salt=f"crossvocab|{voc.tokens}|{salt}"))


def _check_width(vocab: Vocabulary, width: int, name: str) -> None:
    if width != len(vocab):
        msg = (f"{name} has {width} entries but the vocabulary {vocab.tokens!r} has "
               f"{len(vocab)} tokens")
        raise InvalidArgument(msg)


def prefix_probability(model: VocabModel, context: Sequence[Any], text: str) -> Fraction:
    """P(the text ``model`` generates after the ids ``context`` starts with ``text``).

    Summed over every tokenization, a last token running past ``text``
    included: "the draft's probability of a string prefix summed over its
    tokenizations".
    """
    vocab = model.vocab
    vocab.check_text(text)
    ctx = tuple(operator.index(t) for t in context)
    return _prefix_probability(model, vocab.tokens, ctx, text)


def _prefix_probability(model: VocabModel, tokens: tuple[str, ...], ctx: Ids,
                        rest: str) -> Fraction:
    if not rest:
        return ONE
    total = ZERO
    for token, weight in enumerate(model(ctx)):
        if not weight:
            continue
        piece = tokens[token]
        if len(piece) >= len(rest):
            if piece.startswith(rest):
                total += weight
        elif rest.startswith(piece):
            total += weight * _prefix_probability(model, tokens, (*ctx, token), rest[len(piece):])
    return total


def continuation_law(model: VocabModel, context: Sequence[Any], length: int, *,
                     tick: Callable[[], Any] | None = None) -> dict[str, Fraction]:
    """The exact law of the next ``length`` characters ``model`` generates after ``context``.

    Every path of tokens is followed until its text reaches ``length``
    characters; paths with the same text add up (non-canonical tokenizations
    included).  ``continuation_law(target, (), n)`` is the target's own law
    over the first ``n`` characters of text.  ``tick()`` is called before each
    row is read (a time budget raises there).
    """
    check_integer(length, "length", min_value=0)
    tokens = model.vocab.tokens
    layer: list[tuple[Ids, str, Fraction]] = [(tuple(operator.index(t) for t in context), "",
                                               ONE)]
    out: dict[str, Fraction] = {}
    if length == 0:
        return {"": ONE}
    while layer:
        nxt: list[tuple[Ids, str, Fraction]] = []
        for ctx, text, mass in layer:
            if tick is not None:
                tick()
            for token, weight in enumerate(model(ctx)):
                if not weight:
                    continue
                grown = text + tokens[token]
                if len(grown) >= length:
                    key = grown[:length]
                    out[key] = out.get(key, ZERO) + mass * weight
                else:
                    nxt.append(((*ctx, token), grown, mass * weight))
        layer = nxt
    return out
