"""Processors with state and stopping, exactly: the law plain sampling really draws from.

A decode's target after an emitted prefix is not the model's row but the
row after every processor, and a processor's state is a function of the
emitted tokens (the penalties count them, a grammar walks them, min_new_tokens
counts them).  Stopping ends the sequence: an EOS token, a stop sequence or
``max_new_tokens`` makes the emitted sequence final (absorbing).

A :class:`ProcessorPipeline` holds both.  ``pipeline(emitted, row)`` is the
processed next-token law after ``emitted``; ``pipeline.finished(sequence)``
says whether a sequence has stopped; ``pipeline.cut(prefix, tokens)`` cuts a
step's output at the first stop.  Every processor works on probabilities
with rational factors, so the processed law stays exact:

* :class:`RepetitionPenalty` divides the probability of every token already
  emitted by ``penalty``; :class:`PresencePenalty` multiplies it by
  ``factor``; :class:`FrequencyPenalty` by ``factor ** count``;
  :class:`LogitBias` by a fixed factor per token (0 bans it).  On logits
  these are additive shifts ``log(factor)``; a rational factor is the exact
  stand-in.
* :class:`Warp` applies a stateless transform of :mod:`specexact.pipelines`
  (min-p, top-k, top-p, temperature 1/m); the pipeline wraps those itself.
* :class:`BadWords`, :class:`NoRepeatNGram`, :class:`TokenGrammar` (a small
  DFA over tokens, applied after a reasoning-boundary token) and
  :class:`MinNewTokens` remove tokens.

Stages run left to right on unnormalised weights and the result is
normalised once.  When the processors leave no probability at all the law
is undefined (engines produce NaN there): :class:`ProcessorsExhausted`.

A step given processors is called ``step(target, draft, prefix, rng,
processors=pipeline)`` and must apply them itself at every verified position
and at the bonus position, and stop where the sequence stops; the reference
is the processed target's joint law (see :func:`specexact.check_step`).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol, final, runtime_checkable

from specexact.errors import InvalidArgument, InvalidDistribution
from specexact.numbers import ZERO, to_fraction
from specexact.pipelines import MinP, Temperature, TopK, TopP
from specexact.validation import check_integer, fail

__all__ = [
    "NO_PROCESSORS",
    "BadWords",
    "FrequencyPenalty",
    "LogitBias",
    "MinNewTokens",
    "NoRepeatNGram",
    "PresencePenalty",
    "Processor",
    "ProcessorPipeline",
    "ProcessorsExhausted",
    "RepetitionPenalty",
    "Stopping",
    "TokenGrammar",
    "Warp",
]

Prefix = tuple[int, ...]
Weights = tuple[Fraction, ...]


class ProcessorsExhausted(InvalidDistribution):
    """The processors removed every token with positive probability: no law there.

    ``emitted`` is the prefix where it happened.
    """

    def __init__(self, message: str, emitted: Prefix = ()) -> None:
        super().__init__(message)
        self.emitted = emitted


@runtime_checkable
class Processor(Protocol):
    """``processor(emitted, weights) -> weights``: a pure function of the emitted tokens."""

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights: ...

    def to_json(self) -> dict[str, Any]: ...


def _ids(tokens: Iterable[Any]) -> Prefix:
    # operator.index fixes a lazy token: the processed row depends on its value.
    return tuple(operator.index(t) for t in tokens)


def _token(value: Any, name: str) -> int:
    try:
        return check_integer(value, name, min_value=0)
    except InvalidArgument:
        fail(name, value, "a token id (an integer >= 0)")


def _factor(value: Any, name: str, *, allow_zero: bool = False) -> Fraction:
    number = to_fraction(value, name=name)
    if number < 0 or (number == 0 and not allow_zero):
        fail(name, value, "a rational number > 0" + (" (or 0 to ban)" if allow_zero else ""))
    return number


def _sequences(value: Any, name: str, *, min_length: int = 1) -> tuple[Prefix, ...]:
    try:
        seqs = tuple(tuple(_token(t, f"{name} token") for t in s) for s in value)
    except TypeError:
        fail(name, value, "a sequence of token sequences, e.g. ((1,), (0, 2))")
    if any(len(s) < min_length for s in seqs):
        fail(name, value, f"token sequences of length >= {min_length}")
    return seqs


def _banned(weights: Weights, banned: Iterable[int]) -> Weights:
    out = list(weights)
    for t in banned:
        if t < len(out):
            out[t] = ZERO
    return tuple(out)


@final
@dataclass(frozen=True)
class RepetitionPenalty:
    """Every token already emitted has its probability divided by ``penalty``."""

    penalty: Fraction

    def __post_init__(self) -> None:
        object.__setattr__(self, "penalty", _factor(self.penalty, "RepetitionPenalty penalty"))

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        seen = set(emitted)
        return tuple(w / self.penalty if i in seen else w for i, w in enumerate(weights))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "repetition_penalty", "penalty": str(self.penalty)}

    def __str__(self) -> str:
        return f"repetition penalty {self.penalty}"


@final
@dataclass(frozen=True)
class PresencePenalty:
    """Every token already emitted has its probability multiplied by ``factor``."""

    factor: Fraction

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _factor(self.factor, "PresencePenalty factor"))

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        seen = set(emitted)
        return tuple(w * self.factor if i in seen else w for i, w in enumerate(weights))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "presence_penalty", "factor": str(self.factor)}

    def __str__(self) -> str:
        return f"presence penalty x{self.factor}"


@final
@dataclass(frozen=True)
class FrequencyPenalty:
    """A token emitted c times has its probability multiplied by ``factor ** c``."""

    factor: Fraction

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _factor(self.factor, "FrequencyPenalty factor"))

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        counts: dict[int, int] = {}
        for t in emitted:
            counts[t] = counts.get(t, 0) + 1
        return tuple(w * self.factor ** counts.get(i, 0) for i, w in enumerate(weights))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "frequency_penalty", "factor": str(self.factor)}

    def __str__(self) -> str:
        return f"frequency penalty x{self.factor} per occurrence"


@final
@dataclass(frozen=True)
class LogitBias:
    """Fixed factors per token id (``exp(bias)`` on probabilities; 0 bans the token)."""

    factors: Mapping[int, Fraction]

    def __post_init__(self) -> None:
        try:
            items = dict(self.factors).items()
        except (TypeError, ValueError):
            fail("LogitBias factors", self.factors, "a mapping token id -> factor")
        clean = {_token(k, "LogitBias token"): _factor(v, "LogitBias factor", allow_zero=True)
                 for k, v in items}
        object.__setattr__(self, "factors", dict(sorted(clean.items())))

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        return tuple(w * self.factors.get(i, 1) for i, w in enumerate(weights))

    def __hash__(self) -> int:
        return hash(tuple(self.factors.items()))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "logit_bias", "factors": {str(k): str(v) for k, v in self.factors.items()}}

    def __str__(self) -> str:
        return "logit bias " + ", ".join(f"{k}: x{v}" for k, v in self.factors.items())


@final
@dataclass(frozen=True)
class Warp:
    """A stateless transform of :mod:`specexact.pipelines` (min-p, top-k, top-p, temperature)."""

    transform: Any

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        total = sum(weights, ZERO)
        if not total:
            return weights
        result: Weights = self.transform(tuple(w / total for w in weights))
        return result

    def to_json(self) -> dict[str, Any]:
        t = self.transform
        if isinstance(t, MinP):
            return {"kind": "min_p", "min_p": str(t.min_p)}
        if isinstance(t, TopK):
            return {"kind": "top_k", "k": t.k}
        if isinstance(t, TopP):
            return {"kind": "top_p", "top_p": str(t.top_p), "rule": t.rule}
        if isinstance(t, Temperature):
            return {"kind": "temperature", "m": t.m}
        return {"kind": "transform", "description": str(t)}

    def __str__(self) -> str:
        return str(self.transform)


@final
@dataclass(frozen=True)
class BadWords:
    """Each banned sequence's last token is removed after the rest of it was emitted."""

    sequences: tuple[Prefix, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "sequences", _sequences(self.sequences, "BadWords sequences"))

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        banned = [s[-1] for s in self.sequences
                  if len(s) - 1 <= len(emitted) and emitted[len(emitted) - len(s) + 1:] == s[:-1]]
        return _banned(weights, banned)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "bad_words", "sequences": [list(s) for s in self.sequences]}

    def __str__(self) -> str:
        return "bad words " + ", ".join(",".join(map(str, s)) for s in self.sequences)


