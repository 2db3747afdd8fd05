"""The exact law of one call of a decoding step: the one enumerator, adapted to tuples of tokens.

This is :func:`specexact.exact.enumerator.enumerate_outcomes` with what a
step returns as its outcome:

* the output is validated at each leaf (a non-empty tuple of ids of the
  vocabulary), so a bad output is reported with the prefix and the choices
  that led to it;
* it is truncated to the tokens the decode still needs before lazy tokens
  are folded, so a lazy token past the horizon is never expanded;
* a stateful run's outcome carries the caches the step left behind.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any

from specexact.distribution import InvalidToken
from specexact.errors import InvalidOutput
from specexact.exact.enumerator import enumerate_outcomes
from specexact.exact.random_source import ExactRandom, LazyToken, LazyUniform
from specexact.exact.tree import Budget, Chooser
from specexact.steps.models import CACHE_METHODS

__all__ = ["enumerate_step"]

Prefix = tuple[int, ...]
#: The random source handed to steps: the one exact source (its fast paths
#: serve the sampler path too); a module attribute so a test can swap it.
StepRandom = ExactRandom


def _invalid(prefix: Prefix, out: Any, why: str, weight: Fraction,
             chooser: Chooser) -> InvalidOutput:
    msg = f"the step at prefix {prefix} returned {out!r}{why}"
    context = {"prefix": prefix, "output": out, "probability at least": weight}
    return InvalidOutput(msg, context=context, path=chooser.describe())


def _tokens(out: Any, prefix: Prefix, vocab_size: int, weight: Fraction,
            chooser: Chooser) -> list[Any]:
    """The returned tokens as ints or unfixed lazy tokens; InvalidOutput if not a token tuple."""
    shown = out  # as the step returned it, for messages
    if isinstance(out, list) or (type(out).__name__ == "ndarray"
                                 and getattr(out, "ndim", None) == 1):
        out = tuple(out)  # a numpy vector of ids is a sequence of tokens too
    if not isinstance(out, tuple):
        raise _invalid(prefix, shown, ", not a tuple of tokens; a step returns the tokens it "
                       "appends, e.g. (3,) or (1, 4, 0)", weight, chooser)
    if not out:
        raise _invalid(prefix, shown, ", an empty tuple; a step must emit at least one "
                       "token (or decoding never ends)", weight, chooser)
    items: list[Any] = []
    for token in out:
        if isinstance(token, InvalidToken):  # an adapter's description of what came back
            msg = f"the step at prefix {prefix} returned {token.description}, not token ids"
            raise InvalidOutput(msg, context={"prefix": prefix, "probability at least": weight},
                                path=chooser.describe())
        if type(token) is int:
            value = token
        elif isinstance(token, LazyToken):
            if not token.is_fixed:
                ids = token.possible_ids()
                if max(ids) >= vocab_size:
                    raise _invalid(prefix, shown, f": it can emit id {max(ids)}, outside the "
                                   f"vocabulary 0..{vocab_size - 1}", weight, chooser)
                items.append(token)
                continue
            value = token.value()
        elif isinstance(token, (bool, LazyUniform)) or type(token).__name__ == "bool_":
            raise _invalid(prefix, shown, f", which holds {InvalidToken(token).description}, "
                           "not a token id", weight, chooser)
        else:
            try:
                value = operator.index(token)
            except Exception:
                raise _invalid(prefix, shown, f", which holds {InvalidToken(token).description}"
                               ", not a token id", weight, chooser) from None
        if not 0 <= value < vocab_size:
            raise _invalid(prefix, shown, f": id {value} is outside the vocabulary "
                           f"0..{vocab_size - 1}", weight, chooser)
        items.append(value)
    return items


def _stateless_hint(exc: Exception) -> str:
    if isinstance(exc, AttributeError) and getattr(exc, "name", None) == "vocab":
        return (" (the step reads model.vocab, so it looks like a cross-vocabulary step: "
                "audit it with --kind cross-vocab, or check it with "
                "specexact.check_crossvocab_step)")
    if isinstance(exc, AttributeError) and getattr(exc, "name", None) in CACHE_METHODS:
        return (" (the step was handed stateless models, model(prefix); a step using "
                "the cache interface needs stateful ones: wrap them in "
                "specexact.steps.models.CachedModel, pass stateful=True to the search, or "
                "specexact audit --stateful)")
    return ""


def enumerate_step(run: Callable[[ExactRandom], Any], *, prefix: Prefix, vocab_size: int,
                   keep: int | None, stateful: bool, budget: Budget,
                   uniform_bits: int | None, context: dict[str, Any],
                   input_error: Callable[[], BaseException | None] | None = None
                   ) -> dict[Hashable, Fraction]:
    """The law of one step call: ``run(rng)`` returns the step's output (and, when
    ``stateful``, ``(output, target cache, draft cache)``).

    Outcomes are tuples of ints cut to ``keep`` tokens (all of them when
    ``keep`` is None); when stateful, ``(tokens, target cache, draft cache)``.
    ``input_error()`` names a malformed model row, reported instead of the
    step's crash it caused.
    """

    def normalise(value: Any, weight: Fraction, chooser: Chooser) -> Any:
        out = value[0] if stateful else value
        items = _tokens(out, prefix, vocab_size, weight, chooser)
        tokens = tuple(items if keep is None else items[:keep])
        return (tokens, value[1], value[2]) if stateful else tokens

    return enumerate_outcomes(run, normalise=normalise, budget=budget,
                              uniform_bits=uniform_bits, context=context, source=StepRandom,
                              explain=None if stateful else _stateless_hint,
                              input_error=input_error)
