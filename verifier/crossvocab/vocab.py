"""Vocabularies as strings, and their tokenizers.

A :class:`Vocabulary` is a tuple of distinct non-empty strings over a small
alphabet; token ``i`` is ``tokens[i]``.  Every character of the alphabet must
be a token itself, so that every text over the alphabet has a tokenization.
The *canonical* tokenization (:meth:`Vocabulary.encode`) is greedy longest
match, left to right; :meth:`Vocabulary.encodings` lists every tokenization,
the non-canonical ones included (a model may put mass on any of them).

>>> v = Vocabulary(("a", "b", "ab"))
>>> v.encode("abab"), v.decode((0, 1, 2))
((2, 2), 'abab')
>>> v.encodings("ab")
((0, 1), (2,))
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Sequence
from typing import Any, final

from specexact.errors import InvalidArgument
from specexact.validation import fail

__all__ = ["Vocabulary", "shared_tokens"]

Ids = tuple[int, ...]


@final
class Vocabulary:
    """Distinct non-empty strings; id ``i`` is ``tokens[i]``.

    Raises :class:`~specexact.errors.InvalidArgument` naming the problem when
    ``tokens`` is not a non-empty sequence of distinct non-empty strings, or
    when a character of the alphabet is not a token of its own.
    """

    __slots__ = ("__weakref__", "_ids", "alphabet", "max_length", "tokens")

    def __init__(self, tokens: Iterable[str]) -> None:
        if isinstance(tokens, str) or not isinstance(tokens, Iterable):
            fail("tokens", tokens, "a tuple of distinct non-empty strings, e.g. ('a', 'b', 'ab')")
        items = tuple(tokens)
        if not items:
            fail("tokens", items, "a non-empty tuple of strings")
        for token in items:
            if not isinstance(token, str) or not token:
                fail("tokens", items, f"non-empty strings only (got {token!r})")
        seen: dict[str, int] = {}
        for i, token in enumerate(items):
            if token in seen:
                msg = (f"tokens={items!r}: {token!r} appears twice (ids {seen[token]} and {i}); "
                       "a vocabulary's strings must be distinct")
                raise InvalidArgument(msg)
            seen[token] = i
        alphabet = "".join(sorted({c for token in items for c in token}))
        missing = [c for c in alphabet if c not in seen]
        if missing:
            msg = (f"tokens={items!r}: the characters {', '.join(map(repr, missing))} are not "
                   "tokens of their own; every character of the alphabet must be one, so that "
                   "every text has a tokenization")
            raise InvalidArgument(msg)
        self.tokens: tuple[str, ...] = items
        self.alphabet: str = alphabet
        self.max_length: int = max(len(t) for t in items)
        self._ids = seen

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, token_id: Any) -> str:
        return self.tokens[operator.index(token_id)]

    def __contains__(self, token: object) -> bool:
        return token in self._ids

    def __iter__(self) -> Any:
        return iter(self.tokens)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and other.tokens == self.tokens

    def __hash__(self) -> int:
        return hash(("Vocabulary", self.tokens))

    def __repr__(self) -> str:
        return f"Vocabulary({self.tokens!r})"

    def id(self, token: str) -> int:
        """The id of the string ``token``; KeyError naming it when it is not a token."""
        try:
            return self._ids[token]
        except KeyError:
            msg = f"{token!r} is not a token of {self!r}"
            raise KeyError(msg) from None

    def get(self, token: str) -> int | None:
        """The id of ``token``, or None when it is not in the vocabulary."""
        return self._ids.get(token)

    def check_text(self, text: str, name: str = "text") -> str:
        if not isinstance(text, str):
            fail(name, text, "a str")
        bad = sorted({c for c in text if c not in self._ids})
        if bad:
            msg = (f"{name}={text!r} has characters {', '.join(map(repr, bad))} outside the "
                   f"alphabet {self.alphabet!r} of {self!r}")
            raise InvalidArgument(msg)
        return text

    def decode(self, ids: Iterable[Any]) -> str:
        """The text of a sequence of ids (ints, or lazy tokens, which get fixed)."""
        tokens = self.tokens
        return "".join([tokens[operator.index(i)] for i in ids])

    def first_token(self, text: str) -> int:
        """The id of the longest token that is a prefix of ``text`` (greedy's first choice).

        It depends on at most ``max_length`` characters of ``text``.
        """
        for length in range(min(self.max_length, len(text)), 0, -1):
            found = self._ids.get(text[:length])
            if found is not None:
                return found
        msg = f"no token of {self!r} starts {text!r}"
        raise InvalidArgument(msg)

    def encode(self, text: str) -> Ids:
        """The canonical tokenization of ``text``: greedy longest match, left to right."""
        return _encode(self, self.check_text(text))

    def encodings(self, text: str) -> tuple[Ids, ...]:
        """Every tokenization of ``text`` (canonical and not), in sorted order."""
        return _encodings(self, self.check_text(text))

    def is_canonical(self, ids: Sequence[Any]) -> bool:
        """Whether ``ids`` is the canonical tokenization of its own text."""
        key = tuple(operator.index(i) for i in ids)
        return _encode(self, self.decode(key)) == key


@functools.lru_cache(maxsize=1 << 14)
def _encode(vocab: Vocabulary, text: str) -> Ids:
    out: list[int] = []
    at = 0
    while at < len(text):
        token = vocab.first_token(text[at:at + vocab.max_length])
        out.append(token)
        at += len(vocab.tokens[token])
    return tuple(out)


@functools.lru_cache(maxsize=1 << 12)
def _encodings(vocab: Vocabulary, text: str) -> tuple[Ids, ...]:
    if not text:
        return ((),)
    found: list[Ids] = []
    for length in range(1, min(vocab.max_length, len(text)) + 1):
        head = vocab.get(text[:length])
        if head is not None:
            found.extend((head, *rest) for rest in _encodings(vocab, text[length:]))
    return tuple(sorted(found))


def shared_tokens(draft: Vocabulary, target: Vocabulary) -> tuple[tuple[int, int], ...]:
    """The strings both vocabularies hold, as (draft id, target id) pairs by draft id.

    >>> shared_tokens(Vocabulary(("a", "b", "ba")), Vocabulary(("b", "a", "ab")))
    ((0, 1), (1, 0))
    """
    pairs = []
    for i, token in enumerate(draft.tokens):
        j = target.get(token)
        if j is not None:
            pairs.append((i, j))
    return tuple(pairs)
