"""Choice-tree enumeration -> exact law of whatever the code under test returns."""

from __future__ import annotations

import contextlib
import itertools
import operator
import random as _random
import sys
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

from verifier.distribution import Distribution, InvalidToken
from verifier.errors import HiddenRandomness, SamplerRaised
from verifier.exact.random_source import ExactRandom, LazyToken, LazyUniform
from verifier.exact.tree import Budget, ChoiceTree, Chooser
from verifier.numbers import as_distribution, check_same_vocabulary

__all__ = ["enumerate_law", "output_distribution"]

Sampler = Callable[[list[Fraction], list[Fraction], Any], Any]


class _Slot:
    """Placeholder for a lazy token inside a returned value."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Slot) and other.index == self.index

    def __hash__(self) -> int:
        return hash(("slot", self.index))


def _template(value: Any, slots: list[LazyToken], seen: dict[int, int]) -> Hashable:
    """Normalise a returned value, replacing unfixed lazy tokens by slots."""
    if type(value) is int:
        return value
    if isinstance(value, LazyToken):
        if value.is_fixed:
            return value.value()
        index = seen.get(id(value))
        if index is None:
            index = seen[id(value)] = len(slots)
            slots.append(value)
        return _Slot(index)
    if isinstance(value, (tuple, list)):
        return tuple(_template(v, slots, seen) for v in value)
    if isinstance(value, (bool, LazyUniform)) or type(value).__name__ == "bool_":
        return InvalidToken(value)
    try:
        return operator.index(value)
    except Exception:
        return InvalidToken(value)


def _fill(template: Hashable, values: Sequence[int]) -> Hashable:
    if isinstance(template, _Slot):
        return values[template.index]
    if isinstance(template, tuple):
        return tuple(_fill(t, values) for t in template)
    return template


class _GlobalRandomWatch:
    """Notices when the code advances a global generator it should not use."""

    def __init__(self) -> None:
        self._before = self._state()

    @staticmethod
    def _state() -> dict[str, Any]:
        parts: dict[str, Any] = {"random": _random.getstate()}
        np = sys.modules.get("numpy")
        if np is not None:
            state = np.random.get_state(legacy=False)["state"]
            parts["numpy"] = (state["pos"], state["key"].tobytes())
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "random"):
            parts["torch"] = torch.random.get_rng_state().numpy().tobytes()
        return parts

    def check(self) -> None:
        # Only generators that existed before: code that imports numpy or torch
        # lazily creates a fresh generator, which is not a draw from it.
        now = self._state()
        if any(now[name] != state for name, state in self._before.items()):
            msg = ("the code used a global random generator (Python's random module, "
                   "numpy.random or torch) instead of rng; its draws cannot be "
                   "enumerated, so no exact verdict is possible")
            raise HiddenRandomness(msg)


def _lazy_proxy_refused(exc: Exception) -> bool:
    """Whether ``exc`` is Python refusing an operation on a lazy value's type itself."""
    return isinstance(exc, (TypeError, AttributeError)) \
        and any(name in str(exc) for name in ("LazyToken", "LazyUniform"))


def enumerate_law(run: Callable[[ExactRandom], Any], *, budget: Budget | None = None,
                  uniform_bits: int | None = None,
                  context: dict[str, Any] | None = None) -> Distribution:
    """Exact law of ``run(rng)`` over every execution of the choice tree.

    ``run`` receives an :class:`ExactRandom`.  Returned values are
    normalised: ints (and numpy integers) stay tokens, tuples and lists become
    tuples, lazy tokens are folded in without branching, anything else becomes
    an :class:`InvalidToken`.  ``context`` (for example ``{"p": p, "q": q}``)
    is attached to the error if the code raises.
    """
    try:
        return _enumerate(run, budget, uniform_bits, context, ExactRandom)
    except SamplerRaised as lazy_crash:
        # Lazy tokens are proxies, not ints: ``isinstance(x, int)``, ``x.to_bytes``
        # or a C extension may refuse them where a real token would do.  Replay
        # with tokens fixed to plain ints as soon as they are drawn; only a crash
        # that survives that is the code's.
        first_crash = lazy_crash
    try:
        return _enumerate(run, budget, uniform_bits, context, _EagerTokenRandom)
    except SamplerRaised:
        if isinstance(first_crash, _ProxyRefused):
            raise  # the lazy crash was the proxy's; this one is the code's
    # A genuine crash: report the lazy run's, with the code's exception as cause.
    raise first_crash from first_crash.__cause__


