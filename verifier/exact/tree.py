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

import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, NoReturn, TypeVar

from specexact.errors import BudgetExceeded, HiddenRandomness, InvalidArgument
from specexact.exact.guards import real_monotonic
from specexact.validation import check_integer, check_positive_number, fail

__all__ = ["METER", "OPERATION_COST", "WATCHDOG", "Budget", "ChoiceTree", "Chooser",
           "hidden_randomness"]

T = TypeVar("T")


@dataclass(frozen=True)
class Budget:
    """Limits on one enumeration.  Exceeding any of them raises BudgetExceeded.

    ``max_executions`` caps the number of replays (leaves), ``max_choices``
    the choice points in one execution, ``max_operations`` the operations on
    random values in one execution (this catches loops that keep drawing
    without branching), ``max_total_operations`` the work of the whole
    enumeration (every operation on a random value counts
    :data:`OPERATION_COST`, a categorical draw over n weights n more: a
    deterministic measure of the work, so ``check_sampler`` at V = 10^5 or a
    sampler making 60 comparisons of fresh uniforms stops in seconds, with the
    mass settled so far), ``max_execution_cpu_seconds`` the CPU time of one
    execution (code that spins without touching ``rng``, ``while True:
    pass``) and ``max_seconds`` the wall-clock time.

    Every default but ``max_execution_cpu_seconds`` is counted, so whether an
    enumeration finishes does not depend on the machine's load.  A loop that
    never touches ``rng`` cannot be counted without tracing every line (which
    would make every audit several times slower); it is bounded by the CPU time
    of that one execution, read on the enumerating thread's own CPU clock, so
    load does not move it either: only an execution whose CPU time is within
    the clock's jitter of the limit could end differently on two runs.  A
    wall-clock limit (and the alarm that interrupts code blocked in one call)
    applies only when asked for, ``Budget(max_seconds=...)``.
    """

    max_executions: int = 2_000_000
    max_choices: int = 1_000
    max_operations: int = 200_000
    max_total_operations: int = 20_000_000
    max_execution_cpu_seconds: float | None = 10.0
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_executions", "max_choices", "max_operations",
                     "max_total_operations"):
            value = getattr(self, name)
            try:
                check_integer(value, name, min_value=1)
            except InvalidArgument:
                fail(name, value, "a positive integer")
        check_positive_number(self.max_seconds, "max_seconds", allow_none=True)
        check_positive_number(self.max_execution_cpu_seconds, "max_execution_cpu_seconds",
                              allow_none=True)


#: What one operation on a random value counts towards ``Budget.max_total_operations``
#: (a categorical draw adds one per weight): about the tool's work per weight.
OPERATION_COST = 4


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

    __slots__ = ("_deadline", "_tree", "depth", "operations", "work")

    def __init__(self, tree: ChoiceTree[Any], deadline: float | None) -> None:
        self._tree = tree
        self.depth = 0
        self.operations = 0
        #: Work beyond the operations, for ``max_total_operations`` (weights drawn over).
        self.work = 0
        self._deadline = deadline

    def charge(self, work: int) -> None:
        """Count ``work`` more units towards ``Budget.max_total_operations`` (a categorical
        draw charges one per weight)."""
        self.work += work

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
                and real_monotonic() > self._deadline:
            tree.fail(BudgetExceeded(
                "enumeration exceeded its time budget "
                f"(max_seconds={tree.budget.max_seconds:.4g}) after "
                f"{tree.executions} executions, choice depth {self.depth}",
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
        return _describe(self._tree.path[: self.depth])


def _describe(path: Sequence[list[Any]]) -> list[str]:
    out = []
    for node, index, _ in path:
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
        #: The work so far, in the units of ``Budget.max_total_operations``.
        self.operations = 0
        #: Whether an execution of the code is running (read by the CPU watchdog).
        self.running = False
        self.tripped = False

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
            else real_monotonic() + budget.max_seconds
        alarm = _Alarm(self, budget.max_seconds)
        watched = budget.max_execution_cpu_seconds is not None and WATCHDOG.watch(self)
        try:
            yield from self._explore(run, deadline, alarm)
        finally:
            alarm.cancel()
            if watched:
                WATCHDOG.unwatch(self)

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
                    f"{self.executions - 1} executions, choice depth {len(path)})",
                    resolved_mass=self.resolved, limit="max_executions",
                    path=_describe(path))
            if self.operations > budget.max_total_operations:
                raise BudgetExceeded(
                    f"the enumeration needed more than max_total_operations="
                    f"{budget.max_total_operations} operations on random values (after "
                    f"{self.executions - 1} executions)", resolved_mass=self.resolved,
                    limit="max_total_operations", path=_describe(path))
            chooser = Chooser(self, deadline)
            try:
                alarm.inside = True
                self.running = True
                try:
                    result = run(chooser)
                finally:
                    alarm.inside = False
                    if self.tripped:
                        WATCHDOG.settle(self)
                    self.running = False
                    work = chooser.operations * OPERATION_COST + chooser.work
                    self.operations += work
                    METER.operations += work
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
                    if error.path is None:
                        error.path = tuple(_describe(path[: chooser.depth]))
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
            "executions" + ("; the current execution was still running" if self.inside else ""),
            limit="max_seconds")
        tree.record_error(error)
        if self.inside:
            raise _Abort

    def cancel(self) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
            self._armed = False


