"""Toy language models as exact tables, stateless and with a cache.

A stateless model is any callable ``model(prefix) -> next-token probabilities``
for a tuple prefix of token ids.  The classes here build the cases the
multi-step checks need: the same law at every prefix, random context-dependent
tables, one-hot rows, pairs with zeros or disjoint supports, a model that
raises on a prefix it should never see, a recorder of every prefix asked, and
:class:`CachedModel`, a stateful model whose next-token law is computed from
its own cache (so a step that forgets to roll it back is caught).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import math
import operator
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence, Sequence
from fractions import Fraction
from typing import Any, NoReturn, Protocol, TypeVar, runtime_checkable

from specexact.errors import ForeignProtocol, InvalidArgument, InvalidDistribution
from specexact.exact.random_source import LazyToken, RowSource, ValidatedRow
from specexact.numbers import as_distribution
from specexact.validation import check_choice, check_integer, fail

__all__ = [
    "CACHE_METHODS",
    "MODEL_KINDS",
    "CachedModel",
    "ContextFreeModel",
    "DeferredList",
    "Model",
    "RaisingModel",
    "RandomModel",
    "RecordingModel",
    "StatefulModel",
    "TableModel",
    "format_prefix",
    "random_model_pair",
]

#: The methods of stateful (cached) models, which the stateless models lack.
CACHE_METHODS = frozenset({"cache", "next_distribution", "append", "extend", "truncate",
                           "rollback", "reset"})

Prefix = tuple[int, ...]
Row = tuple[Fraction, ...]
_T = TypeVar("_T")
#: A stateless model: ``model(prefix) -> next-token probabilities``.
Model = Callable[[Prefix], Sequence[Any]]

#: At most this many rows never read are added to a witness (see RecordingModel).
_COMPLETION_LIMIT = 2000
#: RandomModel keeps at most this many rows it computed.
_ROW_CACHE = 1 << 16

MODEL_KINDS = ("random", "context-free", "equal", "zeros", "disjoint", "one-hot")


def format_prefix(prefix: Sequence[int]) -> str:
    """``(0, 1)`` -> ``"0,1"``; the empty prefix is ``""`` (the JSON witness format)."""
    return ",".join(str(t) for t in prefix)


def _as_prefix(prefix: Iterable[Any]) -> Prefix:
    # operator.index fixes a lazy token: the row really depends on its value.
    return tuple(operator.index(t) for t in prefix)


def _check_vocab_size(vocab_size: int) -> None:
    try:
        check_integer(vocab_size, "vocab_size", min_value=1)
    except InvalidArgument:
        fail("vocab_size", vocab_size, "a positive integer")


class ContextFreeModel:
    """The same next-token law ``p`` after every prefix.

    >>> ContextFreeModel(["1/3", "2/3"])((0, 1))
    (Fraction(1, 3), Fraction(2, 3))
    """

    def __init__(self, p: Sequence[Any]) -> None:
        self.p: Row = as_distribution(p, name="p")

    def __call__(self, prefix: Prefix) -> Row:
        return self.p

    def __repr__(self) -> str:
        return f"ContextFreeModel(({', '.join(str(x) for x in self.p)}))"


class TableModel:
    """An explicit table prefix -> row; ``default`` answers every other prefix.

    Without a default, asking for a prefix outside the table raises KeyError
    naming it (a cheap way to catch a step that looks where it should not).
    """

    def __init__(self, rows: Mapping[Sequence[int], Sequence[Any]],
                 default: Sequence[Any] | None = None) -> None:
        self.rows: dict[Prefix, Row] = {}
        for prefix, row in rows.items():
            key = _as_prefix(prefix)
            self.rows[key] = as_distribution(row, name=f"row at prefix {key}")
        self.default: Row | None = None if default is None \
            else as_distribution(default, name="default row")
        sizes = {len(r) for r in self.rows.values()}
        if self.default is not None:
            sizes.add(len(self.default))
        if len(sizes) > 1:
            msg = f"the table's rows have different lengths {sorted(sizes)}; one vocabulary"
            raise InvalidDistribution(msg)

    def __call__(self, prefix: Prefix) -> Row:
        row = self.rows.get(tuple(prefix))
        if row is not None:
            return row
        if self.default is None:
            msg = f"TableModel has no row for prefix {tuple(prefix)} and no default"
            raise KeyError(msg)
        return self.default

    def __repr__(self) -> str:
        return f"TableModel({len(self.rows)} rows, default={self.default})"


class RandomModel:
    """A context-dependent random table over ``vocab_size`` tokens, defined at every prefix.

    The row after a prefix is a pure function of ``(seed, prefix)`` (so two
    instances with the same arguments are the same model), with integer
    weights in ``0..max_weight`` normalised: small denominators, exact.
    ``zeros=True`` puts at least one 0 in every row (when ``vocab_size >= 2``);
    ``one_hot=True`` makes every row deterministic (a greedy model).
    """

    def __init__(self, vocab_size: int, seed: int = 0, *, zeros: bool = False,
                 one_hot: bool = False, max_weight: int = 4, salt: str = "") -> None:
        _check_vocab_size(vocab_size)
        try:
            check_integer(max_weight, "max_weight", min_value=1)
        except InvalidArgument:
            fail("max_weight", max_weight, "a positive integer")
        self.vocab_size = vocab_size
        self.seed = seed
        self.zeros = zeros
        self.one_hot = one_hot
        self.max_weight = max_weight
        self.salt = salt
        self._rows: dict[Prefix, Row] = {}

    def _rng(self, prefix: Prefix) -> random.Random:
        text = f"{self.salt}|{self.seed}|{format_prefix(prefix)}"
        return random.Random(hashlib.sha256(text.encode()).digest())

    def __call__(self, prefix: Prefix) -> Row:
        key = tuple(prefix)
        row = self._rows.get(key)
        if row is None:
            if len(self._rows) >= _ROW_CACHE:
                # Bounded: the engine records the rows it reads anyway, and a
                # long decode asks for millions of prefixes.
                self._rows.clear()
            row = self._rows[key] = self._make(key)
        return row

    def _make(self, prefix: Prefix) -> Row:
        rng = self._rng(prefix)
        v = self.vocab_size
        if self.one_hot:
            hot = rng.randrange(v)
            return tuple(Fraction(int(i == hot)) for i in range(v))
        low = 0 if self.zeros else 1
        weights = [rng.randint(low, self.max_weight) for _ in range(v)]
        if not any(weights):
            weights[rng.randrange(v)] = 1
        if self.zeros and v > 1 and all(weights):
            weights[rng.randrange(v)] = 0
        total = sum(weights)
        return tuple([_fraction(w, total) for w in weights])

    def __repr__(self) -> str:
        opts = "".join(f", {k}=True" for k in ("zeros", "one_hot") if getattr(self, k))
        salt = f", salt={self.salt!r}" if self.salt else ""
        return f"RandomModel({self.vocab_size}, seed={self.seed}{opts}{salt})"


_FRACTIONS: dict[tuple[int, int], Fraction] = {}


def _fraction(numerator: int, denominator: int) -> Fraction:
    """``Fraction(numerator, denominator)``, one shared object per value.

    Random rows have small integer weights, so the same few values recur in
    every row; sharing them keeps a long decode's rows small (most of its
    memory otherwise).
    """
    key = (numerator, denominator)
    value = _FRACTIONS.get(key)
    if value is None:
        if len(_FRACTIONS) > 100_000:
            _FRACTIONS.clear()
        value = _FRACTIONS[key] = Fraction(numerator, denominator)
    return value


class _DisjointModel:
    """Rows of ``base`` restricted to the tokens with ``id % 2 == parity`` (renormalised)."""

    def __init__(self, base: RandomModel, parity: int) -> None:
        self.base = base
        self.parity = parity

    def __call__(self, prefix: Prefix) -> Row:
        row = self.base(prefix)
        kept = [w if i % 2 == self.parity else Fraction(0) for i, w in enumerate(row)]
        total = sum(kept, Fraction(0))
        return tuple(w / total for w in kept)

    def __repr__(self) -> str:
        return f"disjoint({self.base!r}, ids with id % 2 == {self.parity})"


def random_model_pair(vocab_size: int, seed: int = 0, *,
                      kind: str = "random") -> tuple[Model, Model]:
    """A (target, draft) pair of exact models of the given ``kind``.

    ``"random"``: independent context-dependent tables; ``"context-free"``:
    one fixed p and q; ``"equal"``: the draft is the target; ``"zeros"``: a
    draft with zeros where the target has mass; ``"disjoint"``: supports
    disjoint at every prefix (needs ``vocab_size >= 2``); ``"one-hot"``:
    deterministic target and draft rows.
    """
    _check_vocab_size(vocab_size)
    if kind == "random":
        return RandomModel(vocab_size, seed, salt="target"), \
            RandomModel(vocab_size, seed, salt="draft")
    if kind == "context-free":
        t, d = RandomModel(vocab_size, seed, salt="target"), \
            RandomModel(vocab_size, seed, salt="draft")
        return ContextFreeModel(t(())), ContextFreeModel(d(()))
    if kind == "equal":
        model = RandomModel(vocab_size, seed, salt="target")
        return model, model
    if kind == "zeros":
        return RandomModel(vocab_size, seed, salt="target"), \
            RandomModel(vocab_size, seed, zeros=True, salt="draft")
    if kind == "disjoint":
        if vocab_size < 2:
            msg = f"kind='disjoint' needs vocab_size >= 2, got {vocab_size}"
            raise InvalidArgument(msg)
        return _DisjointModel(RandomModel(vocab_size, seed, salt="target"), 0), \
            _DisjointModel(RandomModel(vocab_size, seed, salt="draft"), 1)
    if kind == "one-hot":
        return RandomModel(vocab_size, seed, one_hot=True, salt="target"), \
            RandomModel(vocab_size, seed, one_hot=True, salt="draft")
    check_choice(kind, "kind", MODEL_KINDS)
    msg = f"kind={kind!r} is not a model kind"  # pragma: no cover - MODEL_KINDS covers all
    raise InvalidArgument(msg)


class RaisingModel:
    """Delegates to ``model`` but raises on every prefix with ``forbidden(prefix)`` true.

    A step that asks for a context it should never need (an off-by-one, a
    rejected draft left in the context) then crashes, and the verdict names
    the prefix:

    >>> guard = RaisingModel(ContextFreeModel(["1/2", "1/2"]), lambda s: len(s) > 3)
    """

    def __init__(self, model: Model, forbidden: Callable[[Prefix], bool],
                 reason: str = "a prefix the step should never ask for") -> None:
        self.model = model
        self.forbidden = forbidden
        self.reason = reason

    def __call__(self, prefix: Prefix) -> Sequence[Any]:
        key = tuple(prefix)
        if self.forbidden(key):
            msg = f"asked for prefix {key}: {self.reason}"
            raise LookupError(msg)
        return self.model(key)

    def __repr__(self) -> str:
        return f"RaisingModel({self.model!r}, raises on {self.reason})"


def _exact_row(raw: Any) -> Row | None:
    """``raw`` as a tuple when it is already nonnegative Fractions summing to exactly 1.

    The common case for exact models, checked with integer arithmetic over a
    common denominator; anything else goes through ``as_distribution``, which
    converts and explains.
    """
    if type(raw) is not tuple and type(raw) is not list:
        return None
    common = 1
    for w in raw:
        if type(w) is not Fraction or w.numerator < 0:
            return None
        d = w.denominator
        if common % d:
            common = common // math.gcd(common, d) * d
    if not raw or sum(w.numerator * (common // w.denominator) for w in raw) != common:
        return None
    return tuple(raw)


class RecordingModel:
    """Validates and records every row asked of ``model``: ``asked[prefix] -> row``.

    Each row must be a distribution of the vocabulary's length (the first row
    fixes it unless ``vocab_size`` is given); a bad row raises
    :class:`~specexact.errors.InvalidDistribution` naming the prefix.  The
    caller gets a fresh ``list`` each time, so a step that edits it in place
    cannot corrupt later rows.
    """

    def __init__(self, model: Model, *, name: str = "model",
                 vocab_size: int | None = None) -> None:
        self.model = model
        self.name = name
        self.vocab_size = vocab_size
        self.asked: dict[Prefix, Row] = {}
        #: The first invalid-input error, kept because the engine reports a
        #: raise inside a step as the step's failure.
        self.error: InvalidDistribution | None = None
        #: Prefixes asked while they held undrawn tokens, as the ids each
        #: position could take.  Rows there that were never read do not
        #: influence the output, but a concrete replay of the step asks for
        #: them (see witness_rows).  A set: runs repeat the same patterns, and
        #: one entry per run was most of a long decode's memory.
        self.deferred: set[tuple[tuple[int, ...], ...]] = set()
        #: The current run's deferred prefixes (lazy tokens still narrowing),
        #: turned into patterns by settle() when the run ends.
        self._unsettled: list[tuple[Any, ...]] = []
        #: One tuple object per set of possible ids, shared by the patterns.
        self._shared_ids: dict[tuple[int, ...], tuple[int, ...]] = {}

    def __getattr__(self, name: str) -> NoReturn:
        """Attributes of other model protocols are no verdict (the tool, not the step,
        chose the wrong models), never a crash blamed on the step."""
        if name == "vocab":
            # A same-vocabulary model has no vocabulary: a step that reads one is a
            # cross-vocabulary step, judged on text.
            msg = (f"the step reads {self.name}.vocab, so it is a cross-vocabulary step, "
                   "but it was audited as a same-vocabulary step, whose models have no "
                   "vocabulary: audit it with --kind cross-vocab, or check it with "
                   "specexact.check_crossvocab_step")
            raise ForeignProtocol(msg)
        if name in CACHE_METHODS:
            msg = (f"the step calls {self.name}.{name}, the cache interface of stateful "
                   "models, but it was handed stateless ones, model(prefix): audit it "
                   "with --stateful, pass stateful=True to the search, or wrap the "
                   "models in specexact.steps.models.CachedModel")
            raise ForeignProtocol(msg)
        msg = f"{type(self).__name__!r} object has no attribute {name!r}"
        raise AttributeError(msg, name=name, obj=self)

    def row(self, prefix: Iterable[Any]) -> Row:
        """The validated row at ``prefix`` (ints or lazy tokens, which get fixed)."""
        key = _as_prefix(prefix)
        row = self.asked.get(key)
        if row is not None:
            return row
        return self._fetch(key)

    def _fetch(self, key: Prefix) -> Row:
        try:
            raw = self.model(key)
        except Exception as exc:
            msg = (f"the {self.name} model raised {type(exc).__name__} when asked for "
                   f"prefix {key}: {exc}")
            raise LookupError(msg) from exc
        row = self._validate(key, raw)
        self.asked[key] = row
        return row

    def _validate(self, key: Prefix, raw: Any) -> Row:
        row = _exact_row(raw)
        if row is None:
            try:
                row = as_distribution(raw, name=f"the {self.name}'s row at prefix {key}")
            except InvalidDistribution as exc:
                self.error = self.error or exc
                raise
        if self.vocab_size is None:
            self.vocab_size = len(row)
        elif len(row) != self.vocab_size:
            error = InvalidDistribution(
                f"the {self.name}'s row at prefix {key} has {len(row)} entries; the "
                f"vocabulary has {self.vocab_size} (every row must have the same length)")
            self.error = self.error or error
            raise error
        return row

    def __call__(self, prefix: Iterable[Any]) -> MutableSequence[Fraction]:
        key = tuple(prefix)
        ints = True
        for token in key:
            if type(token) is not int:
                ints = False
                if isinstance(token, LazyToken) and not token.is_fixed:
                    # Fixing the prefix's tokens now would branch over values that
                    # may never matter (a draft after the first rejection); the row
                    # fixes them when it is first read.
                    self._unsettled.append(key)
                    return _DeferredRow(self, key)
        if not ints:
            key = _as_prefix(key)
        row = self.asked.get(key)
        return ValidatedRow(row if row is not None else self._fetch(key))

    def settle(self) -> None:
        """Record the deferred prefixes of the run that just ended as id patterns
        (its lazy tokens no longer narrow), and let go of its tokens."""
        unsettled = self._unsettled
        if not unsettled:
            return
        shared = self._shared_ids
        for key in unsettled:
            try:
                pattern = tuple([shared.setdefault(ids, ids)
                                 for ids in map(_possible_ids, key)])
            except TypeError:  # a bad token failed when read
                continue
            if all(len(ids) == 1 for ids in pattern) \
                    and tuple([ids[0] for ids in pattern]) in self.asked:
                continue  # the row was read after all: witness_rows has it
            self.deferred.add(pattern)
        unsettled.clear()

    def witness_rows(self, limit: int = _COMPLETION_LIMIT) -> dict[Prefix, Row]:
        """The rows read, plus (up to ``limit`` more) the rows at every prefix asked
        while it held undrawn tokens, so that the step can be replayed concretely
        on a table of these rows.  Rows the model cannot give there are left out."""
        self.settle()
        rows = dict(self.asked)
        added = 0
        for pattern in sorted(self.deferred):
            for key in itertools.product(*pattern):
                if key in rows:
                    continue
                if added >= limit:
                    return rows
                try:
                    raw = self.model(key)
                    row = _exact_row(raw) or as_distribution(
                        raw, name=f"the {self.name}'s row at prefix {key}")
                except Exception:  # never read by the run: the row is optional
                    continue
                if self.vocab_size is None or len(row) == self.vocab_size:
                    rows[key] = row
                    added += 1
        return rows

    def __repr__(self) -> str:
        return f"RecordingModel({self.model!r}, {len(self.asked)} prefixes asked)"


def _possible_ids(token: Any) -> tuple[int, ...]:
    """The ids a prefix position can hold (without drawing an undrawn token)."""
    if type(token) is int:
        return (token,)
    if isinstance(token, LazyToken):
        return token.possible_ids()
    return (operator.index(token),)


class DeferredList(MutableSequence[_T]):
    """A list whose items are looked up on first use (by :meth:`_load`, once).

    Behaves as a fresh ``list`` (indexing, iteration, in-place edits,
    ``copy()``, ``+``); ``len()`` needs no lookup when :meth:`_known_length`
    knows it.  Unhashable; equality is the subclass's business.  The base of the
    deferred rows of a recorded model here and of a symbolic step model
    (:mod:`specexact.symbolic.step_source`).
    """

    __slots__ = ("_items",)
    _items: MutableSequence[_T] | None

    def _load(self) -> MutableSequence[_T]:
        raise NotImplementedError

    def _known_length(self) -> int | None:
        """The length without a lookup, if known."""
        return None

    def _resolve(self) -> MutableSequence[_T]:
        items = self._items
        if items is None:
            items = self._items = self._load()
        return items

    def __getitem__(self, index: Any) -> Any:
        return self._resolve()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._resolve()[index] = value

    def __delitem__(self, index: Any) -> None:
        del self._resolve()[index]

    def insert(self, index: int, value: _T) -> None:
        self._resolve().insert(index, value)

    def __len__(self) -> int:
        if self._items is None:
            known = self._known_length()
            if known is not None:
                return known
        return len(self._resolve())

    def __iter__(self) -> Iterator[_T]:
        return iter(self._resolve())

    def copy(self) -> list[_T]:
        return list(self._resolve())

    def __add__(self, other: Any) -> list[Any]:
        return [*self._resolve(), *other]

    def __radd__(self, other: Any) -> list[Any]:
        return [*other, *self._resolve()]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._resolve())


class _DeferredRow(DeferredList[Fraction], RowSource):
    """A row whose prefix holds unfixed lazy tokens; it is looked up when first read.

    A :class:`DeferredList` of Fractions; ``len()`` needs no lookup since every
    row has the vocabulary's length.
    """

    __slots__ = ("_model", "_prefix")

    def __init__(self, model: RecordingModel, prefix: tuple[Any, ...]) -> None:
        self._model = model
        self._prefix = prefix
        self._items = None

    def _load(self) -> ValidatedRow:
        return ValidatedRow(self._model.row(self._prefix))

    def _known_length(self) -> int | None:
        return self._model.vocab_size

    def resolve(self) -> ValidatedRow:
        """The row itself (looked up, fixing the prefix's tokens, on first use)."""
        return self._resolve()  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _DeferredRow):
            other = other._resolve()
        return bool(self._resolve() == other)


