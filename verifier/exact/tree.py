"""Depth-first exploration of a choice tree by replay.

A run of the code under test is a sequence of *choices* (which branch of a
comparison, which token a draw turned out to be).  We explore every sequence
by re-executing the code under a recorded prefix of choices: the first run
takes the first alternative at each new choice point; afterwards we backtrack
to the deepest choice with an untried alternative and replay up to it.  Each
execution ends at one leaf, whose weight is the exact product of the
probabilities chosen along the way.

Replay also catches hidden randomness: a replayed choice point whose
signature differs from the recorded one means the code did not repeat itself.

The tree is generic in the weight type so that the symbolic engine can reuse
it with sympy expressions.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, NoReturn, TypeVar

from specexact.errors import BudgetExceeded, HiddenRandomness, InvalidArgument
from specexact.validation import check_integer, check_positive_number, fail

__all__ = ["Budget", "ChoiceTree", "Chooser", "hidden_randomness"]

T = TypeVar("T")


@dataclass(frozen=True)
class Budget:
    """Limits on one enumeration.  Exceeding any of them raises BudgetExceeded.

    ``max_executions`` caps the number of replays (leaves), ``max_choices``
    the choice points in one execution, ``max_operations`` the operations on
    random values in one execution (this catches loops that keep drawing
    without branching) and ``max_seconds`` the wall-clock time.

    The default counts only executions and operations, so that whether an
    enumeration finishes does not depend on the machine's load; a wall-clock
    limit (and the alarm that interrupts code spinning without touching
    ``rng``) applies only when asked for, ``Budget(max_seconds=...)``.
    """

    max_executions: int = 2_000_000
    max_choices: int = 1_000
    max_operations: int = 200_000
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_executions", "max_choices", "max_operations"):
            value = getattr(self, name)
            try:
                check_integer(value, name, min_value=1)
            except InvalidArgument:
                fail(name, value, "a positive integer")
        check_positive_number(self.max_seconds, "max_seconds", allow_none=True)


_HIDDEN_CAUSE = ("the code draws randomness that does not come from rng (Python's random, "
                 "numpy, a private generator, time, ...) or depends on state that changes "
                 "between calls")


def hidden_randomness(what: str) -> HiddenRandomness:
    """The one "run did not reproduce" error: ``what`` says what differed, then the cause."""
    return HiddenRandomness(f"{what}; {_HIDDEN_CAUSE}")


class _Abort(BaseException):
    """Unwinds the code under test; a BaseException so ``except Exception`` can't eat it."""


class _Node:
    __slots__ = ("alternatives", "description", "signature")

    def __init__(self, signature: Hashable, alternatives: Sequence[tuple[Any, Any]],
                 description: str) -> None:
        self.signature = signature
        self.alternatives = alternatives
        self.description = description


class Chooser:
    """Handed to one execution; answers each choice point by replay or exploration."""

    __slots__ = ("_deadline", "_tree", "depth", "operations")

    def __init__(self, tree: ChoiceTree[Any], deadline: float | None) -> None:
        self._tree = tree
        self.depth = 0
        self.operations = 0
        self._deadline = deadline

    def choose(self, signature: Hashable,
               alternatives: Callable[[], Sequence[tuple[Any, Any]]],
               description: str = "") -> Any:
        """Return the label of the alternative this execution takes.

        ``alternatives()`` lists ``(label, probability)`` pairs, every
        probability positive; it is only called on the first visit.
        ``signature`` must be equal whenever the same choice is replayed.
        """
        tree = self._tree
        path = tree.path
        depth = self.depth
        self.depth = depth + 1
        if depth < len(path):
            entry = path[depth]
            node: _Node = entry[0]
            if node.signature != signature:
                tree.record_mismatch(depth, node, signature)
            return node.alternatives[entry[1]][0]
        if depth >= tree.budget.max_choices:
            tree.fail(BudgetExceeded(
                f"an execution made more than max_choices={tree.budget.max_choices} "
                "random choices; the code may loop without end", limit="max_choices"))
        self.tick()
        alts = alternatives()
        node = _Node(signature, alts, description)
        weight = path[-1][2] * alts[0][1] if path else alts[0][1]
        path.append([node, 0, weight])
        return alts[0][0]

    def tick(self) -> None:
        """Count one operation on random values; enforce the per-run and time budgets."""
        self.operations += 1
        tree = self._tree
        if self.operations > tree.budget.max_operations:
            tree.fail(BudgetExceeded(
                f"an execution performed more than max_operations="
                f"{tree.budget.max_operations} operations on random values; "
                "the code may loop without end", limit="max_operations"))
        if self._deadline is not None and (self.operations & 63) == 0 \
                and time.monotonic() > self._deadline:
            tree.fail(BudgetExceeded(
                "enumeration exceeded its time budget "
                f"(max_seconds={tree.budget.max_seconds:.4g}) after "
                f"{tree.executions} executions, choice depth {self.depth}, "
                f"{_mass(tree.resolved)} of the probability mass resolved",
                limit="max_seconds"))

    def record_error(self, error: BaseException) -> None:
        """Remember ``error`` for this enumeration, even if the code under test swallows it."""
        self._tree.record_error(error)

    def fail(self, error: BaseException) -> NoReturn:
        """Remember ``error`` and unwind this execution; ``except Exception`` cannot stop it."""
        self._tree.fail(error)
        raise AssertionError("unreachable")  # pragma: no cover - fail always raises

    def describe(self) -> list[str]:
        """The choices taken so far in this execution, for error messages."""
        out = []
        for node, index, _ in self._tree.path[: self.depth]:
            label = node.alternatives[index][0]
            out.append(f"{node.description or node.signature}: {label!r}")
        return out


