"""The one enumerator: every execution of a choice tree -> the exact law of what the code returns.

Both the sampler path (:func:`specexact.exact.engine.enumerate_law`) and the
step path (:func:`specexact.steps.enumeration.enumerate_step`) are adapters of
:func:`enumerate_outcomes`; what differs between them is a parameter:

* ``normalise(value, weight, chooser)`` turns what one execution returned
  into an outcome in which the only random parts are unfixed lazy tokens
  (inside tuples); it may raise to reject the output (the step path's
  validation, its truncation to the tokens still needed);
* ``explain(exc)`` adds a hint to the message of a crash;
* ``input_error()`` names an error of the caller's input (a malformed model
  row) that a crash of the code merely reported.

Written once here, for both: folding returned lazy tokens without branching
(plain outcomes and pending groups of equal laws), the check of the global
generators (once per enumeration, and on the replayed first path), the
replay of the first path (private randomness rarely repeats itself), and the
retry with drawn tokens handed out as plain ints when a crash may be the
proxy's fault.
"""

from __future__ import annotations

import contextlib
import itertools
import random as _random
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NoReturn

from specexact.errors import (
    ForeignProtocol,
    HiddenRandomness,
    SamplerFailure,
    SamplerRaised,
    Undecided,
    describe_exception,
    raised_at,
)
from specexact.exact.guards import (
    check_threads,
    clock_epoch,
    clock_reads,
    frozen_reads_message,
    installed,
    swap_reporter,
)
from specexact.exact.random_source import ExactRandom, LazyToken
from specexact.exact.tree import Budget, ChoiceTree, Chooser, hidden_randomness
from specexact.numbers import ZERO

__all__ = ["BLAME_RUNS", "GlobalRandomWatch", "Slot", "enumerate_outcomes"]

#: ``normalise(value, weight, chooser) -> outcome`` (ints and lazy tokens in tuples).
Normalise = Callable[[Any, Fraction, Chooser], Any]