class _Meter(threading.local):
    """The work of every enumeration on this thread, in ``max_total_operations`` units
    (a decode shares one budget across its many enumerations)."""

    operations = 0


METER = _Meter()


class _Watchdog:
    """Stops an execution that spins on the CPU without touching ``rng``.

    One daemon thread, started on first use, looks every ``PERIOD`` seconds at
    the innermost enumeration of each watched thread; when the same execution
    has used more than ``max_execution_cpu_seconds`` of that thread's own CPU
    clock (``time.pthread_getcpuclockid``: the load of the machine does not
    move it), it records :class:`~specexact.errors.BudgetExceeded` and raises
    the tree's unwinding exception in that thread, between two bytecodes.
    Code blocked inside one C call is not interrupted (``max_seconds`` and the
    command's ``--max-seconds`` are the bound there).
    """

    PERIOD = 0.25

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, list[list[Any]]] = {}
        self._thread: threading.Thread | None = None

    def forget(self) -> None:
        """In a forked child: the parent's thread did not come along, so start afresh
        (a worker of a fork pool would otherwise never stop a spinning execution)."""
        self._lock = threading.Lock()
        self._watched = {}
        self._thread = None

    def watch(self, tree: ChoiceTree[Any]) -> bool:
        """Watch ``tree``'s executions on this thread; False where no CPU clock is read."""
        if not hasattr(time, "pthread_getcpuclockid"):
            return False
        ident = threading.get_ident()
        try:
            clock = time.pthread_getcpuclockid(ident)
            now = time.clock_gettime(clock)
        except OSError:
            return False
        with self._lock:
            # [tree, clock, executions seen, CPU time when first seen]
            self._watched.setdefault(ident, []).append([tree, clock, -1, now])
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="specexact-watchdog")
                self._thread.start()
        return True

    def unwatch(self, tree: ChoiceTree[Any]) -> None:
        ident = threading.get_ident()
        with self._lock:
            stack = self._watched.get(ident, [])
            for i in range(len(stack) - 1, -1, -1):
                if stack[i][0] is tree:
                    del stack[i]
                    break
            if stack:
                stack[-1][2] = -1  # the outer enumeration's clock starts again
            else:
                self._watched.pop(ident, None)

    def settle(self, tree: ChoiceTree[Any]) -> None:
        """In the watched thread, once its execution ended: drop an unwinding exception
        the watchdog sent that was not delivered yet."""
        with self._lock:
            tree.tripped = False
            # Let a pending unwinding exception be delivered here rather than cleared:
            # clearing it with PyThreadState_SetAsyncExc(NULL) leaves the interpreter's
            # pending-exception signal set, which slowed every later call on this
            # thread until a Hypothesis search hung.
            try:
                for _ in range(1000):
                    pass
            except _Abort:
                pass

    def _loop(self) -> None:
        while True:
            time.sleep(self.PERIOD)
            with self._lock:
                for ident, stack in list(self._watched.items()):
                    if stack:
                        self._look(ident, stack[-1])

    def _look(self, ident: int, entry: list[Any]) -> None:
        tree, clock = entry[0], entry[1]
        try:
            now = time.clock_gettime(clock)
        except OSError:  # the thread ended
            return
        if tree.executions != entry[2] or not tree.running:
            entry[2], entry[3] = tree.executions, now
            return
        limit = tree.budget.max_execution_cpu_seconds
        if limit is None or now - entry[3] <= limit or tree.tripped:
            return
        tree.tripped = True
        tree.record_error(BudgetExceeded(
            f"an execution of the code ran more than max_execution_cpu_seconds={limit:g} "
            f"CPU seconds (after {tree.executions - 1} executions): it may loop without "
            "end without touching rng", limit="max_execution_cpu_seconds"))
        _async_raise(ident, _Abort)


def _async_raise(ident: int, exc: type[BaseException]) -> None:
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc))


WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHDOG.forget)