@final
@dataclass(frozen=True)
class NoRepeatNGram:
    """A token that would repeat an n-gram already emitted is removed."""

    n: int

    def __post_init__(self) -> None:
        check_integer(self.n, "NoRepeatNGram n", min_value=1)

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        n = self.n
        if len(emitted) < n - 1:
            return weights
        head = emitted[len(emitted) - n + 1:] if n > 1 else ()
        banned = [emitted[i + n - 1] for i in range(len(emitted) - n + 1)
                  if emitted[i:i + n - 1] == head]
        return _banned(weights, banned)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "no_repeat_ngram", "n": self.n}

    def __str__(self) -> str:
        return f"no repeated {self.n}-gram"


@final
@dataclass(frozen=True)
class TokenGrammar:
    """A DFA over tokens: only tokens with a transition from the current state are allowed.

    ``transitions`` maps ``(state, token)`` to the next state, from
    ``start``.  With a ``boundary`` token (the end of a reasoning section),
    the grammar applies only to the tokens after its first occurrence;
    before it every token is allowed.  A state reached by a token the grammar
    does not allow allows nothing.
    """

    transitions: Mapping[tuple[int, int], int]
    start: int = 0
    boundary: int | None = None

    def __post_init__(self) -> None:
        try:
            items = dict(self.transitions).items()
            clean = {(check_integer(s, "TokenGrammar state"), _token(t, "TokenGrammar token")):
                     check_integer(n, "TokenGrammar state") for (s, t), n in items}
        except (TypeError, ValueError):
            fail("TokenGrammar transitions", self.transitions,
                 "a mapping (state, token) -> next state of integers")
        object.__setattr__(self, "transitions", dict(sorted(clean.items())))
        check_integer(self.start, "TokenGrammar start")
        if self.boundary is not None:
            _token(self.boundary, "TokenGrammar boundary")

    def constrained(self, emitted: Prefix) -> Prefix | None:
        """The tokens the grammar has read (after the boundary), None before the boundary."""
        if self.boundary is None:
            return emitted
        if self.boundary not in emitted:
            return None
        return emitted[emitted.index(self.boundary) + 1:]

    def state(self, tokens: Prefix) -> int | None:
        """The DFA state after ``tokens``; None once a token had no transition."""
        state: int | None = self.start
        for t in tokens:
            state = self.transitions.get((state, t)) if state is not None else None
        return state

    def allowed(self, state: int | None) -> frozenset[int]:
        return frozenset(t for (s, t) in self.transitions if s == state)

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        tokens = self.constrained(emitted)
        if tokens is None:
            return weights
        allowed = self.allowed(self.state(tokens))
        return tuple(w if i in allowed else ZERO for i, w in enumerate(weights))

    def __hash__(self) -> int:
        return hash((tuple(self.transitions.items()), self.start, self.boundary))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "token_grammar", "start": self.start, "boundary": self.boundary,
                "transitions": [[s, t, n] for (s, t), n in self.transitions.items()]}

    def __str__(self) -> str:
        arcs = ", ".join(f"{s}-{t}->{n}" for (s, t), n in self.transitions.items())
        after = "" if self.boundary is None else f" after token {self.boundary}"
        return f"grammar{after} (start {self.start}: {arcs})"