class Slot:
    """Placeholder for an unfixed lazy token inside an outcome's template."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Slot) and other.index == self.index

    def __hash__(self) -> int:
        return hash(("slot", self.index))

    def __repr__(self) -> str:
        return f"Slot({self.index})"


def _template(value: Any, slots: list[LazyToken], seen: dict[int, int]) -> Any:
    """Replace unfixed lazy tokens (in nested tuples) by slots; fixed ones by their value."""
    if type(value) is tuple:
        return tuple([_template(v, slots, seen) for v in value])
    if isinstance(value, LazyToken):
        if value.is_fixed:
            return value.value()
        index = seen.get(id(value))
        if index is None:
            index = seen[id(value)] = len(slots)
            slots.append(value)
        return Slot(index)
    return value


def _fill(template: Any, values: Sequence[int]) -> Any:
    if isinstance(template, Slot):
        return values[template.index]
    if type(template) is tuple:
        return tuple([_fill(t, values) for t in template])
    return template


def _leaf_key(outcome: Any) -> tuple[Hashable, list[LazyToken]]:
    if type(outcome) is int:
        return (outcome, ()), []
    slots: list[LazyToken] = []
    template = _template(outcome, slots, {})
    return (template, tuple([s.law_key() for s in slots])), slots


class GlobalRandomWatch:
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

    def advanced(self) -> bool:
        # Only generators that existed before: code that imports numpy or torch
        # lazily creates a fresh generator, which is not a draw from it.
        now = self._state()
        return any(now[name] != state for name, state in self._before.items())

    def check(self, again: Callable[[], bool] | None = None) -> None:
        """Raise :class:`HiddenRandomness` when the code advanced a global generator.

        ``again()`` runs the enumeration once more and says whether a global
        generator advanced meanwhile: another thread (a framework's event loop, a
        worker's heartbeat) may draw from the same generators while the code runs.
        The code is blamed only when every one of :data:`BLAME_RUNS` runs advanced
        one: code that draws from a global generator on its paths does so on every
        run, another thread's draw during each of them is all but impossible.
        """
        if not self.advanced():
            return
        if again is not None:
            for _ in range(BLAME_RUNS - 1):
                if not again():
                    return  # a run that drew nothing: the draws were another thread's
        msg = ("the code used a global random generator (Python's random module, "
               "numpy.random or torch) instead of rng; its draws cannot be "
               "enumerated, so no exact verdict is possible")
        raise HiddenRandomness(msg)


#: How many runs of an enumeration must all advance a global generator before the
#: code under test is blamed for it (:meth:`GlobalRandomWatch.check`).
BLAME_RUNS = 3


class _ProxyRefused(SamplerRaised):
    """The code raised because a lazy value is not a plain number (never escapes)."""


def _proxy_refused(exc: Exception) -> bool:
    """Whether ``exc`` is Python refusing an operation on a lazy value's type itself."""
    return isinstance(exc, (TypeError, AttributeError)) \
        and any(name in str(exc) for name in ("LazyToken", "LazyUniform"))


_EAGER: dict[type[ExactRandom], type[ExactRandom]] = {}


def _eager(source: type[ExactRandom]) -> type[ExactRandom]:
    """``source`` whose ``categorical`` returns a plain int, branching at the draw."""
    eager = _EAGER.get(source)
    if eager is None:
        def categorical(self: ExactRandom, weights: Any) -> Any:
            return source.categorical(self, weights).value()

        eager = _EAGER[source] = type(f"Eager{source.__name__}", (source,),
                                      {"__slots__": (), "categorical": categorical})
    return eager


@dataclass(frozen=True)
class _Run:
    """One enumeration's fixed parts: the code, the options and the observers."""

    run: Callable[[Any], Any]
    budget: Budget | None
    uniform_bits: int | None
    context: dict[str, Any] | None
    normalise: Normalise
    explain: Callable[[Exception], str] | None

    def executor(self, source: type[ExactRandom], eager: bool) -> Callable[[Chooser], Any]:
        run, uniform_bits, context, explain = self.run, self.uniform_bits, self.context, \
            self.explain
        random_class = _eager(source) if eager else source

        def execute(chooser: Chooser) -> Any:
            rng = random_class(chooser, uniform_bits)

            def report(error: BaseException) -> NoReturn:
                if isinstance(error, SamplerFailure):
                    error.context = dict(context or {})
                    error.path = tuple(chooser.describe())
                chooser.fail(error)

            previous = swap_reporter(report)
            try:
                value = run(rng)
                check_threads()  # a finding of a thread it started ends the execution
                return value
            except ForeignProtocol:
                raise  # written for another random API or model protocol: no verdict
            except Exception as exc:
                check_threads()
                if isinstance(exc, SamplerFailure):
                    # A finding of the exact model at one of the code's operations (a NaN
                    # reaching a token, uninitialised memory read, fixed randomness):
                    # real torch goes on silently there.
                    msg = (f"the code under test hit {type(exc).__name__} (found by the exact "
                           f"model; real torch raises nothing and goes on): {exc}")
                else:
                    msg = f"the code under test raised {describe_exception(exc)}"
                    where = raised_at(exc)
                    if where is not None:
                        msg += f" (at {where})"
                if explain is not None:
                    msg += explain(exc)
                if _proxy_refused(exc):
                    if not eager:
                        raise _ProxyRefused(msg, context=context,
                                            path=chooser.describe()) from exc
                    # Plain tokens did not help: a lazy uniform was refused.  The
                    # proxy, not the code, lacked the operation: no verdict.
                    raise rng.unsupported(
                        f"the code used a lazy random value where Python wanted a plain "
                        f"number ({describe_exception(exc)})") from exc
                raise SamplerRaised(msg, context=context, path=chooser.describe()) from exc
            finally:
                swap_reporter(previous)
                rng.active = False

        return execute

    def law(self, source: type[ExactRandom], eager: bool) -> dict[Hashable, Any]:
        """The law; when the code read a clock, computed under a second frozen clock too
        (:mod:`specexact.exact.guards`): a law that moves with the clock is no law."""
        reads = clock_reads()
        law = self.law_once(source, eager)
        if clock_reads() == reads:
            return law
        with clock_epoch(1) as read:
            other = self.law_once(source, eager)
        if other != law:
            raise HiddenRandomness(frozen_reads_message(read))
        return law

    def law_once(self, source: type[ExactRandom], eager: bool,
                 watched: bool = True) -> dict[Hashable, Any]:
        execute = self.executor(source, eager)
        normalise = self.normalise
        watch = GlobalRandomWatch()

        def again() -> bool:
            rerun = GlobalRandomWatch()
            with contextlib.suppress(Undecided, SamplerRaised):
                self.law_once(source, eager, watched=False)
            return rerun.advanced()

        plain: dict[Hashable, Any] = {}
        # Groups of leaves returning unfixed tokens with equal laws: the law keys
        # describe the laws, so only the summed weight is kept (not the tokens,
        # which would keep every run's random source alive).
        pending: dict[Hashable, Any] = {}
        first: tuple[Any, Hashable] | None = None
        tree: ChoiceTree[Any] = ChoiceTree(self.budget)
        try:
            with installed(), contextlib.closing(tree.explore(execute)) as leaves:
                for weight, value, chooser in leaves:
                    key, slots = _leaf_key(normalise(value, weight, chooser))
                    if first is None:
                        first = (weight, key)
                    if not slots:
                        template = key[0]  # type: ignore[index]
                        plain[template] = plain.get(template, ZERO) + weight
                        continue
                    pending[key] = pending.get(key, ZERO) + weight
        except HiddenRandomness:
            if watched:
                watch.check(again)  # a global generator is the likelier culprit: say so
            raise
        if not watched:
            return plain
        watch.check(again)
        self.confirm_first_path(execute, first)
        watch.check(again)
        return _fold(plain, pending)

    def confirm_first_path(self, execute: Callable[[Chooser], Any],
                           first: tuple[Any, Hashable] | None) -> None:
        """Run the first path once more: code with private randomness rarely repeats it."""
        tree: ChoiceTree[Any] = ChoiceTree(self.budget)
        with installed(), contextlib.closing(tree.explore(execute)) as leaves:
            for weight, value, chooser in leaves:
                if (weight, _leaf_key(self.normalise(value, weight, chooser))[0]) != first:
                    raise hidden_randomness("running the same path twice gave different "
                                            "results")
                return


def _fold(plain: dict[Hashable, Any], pending: dict[Hashable, Any]) -> dict[Hashable, Any]:
    """Add each pending group's returned lazy tokens, expanded over their laws."""
    for key, weight in pending.items():
        template: Any = key[0]  # type: ignore[index]
        laws = [LazyToken.law_of_key(law_key) for law_key in key[1]]  # type: ignore[index]
        if len(laws) == 1 and isinstance(template, Slot):
            for token, prob in laws[0]:
                plain[token] = plain.get(token, ZERO) + weight * prob
            continue
        for combo in itertools.product(*laws):
            prob = weight
            for _, p in combo:
                prob *= p
            outcome = _fill(template, [t for t, _ in combo])
            plain[outcome] = plain.get(outcome, ZERO) + prob
    return plain


def enumerate_outcomes(run: Callable[[Any], Any], *, normalise: Normalise,
                       budget: Budget | None = None, uniform_bits: int | None = None,
                       context: dict[str, Any] | None = None,
                       source: type[ExactRandom] = ExactRandom,
                       explain: Callable[[Exception], str] | None = None,
                       input_error: Callable[[], BaseException | None] | None = None
                       ) -> dict[Hashable, Any]:
    """The exact law of ``normalise(run(rng))``, as a dict outcome -> probability.

    ``run`` receives a ``source`` (an :class:`ExactRandom`).  When the code
    raises, the enumeration is replayed with drawn tokens handed out as plain
    ints (lazy tokens are proxies: ``isinstance(x, int)``, ``x.to_bytes`` or a
    C extension may refuse them where a real token would do); only a crash
    that survives that is the code's, reported as the lazy run saw it unless
    the lazy crash was plainly the proxy's.
    """
    spec = _Run(run, budget, uniform_bits, context, normalise, explain)
    try:
        return spec.law(source, eager=False)
    except SamplerRaised as lazy_crash:
        _raise_input_error(input_error)
        first_crash = lazy_crash
    try:
        return spec.law(source, eager=True)
    except SamplerRaised:
        _raise_input_error(input_error)
        if isinstance(first_crash, _ProxyRefused):
            raise  # the lazy crash was the proxy's; this one is the code's
    except Undecided:
        # The eager replay is costlier; when it cannot finish, the lazy crash
        # stands unless it was plainly the proxy's (then nothing is known).
        if isinstance(first_crash, _ProxyRefused):
            raise
    # A genuine crash: report the lazy run's, with the code's exception as cause.
    raise first_crash from first_crash.__cause__


def _raise_input_error(input_error: Callable[[], BaseException | None] | None) -> None:
    # A malformed model row is the caller's input error, not the code's fault.
    error = None if input_error is None else input_error()
    if error is not None:
        raise error from None