class ChoiceTree(Generic[T]):
    """Explore every execution of ``run``; yields ``(weight, result)`` per leaf."""

    def __init__(self, budget: Budget | None = None, one: Any = None) -> None:
        self.budget = budget or Budget()
        self.path: list[list[Any]] = []
        self._one = Fraction(1) if one is None else one
        self.error: BaseException | None = None
        self.resolved: Any = Fraction(0) if one is None else 0
        self.executions = 0

    def record_error(self, error: BaseException) -> None:
        """Remember ``error`` (the first one wins); the exploration raises it after the run."""
        if self.error is None:
            self.error = error

    def fail(self, error: BaseException) -> None:
        """Remember ``error`` and unwind the current execution."""
        self.record_error(error)
        raise _Abort

    def record_mismatch(self, depth: int, node: _Node, signature: Hashable) -> None:
        self.fail(hidden_randomness(
            f"replaying a run did not reproduce it: choice #{depth + 1} was "
            f"{node.description or node.signature!r} before and is {signature!r} now"))

    def explore(self, run: Callable[[Chooser], T]
                ) -> Generator[tuple[Any, T, Chooser], None, None]:
        """Yield ``(weight, result, chooser)`` for each leaf of the tree."""
        budget = self.budget
        deadline = None if budget.max_seconds is None \
            else time.monotonic() + budget.max_seconds
        alarm = _Alarm(self, budget.max_seconds)
        try:
            yield from self._explore(run, deadline, alarm)
        finally:
            alarm.cancel()

    def _explore(self, run: Callable[[Chooser], T], deadline: float | None,
                 alarm: _Alarm) -> Iterator[tuple[Any, T, Chooser]]:
        budget = self.budget
        path = self.path
        while True:
            self.executions += 1
            if self.executions > budget.max_executions:
                raise BudgetExceeded(
                    f"more than max_executions={budget.max_executions} executions "
                    f"were needed: the choice tree is larger than that (after "
                    f"{self.executions - 1} executions, choice depth {len(path)}, "
                    f"{_mass(self.resolved)} of the probability mass was resolved)",
                    resolved_mass=self.resolved, limit="max_executions")
            chooser = Chooser(self, deadline)
            try:
                alarm.inside = True
                try:
                    result = run(chooser)
                finally:
                    alarm.inside = False
            except _Abort:
                pass
            except BaseException:
                # An error the tool recorded (an unsupported operation the code
                # then wrapped in its own exception) takes precedence.
                if self.error is None:
                    raise
            if self.error is not None:
                error, self.error = self.error, None
                if isinstance(error, BudgetExceeded):
                    error.resolved_mass = self.resolved
                raise error
            if chooser.depth != len(path):
                raise hidden_randomness(
                    f"replaying a run did not reproduce it: it stopped after "
                    f"{chooser.depth} of the {len(path)} recorded choices")
            weight = path[-1][2] if path else self._one
            self.resolved = self.resolved + weight
            yield weight, result, chooser
            # Backtrack to the deepest choice with an untried alternative.
            while path:
                entry = path[-1]
                node = entry[0]
                nxt = entry[1] + 1
                if nxt < len(node.alternatives):
                    entry[1] = nxt
                    prob = node.alternatives[nxt][1]
                    entry[2] = path[-2][2] * prob if len(path) > 1 else prob
                    break
                path.pop()
            if not path:
                return


def _mass(resolved: Any) -> str:
    try:
        return f"{float(resolved):.6g}"
    except (TypeError, ValueError):
        return str(resolved)


class _Alarm:
    """Wall-clock limit for code that loops without touching ``rng``.

    The per-operation deadline check cannot see a ``while True: pass``; a
    real-time timer (main thread, POSIX only) interrupts it.  Inside the code
    under test the handler unwinds it; elsewhere it only records the error,
    which the exploration loop raises at the next execution.
    """

    def __init__(self, tree: ChoiceTree[Any], seconds: float | None) -> None:
        self.inside = False
        self._tree = tree
        self._previous: Any = None
        self._armed = False
        if seconds is None or not hasattr(signal, "setitimer") \
                or threading.current_thread() is not threading.main_thread():
            return
        if signal.getitimer(signal.ITIMER_REAL)[0] > 0:
            return  # somebody else's timer is running; do not disturb it
        self._previous = signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        self._armed = True

    def _fire(self, signum: int, frame: Any) -> None:
        tree = self._tree
        error = BudgetExceeded(
            "enumeration exceeded its time budget "
            f"(max_seconds={tree.budget.max_seconds:.4g}) after {tree.executions} "
            f"executions, {_mass(tree.resolved)} of the probability mass resolved"
            + ("; the current execution was still running" if self.inside else ""),
            limit="max_seconds")
        tree.record_error(error)
        if self.inside:
            raise _Abort

    def cancel(self) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
            self._armed = False