@final
@dataclass(frozen=True)
class MinNewTokens:
    """The ``eos`` tokens are removed while fewer than ``count`` tokens were emitted."""

    count: int
    eos: tuple[int, ...]

    def __post_init__(self) -> None:
        check_integer(self.count, "MinNewTokens count", min_value=0)
        object.__setattr__(self, "eos", tuple(_token(t, "MinNewTokens eos") for t in self.eos))

    def __call__(self, emitted: Prefix, weights: Weights) -> Weights:
        return _banned(weights, self.eos) if len(emitted) < self.count else weights

    def to_json(self) -> dict[str, Any]:
        return {"kind": "min_new_tokens", "count": self.count, "eos": list(self.eos)}

    def __str__(self) -> str:
        return f"min_new_tokens {self.count} (bans {', '.join(map(str, self.eos))})"


@final
@dataclass(frozen=True)
class Stopping:
    """When an emitted sequence ends: an ``eos`` token, a stop sequence, ``max_new_tokens``.

    The tokens that stop it are part of the sequence; nothing follows them.
    """

    eos: tuple[int, ...] = ()
    stop_sequences: tuple[Prefix, ...] = ()
    max_new_tokens: int | None = None

    def __post_init__(self) -> None:
        try:
            eos = tuple(_token(t, "Stopping eos") for t in self.eos)
        except TypeError:
            fail("Stopping eos", self.eos, "a tuple of token ids")
        object.__setattr__(self, "eos", eos)
        object.__setattr__(self, "stop_sequences",
                           _sequences(self.stop_sequences, "Stopping stop_sequences"))
        if self.max_new_tokens is not None:
            check_integer(self.max_new_tokens, "Stopping max_new_tokens", min_value=1)

    @property
    def active(self) -> bool:
        return bool(self.eos or self.stop_sequences or self.max_new_tokens is not None)

    def finished(self, sequence: Sequence[Any]) -> bool:
        """Whether ``sequence`` has stopped (its last token ended it).

        Only the tokens a rule looks at are read (a lazy draft elsewhere stays undrawn).
        """
        n = len(sequence)
        if not n or not self.active:
            return False
        if self.max_new_tokens is not None and n >= self.max_new_tokens:
            return True
        if self.eos and operator.index(sequence[-1]) in self.eos:
            return True
        for stop in self.stop_sequences:
            if len(stop) <= n and _ids(sequence[n - len(stop):]) == stop:
                return True
        return False

    def to_json(self) -> dict[str, Any]:
        return {"eos": list(self.eos), "stop_sequences": [list(s) for s in self.stop_sequences],
                "max_new_tokens": self.max_new_tokens}

    def __str__(self) -> str:
        parts = []
        if self.eos:
            parts.append("EOS " + ", ".join(map(str, self.eos)))
        if self.stop_sequences:
            parts.append("stop sequences " + "; ".join(",".join(map(str, s))
                                                        for s in self.stop_sequences))
        if self.max_new_tokens is not None:
            parts.append(f"max_new_tokens {self.max_new_tokens}")
        return ", ".join(parts) or "no stopping"


