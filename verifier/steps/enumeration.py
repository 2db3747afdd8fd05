"""The exact law of one call of a decoding step: choice-tree enumeration for tuples of tokens.

This is :func:`verifier.exact.engine.enumerate_law` specialised to what a step
returns, because a decode runs it at every reachable prefix and its leaves
are many:

* the output is validated at each leaf (a non-empty tuple of ids of the
  vocabulary), so a bad output is reported with the prefix and the choices
  that led to it;
* it is truncated to the tokens the decode still needs before lazy tokens
  are folded, so a lazy token past the horizon is never expanded;
* global generators are compared once per enumeration instead of once per
  leaf (an advanced global state stays advanced), and the first path is run
  twice, as the engine does, to catch private randomness.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any

from verifier.distribution import InvalidToken
from verifier.errors import HiddenRandomness, InvalidOutput, SamplerRaised
from verifier.exact.engine import _GlobalRandomWatch, _Slot
from verifier.exact.random_source import LazyToken, LazyUniform
from verifier.exact.step_random import StepRandom
from verifier.exact.tree import Budget, ChoiceTree, Chooser

__all__ = ["enumerate_step"]

Prefix = tuple[int, ...]
_ZERO = Fraction(0)
#: The stateful-model interface (verifier.steps.models.CachedModel).
_CACHE_METHODS = frozenset({"cache", "next_distribution", "append", "extend", "truncate",
                            "rollback", "reset"})


class _EagerStepRandom(StepRandom):
    """StepRandom whose ``categorical`` returns a plain int, branching at the draw."""

    __slots__ = ()

    def categorical(self, weights: Any) -> Any:
        return super().categorical(weights).value()


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
        if type(token) is int:
            value = token
        elif isinstance(token, LazyToken):
            if not token.is_fixed:
                ids = token.candidates if token.candidates is not None else \
                    [i for i, w in enumerate(token.weights) if w]
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


def _group_key(items: list[Any], extra: tuple[Any, ...]) -> tuple[Hashable, list[LazyToken]]:
    """Replace unfixed lazy tokens by slots: (template, law keys) and the tokens."""
    slots: list[LazyToken] = []
    seen: dict[int, int] = {}
    template: list[Any] = []
    for item in items:
        if isinstance(item, LazyToken):
            index = seen.get(id(item))
            if index is None:
                index = seen[id(item)] = len(slots)
                slots.append(item)
            template.append(_Slot(index))
        else:
            template.append(item)
    key = (tuple(template), extra, tuple([s.law_key() for s in slots]))
    return key, slots


def enumerate_step(run: Callable[[StepRandom], Any], *, prefix: Prefix, vocab_size: int,
                   keep: int | None, stateful: bool, budget: Budget,
                   uniform_bits: int | None, context: dict[str, Any], eager: bool = False
                   ) -> dict[Hashable, Fraction]:
    """The law of one step call: ``run(rng)`` returns the step's output (and, when
    ``stateful``, ``(output, target cache, draft cache)``).

    Outcomes are tuples of ints cut to ``keep`` tokens (all of them when
    ``keep`` is None); when stateful, ``(tokens, target cache, draft cache)``.
    ``eager`` hands out drawn tokens as plain ints (branching at each draw),
    for code that refuses lazy tokens.
    """
    random_class = _EagerStepRandom if eager else StepRandom
    tree: ChoiceTree[Any] = ChoiceTree(budget)
    watch = _GlobalRandomWatch()

    def execute(chooser: Chooser) -> Any:
        rng = random_class(chooser, uniform_bits)
        try:
            return run(rng)
        except Exception as exc:
            msg = f"the code under test raised {type(exc).__name__}: {exc}"
            if (not stateful and isinstance(exc, AttributeError)
                    and getattr(exc, "name", None) in _CACHE_METHODS):
                msg += (" (the step was handed stateless models, model(prefix); a step using "
                        "the cache interface needs stateful ones: wrap them in "
                        "verifier.steps.models.CachedModel, pass stateful=True to the search, or "
                        "specexact audit --stateful)")
            raise SamplerRaised(msg, context=context, path=chooser.describe()) from exc
        finally:
            rng.active = False

    def key_of(weight: Fraction, value: Any, chooser: Chooser
               ) -> tuple[Hashable, list[LazyToken]]:
        out, extra = (value[0], tuple(value[1:])) if stateful else (value, ())
        items = _tokens(out, prefix, vocab_size, weight, chooser)
        return _group_key(items if keep is None else items[:keep], extra)

    plain: dict[Hashable, Fraction] = {}
    pending: dict[Hashable, list[Any]] = {}
    first: tuple[Fraction, Hashable] | None = None
    with contextlib.closing(tree.explore(execute)) as leaves:
        for weight, value, chooser in leaves:
            key, slots = key_of(weight, value, chooser)
            if first is None:
                first = (weight, key)
            if not slots:
                outcome = (key[0], *key[1]) if stateful else key[0]  # type: ignore[index]
                plain[outcome] = plain.get(outcome, _ZERO) + weight
                continue
            group = pending.get(key)
            if group is None:
                pending[key] = [weight, slots]
            else:
                group[0] += weight
    watch.check()
    _confirm_first_path(execute, key_of, budget, first)
    for key, (weight, slots) in pending.items():
        template, extra = key[0], key[1]  # type: ignore[index]
        for combo in itertools.product(*[s.law() for s in slots]):
            prob = weight
            for _, p in combo:
                prob *= p
            tokens = tuple(combo[t.index][0] if isinstance(t, _Slot) else t for t in template)
            outcome = (tokens, *extra) if stateful else tokens
            plain[outcome] = plain.get(outcome, _ZERO) + prob
    return plain


def _confirm_first_path(execute: Callable[[Chooser], Any],
                        key_of: Callable[[Fraction, Any, Chooser], tuple[Hashable, Any]],
                        budget: Budget, first: tuple[Fraction, Hashable] | None) -> None:
    """Run the first path once more: code with private randomness rarely repeats it."""
    tree: ChoiceTree[Any] = ChoiceTree(budget)
    with contextlib.closing(tree.explore(execute)) as leaves:
        for weight, value, chooser in leaves:
            if (weight, key_of(weight, value, chooser)[0]) != first:
                msg = ("running the same path twice gave different results: the code draws "
                       "randomness that does not come from rng (a private generator, time, "
                       "...) or depends on state that changes between calls")
                raise HiddenRandomness(msg)
            return