class _ProxyRefused(SamplerRaised):
    """The code raised because a lazy value is not a plain number (never escapes)."""


class _EagerTokenRandom(ExactRandom):
    """ExactRandom whose ``categorical`` returns a plain int, branching at the draw."""

    __slots__ = ()

    def categorical(self, weights: Sequence[Any]) -> Any:
        return super().categorical(weights).value()


def _enumerate(run: Callable[[ExactRandom], Any], budget: Budget | None,
               uniform_bits: int | None, context: dict[str, Any] | None,
               source: type[ExactRandom]) -> Distribution:
    tree: ChoiceTree[Any] = ChoiceTree(budget)
    watch = _GlobalRandomWatch()

    def execute(chooser: Chooser) -> Any:
        rng = source(chooser, uniform_bits)
        try:
            return run(rng)
        except Exception as exc:
            msg = f"the code under test raised {type(exc).__name__}: {exc}"
            if _lazy_proxy_refused(exc):
                if source is ExactRandom:
                    raise _ProxyRefused(msg, context=context,
                                        path=chooser.describe()) from exc
                # Plain tokens did not help: a lazy uniform was refused.  The
                # proxy, not the code, lacked the operation: no verdict.
                raise rng.unsupported(
                    f"the code used a lazy random value where Python wanted a plain "
                    f"number ({type(exc).__name__}: {exc})") from exc
            raise SamplerRaised(msg, context=context, path=chooser.describe()) from exc
        finally:
            rng.active = False

    plain: dict[Hashable, Fraction] = {}
    pending: dict[tuple[Hashable, tuple[Any, ...]], list[Any]] = {}
    first: tuple[Any, Hashable] | None = None
    leaves = tree.explore(execute)
    with contextlib.closing(leaves):  # cancels the wall-clock alarm on any exit
        for weight, value, _chooser in leaves:
            watch.check()
            slots: list[LazyToken] = []
            template = _template(value, slots, {})
            key = (template, tuple([s.law_key() for s in slots]))
            if first is None:
                first = (weight, key)
            if not slots:
                plain[template] = plain.get(template, 0) + weight
                continue
            group = pending.get(key)
            if group is None:
                pending[key] = [weight, slots]
            else:
                group[0] += weight
    _confirm_first_leaf(execute, budget, first)
    for (template, _), (weight, slots) in pending.items():
        laws = [s.law() for s in slots]
        if len(laws) == 1 and isinstance(template, _Slot):
            for token, prob in laws[0]:
                plain[token] = plain.get(token, 0) + weight * prob
            continue
        for combo in itertools.product(*laws):
            prob = weight
            for _, p in combo:
                prob *= p
            outcome = _fill(template, [t for t, _ in combo])
            plain[outcome] = plain.get(outcome, 0) + prob
    return Distribution(plain)


def _confirm_first_leaf(execute: Callable[[Chooser], Any], budget: Budget | None,
                        first: tuple[Any, Hashable] | None) -> None:
    """Run the first path once more: code with private randomness rarely repeats it."""
    tree: ChoiceTree[Any] = ChoiceTree(budget)
    for weight, value, _chooser in tree.explore(execute):
        slots: list[LazyToken] = []
        template = _template(value, slots, {})
        again = (weight, (template, tuple([s.law_key() for s in slots])))
        if again != first:
            msg = ("running the same path twice gave different results: the code draws "
                   "randomness that does not come from rng (a private generator, time, "
                   "...) or depends on state that changes between calls")
            raise HiddenRandomness(msg)
        return


def output_distribution(sampler: Sampler, p: Sequence[Any], q: Sequence[Any], *,
                        uniform_bits: int | None = None,
                        budget: Budget | None = None) -> Distribution:
    """The exact law of ``sampler(p, q, rng)``.

    ``p`` and ``q`` are validated (same nonzero length, nonnegative, summing
    to exactly 1) and handed to each execution as fresh lists of Fractions.

    >>> from fractions import Fraction as F
    >>> def naive(p, q, rng):
    ...     x = rng.categorical(q)
    ...     if rng.random() * q[x] < p[x]:
    ...         return x
    ...     return rng.categorical(p)
    >>> output_distribution(naive, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
    Distribution({0: 13/50, 1: 9/20, 2: 29/100})
    """
    pf = as_distribution(p, name="p")
    qf = as_distribution(q, name="q")
    check_same_vocabulary(pf, qf)
    return enumerate_law(lambda rng: sampler(list(pf), list(qf), rng), budget=budget,
                         uniform_bits=uniform_bits, context={"p": pf, "q": qf})