_STATELESS = (MinP, TopK, TopP, Temperature)
#: Processors whose result does not depend on the emitted tokens.
_STATELESS_STAGES = (Warp, LogitBias)


def _as_processor(item: Any) -> Any:
    if isinstance(item, _STATELESS):
        return Warp(item)
    if not callable(item):
        fail("processor", item, "a processor (emitted, weights) -> weights, or a "
             "MinP/TopK/TopP/Temperature transform")
    return item


@final
@dataclass(frozen=True)
class ProcessorPipeline:
    """Processors applied left to right, and when the sequence stops.

    >>> from fractions import Fraction as F
    >>> pipe = ProcessorPipeline((RepetitionPenalty(2),), Stopping(eos=(1,)))
    >>> pipe((0,), (F(1, 2), F(1, 2)))
    (Fraction(1, 3), Fraction(2, 3))
    >>> pipe.finished((0, 1)), pipe.cut((), (0, 1, 0))
    (True, (0, 1))
    """

    processors: tuple[Any, ...] = ()
    stopping: Stopping = field(default_factory=Stopping)

    def __post_init__(self) -> None:
        try:
            items = tuple(self.processors)
        except TypeError:
            fail("processors", self.processors, "a tuple of processors")
        object.__setattr__(self, "processors", tuple(_as_processor(p) for p in items))
        if not isinstance(self.stopping, Stopping):
            fail("stopping", self.stopping, "a specexact.Stopping")

    @property
    def identity(self) -> bool:
        """No processor and no stopping: the plain target."""
        return not self.processors and not self.stopping.active

    def weights(self, emitted: Sequence[Any], row: Sequence[Any]) -> Weights:
        """The processed, unnormalised weights after ``emitted``."""
        # Stateless stages never look at the tokens: leaving them unread keeps lazy
        # drafts undrawn (the exact enumeration then does not branch on them).
        ids: Prefix | None = None
        weights: Weights = tuple(Fraction(w) for w in row)
        for processor in self.processors:
            if isinstance(processor, _STATELESS_STAGES):
                weights = tuple(processor((), weights))
                continue
            if ids is None:
                ids = _ids(emitted)
            weights = tuple(processor(ids, weights))
        return weights

    def __call__(self, emitted: Sequence[Any], row: Sequence[Any]) -> Weights:
        """The processed next-token law after ``emitted``; ProcessorsExhausted when empty."""
        weights = self.weights(emitted, row)
        total = sum(weights, ZERO)
        if not total:
            msg = (f"the processors ({self}) leave no token with positive probability after "
                   f"{_ids(emitted)}: the processed law is undefined there")
            raise ProcessorsExhausted(msg, _ids(emitted))  # the message read them anyway
        return tuple(w / total for w in weights)

    def reaches(self, model: Any, sequence: Sequence[int]) -> bool:
        """Whether the processed ``model`` emits ``sequence`` with positive probability
        (without stopping before its end)."""
        seq = _ids(sequence)
        for i, token in enumerate(seq):
            try:
                row = self(seq[:i], model(seq[:i]))
            except ProcessorsExhausted:
                return False
            if token >= len(row) or not row[token] or (i + 1 < len(seq)
                                                         and self.finished(seq[:i + 1])):
                return False
        return True

    def finished(self, sequence: Sequence[Any]) -> bool:
        """Whether the emitted ``sequence`` has stopped."""
        return self.stopping.finished(sequence)

    def stop_length(self, sequence: Sequence[Any], start: int = 0) -> int | None:
        """The length of the first stopped prefix of ``sequence`` longer than ``start``."""
        if not self.stopping.active:
            return None
        seq = _ids(sequence)
        for length in range(start + 1, len(seq) + 1):
            if self.stopping.finished(seq[:length]):
                return length
        return None

    def cut(self, prefix: Sequence[Any], tokens: Sequence[Any]) -> tuple[Any, ...]:
        """``tokens`` (a step's output after ``prefix``) cut just after the first stop."""
        out = tuple(tokens)
        if not self.stopping.active:
            return out
        length = self.stop_length((*prefix, *out), len(prefix))
        return out if length is None else out[:length - len(prefix)]

    def to_json(self) -> dict[str, Any]:
        return {"processors": [p.to_json() if hasattr(p, "to_json") else {"kind": repr(p)}
                               for p in self.processors],
                "stopping": self.stopping.to_json()}

    def __str__(self) -> str:
        parts = [str(p) for p in self.processors]
        if self.stopping.active:
            parts.append(f"stop at {self.stopping}")
        return "; ".join(parts) or "no processors"


#: The identity pipeline (no processor, no stopping).
NO_PROCESSORS = ProcessorPipeline()