@runtime_checkable
class StatefulModel(Protocol):
    """What the engine needs of a stateful model: read and restore its cache."""

    @property
    def cache(self) -> Prefix: ...

    def reset(self, cache: Sequence[int] = ()) -> None: ...


class CachedModel:
    """A model with a cache the step feeds tokens to and must roll back.

    ``next_distribution()`` is the row at the model's *own* cache, not at the
    prefix the step believes it is at: a step that forgets to roll back after
    a rejection keeps reading rows from a context that was never emitted.
    The engine checks that after every step ``cache == prefix + emitted``.
    Calling the model with a prefix (``model(prefix)``) is the stateless view.
    """

    def __init__(self, model: Model) -> None:
        self.model: Any = model
        self._cache: list[int] = []

    @property
    def cache(self) -> Prefix:
        return tuple(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    def append(self, token: Any) -> None:
        """Feed one token (a lazy token gets fixed: the cache holds real ids)."""
        self._cache.append(operator.index(token))

    def extend(self, tokens: Iterable[Any]) -> None:
        for token in tokens:
            self.append(token)

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` tokens."""
        length = operator.index(length)
        if not 0 <= length <= len(self._cache):
            msg = f"truncate({length}) on a cache of {len(self._cache)} tokens"
            raise IndexError(msg)
        del self._cache[length:]

    def rollback(self, n: int) -> None:
        """Drop the last ``n`` tokens."""
        n = operator.index(n)
        if not 0 <= n <= len(self._cache):
            msg = f"rollback({n}) on a cache of {len(self._cache)} tokens"
            raise IndexError(msg)
        self.truncate(len(self._cache) - n)

    def reset(self, cache: Sequence[int] = ()) -> None:
        self._cache = [operator.index(t) for t in cache]

    def next_distribution(self) -> list[Fraction]:
        """The next-token law after the tokens in the cache."""
        return list(self.model(tuple(self._cache)))

    def __call__(self, prefix: Iterable[Any]) -> list[Fraction]:
        return list(self.model(_as_prefix(prefix)))

    def with_model(self, model: Model) -> CachedModel:
        """A copy (same class, empty cache) reading its rows from ``model``."""
        clone = copy.copy(self)
        clone.model = model
        clone._cache = []
        return clone

    def __repr__(self) -> str:
        return f"CachedModel({self.model!r})"
