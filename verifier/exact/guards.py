"""Guards around the code under test: process exits and entropy the tree cannot see.

While an enumeration runs the code under test (:func:`installed` around the
enumeration, :func:`swap_reporter` around each execution), the guards replace

* ``os._exit`` and ``os.abort``: a sampler that calls them would end the
  audit itself (a silent exit 0 in CI, or a hung worker pool).  The call
  becomes a finding instead: :class:`ProcessExit` carries what was asked.
* ``os.urandom`` (and the copy the :mod:`random` module keeps for
  ``random.SystemRandom``, which :mod:`secrets` uses): entropy from the
  operating system cannot be replayed, so no exact law exists.  The first
  read is reported as :class:`~specexact.errors.HiddenRandomness`, the same
  verdict on every run, instead of relying on replay to notice a path that
  did not reproduce (which it does only by chance).

* ``os.fork`` (``posix.fork``, ``os.forkpty``): a copy of the audit's process
  would run the rest of the audit too; the call is an UNDECIDED of its own,
  :class:`ProcessFork`, not a draw from a global generator (Python reseeds
  :mod:`random` in a forked child, which the generator watch would see).
* the clocks: ``time.time``, ``perf_counter``, ``monotonic``,
  ``process_time``, ``thread_time`` (and their ``_ns`` twins), and
  ``datetime.datetime.now``/``utcnow``/``today``, also where a module bound
  them by name (``from time import perf_counter``).  Inside an execution of
  the code under test they read a *frozen, ticking* clock: the k-th read of an
  execution returns ``base + k * step``, the same on every replay, so engine
  code that times itself or logs a timing runs as it would (time moves, a
  division by an elapsed time does not fail).  A read is remembered
  (:func:`clock_reads`); the enumerator then computes the law a second time
  under a second clock (:func:`clock_epoch`, another base and step) and
  compares: a law that differs depends on the clock, an UNDECIDED on every
  run.  Two clocks cannot rule out every dependence (code testing
  ``t > 10**12`` sees the same branch under both): a verdict then is the
  code's law under the frozen clocks, which no real clock reproduces.
* the process and thread ids, the addresses shown by ``repr``/``format``, and the
  files of ``/proc`` and ``/dev/*random``: :mod:`specexact.exact.process_guards`,
  installed with these (the state they share is :mod:`specexact.exact.guard_state`).

Each replacement calls ``report(error)``, which must record the error and
unwind the execution (the choice tree's ``fail``): code under test that
catches ``Exception`` cannot swallow it.  Outside an enumeration, and in
threads other than the one enumerating, the originals are untouched in
behaviour.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime
import fractions
import gc
import os
import posix
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

from specexact.errors import HiddenRandomness, SamplerFailure, Undecided
from specexact.exact.guard_state import (
    ENTROPY_MESSAGE,
    GUARD,
    Report,
    caller_is_engine,
    child_reads,
    frozen_address,
    record_read,
)
from specexact.exact.process_guards import BOUND_GUARDS, BOUND_ORIGINALS, swap_process_guards

__all__ = ["ProcessExit", "ProcessFork", "check_threads", "clock_epoch", "clock_reads",
           "frozen_reads_message", "installed", "real_monotonic", "running",
           "swap_reporter"]


class ProcessExit(SamplerFailure):
    """The code under test tried to end the process (``os._exit`` or ``os.abort``)."""


class ProcessFork(Undecided):
    """The code under test forked the process (``os.fork``): no verdict."""


_GUARD = GUARD
_ORIGINAL_EXIT = os._exit
_ORIGINAL_ABORT = os.abort
_ORIGINAL_URANDOM = os.urandom
_depth_lock = threading.Lock()
_depth = 0


def _reporter() -> Report | None:
    return _GUARD.report


class _ThreadFinding(BaseException):
    """Ends a thread the code under test started once it hit a guard: the finding waits
    in the starting execution (:func:`check_threads`)."""


def check_threads() -> None:
    """Report a finding of a thread the current execution started, or of a fork it made
    (through its reporter), if any: called when the code under test returns or raises."""
    pending = _GUARD.pending
    report = _GUARD.report
    if pending and report is not None:
        report(pending[0])


def _child(function: Callable[..., Any], report: Report, pending: list[BaseException],
           epoch: int, index: int, started: list[int],
           names: dict[str, None] | None) -> Callable[..., Any]:
    """``function`` run in a new thread under the guards of the execution that started it."""

    def child_report(error: BaseException) -> NoReturn:
        pending.append(error)
        raise _ThreadFinding

    def run(*args: Any, **kwargs: Any) -> Any:
        guard = _GUARD
        guard.report, guard.epoch, guard.addresses = child_report, epoch, {}
        guard.pending, guard.child = pending, True
        guard.thread_index, guard.started, guard.names = index, started, names
        try:
            return function(*args, **kwargs)
        except _ThreadFinding:
            return None
        finally:
            guard.report, guard.addresses, guard.pending = None, None, None

    del report  # the child reports into ``pending``; the parent reports it
    return run


_ORIGINAL_START = threading._start_new_thread  # type: ignore[attr-defined]
_excepthooks: list[Callable[[Any], object]] = []


def _excepthook(args: Any) -> object:
    """``threading.excepthook`` while installed: a thread ended by a guard is quiet."""
    if isinstance(args.exc_value, _ThreadFinding):
        return None
    return _excepthooks[-1](args)


def _start_new_thread(function: Callable[..., Any], args: tuple[Any, ...],
                      *rest: Any) -> Any:
    guard = _GUARD
    report = guard.report
    if report is None:
        return _ORIGINAL_START(function, args, *rest)
    if guard.pending is None:
        guard.pending = []
    if guard.started is None:
        guard.started = [0]
    guard.started[0] += 1  # threads are numbered in the order the code starts them
    child = _child(function, report, guard.pending, guard.epoch, guard.started[0],
                   guard.started, guard.names)
    return _ORIGINAL_START(child, args, *rest)


def _exit(status: int) -> NoReturn:
    report = _reporter()
    if report is None:
        _ORIGINAL_EXIT(status)
    report(ProcessExit(f"the code under test called os._exit({status!r}), which would "
                       "end the audit's own process; a sampler must return a token"))
    raise AssertionError("unreachable")  # pragma: no cover - report always raises


def _abort() -> NoReturn:
    report = _reporter()
    if report is None:
        _ORIGINAL_ABORT()
    report(ProcessExit("the code under test called os.abort(), which would kill the "
                       "audit's own process; a sampler must return a token"))
    raise AssertionError("unreachable")  # pragma: no cover


def _urandom(size: int) -> bytes:
    report = _reporter()
    if report is None:
        return _ORIGINAL_URANDOM(size)
    report(HiddenRandomness(ENTROPY_MESSAGE.format(what=f"os.urandom({size!r})")))
    raise AssertionError("unreachable")  # pragma: no cover


_FORK_MESSAGE = ("the code under test called {what}: a copy of the audit's process would "
                 "run the rest of the audit too, so no verdict is possible; a sampler must "
                 "not start processes")


def _fork_guard(original: Callable[[], Any], what: str) -> Callable[[], Any]:
    def fork() -> Any:
        report = _reporter()
        if report is None:
            return original()
        report(ProcessFork(_FORK_MESSAGE.format(what=f"{what}()")))
        raise AssertionError("unreachable")  # pragma: no cover

    return fork


def _before_fork() -> None:
    """Any fork while the code under test runs (also through a name bound before the
    guards, ``from os import fork``, or multiprocessing): remembered for the parent."""
    guard = _GUARD
    if guard.report is not None:
        if guard.pending is None:
            guard.pending = []
        guard.pending.append(ProcessFork(_FORK_MESSAGE.format(what="fork()")))


def _after_fork_in_child() -> None:
    """The copy of the audit's process a fork made stops at once: it must not run the
    rest of the audit (and report a second verdict)."""
    if _GUARD.report is not None:
        _ORIGINAL_EXIT(0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)

_FORKS = {name: getattr(os, name) for name in ("fork", "forkpty") if hasattr(os, name)}
_FORK_GUARDS = {name: _fork_guard(fn, f"os.{name}") for name, fn in _FORKS.items()}

# Frozen clocks, in nanoseconds: (base, step) per epoch, for wall clocks and for the
# others.  The two differ in the parity of their seconds, milliseconds, microseconds and
# nanoseconds, and in their steps, so a clock used as a coin gives two laws.
_WALL = ((1_700_000_000_250_000_000, 1_000_000), (1_812_345_679_751_235_123, 13_700_001))
_COUNTER = ((1_000_500_000_000, 1_000_000), (987_654_125_678_901, 13_700_001))


def _frozen(wall: bool, what: str) -> int:
    """The next frozen read, in nanoseconds."""
    guard = _GUARD
    k = guard.reads
    guard.reads = k + 1
    record_read(what)
    base, step = (_WALL if wall else _COUNTER)[guard.epoch]
    return base + k * step


def _clock_guard(original: Callable[[], Any], wall: bool, ns: bool) -> Callable[[], Any]:
    def clock() -> Any:
        if _GUARD.report is None:
            return original()
        value = _frozen(wall, what)
        return value if ns else value / 1_000_000_000

    what = f"time.{getattr(original, '__name__', 'clock')}()"
    clock.__name__ = getattr(original, "__name__", "clock")
    clock.__doc__ = getattr(original, "__doc__", None)
    return clock


_ORIGINAL_ID = builtins.id
_ORIGINAL_HASH = builtins.hash
_IDENTITY_HASH: Any = object.__hash__


def _address(obj: Any, what: str) -> int | None:
    """The frozen address of ``obj`` in the current execution (None outside one, and for
    specexact's own code, which keys its caches by real addresses)."""
    guard = _GUARD
    if guard.addresses is None or guard.report is None or caller_is_engine(2):
        return None  # caller_is_engine(2): who called id() or hash()
    return frozen_address(obj, what)


def _id(obj: Any, /) -> int:
    value = _address(obj, "id()")
    return _ORIGINAL_ID(obj) if value is None else value


def _hash(obj: Any, /) -> int:
    if type(obj).__hash__ is _IDENTITY_HASH:
        value = _address(obj, "hash() of an object hashed by identity")
        if value is not None:
            return value >> 4  # CPython's identity hash: the address rotated by 4 bits
    return _ORIGINAL_HASH(obj)


#: The real monotonic clock, for specexact's own deadlines and progress lines: inside
#: an execution of the code under test ``time.monotonic`` reads the frozen clock.
real_monotonic = time.monotonic

_CLOCK_NAMES = {"time": True, "perf_counter": False, "monotonic": False,
                "process_time": False, "thread_time": False}
_CLOCKS: dict[str, Callable[[], Any]] = {}
for _name, _wall in _CLOCK_NAMES.items():
    for _ns in (False, True):
        _full = _name + ("_ns" if _ns else "")
        if hasattr(time, _full):
            _CLOCKS[_full] = getattr(time, _full)
_CLOCK_GUARDS = {name: _clock_guard(fn, _CLOCK_NAMES[name.removesuffix("_ns")],
                                    name.endswith("_ns"))
                 for name, fn in _CLOCKS.items()}
_ORIGINAL_DATETIME = datetime.datetime


class _GuardedDatetime(datetime.datetime):
    """``datetime.datetime`` while the guards are installed: ``now``, ``utcnow`` and
    ``today`` read the frozen wall clock inside an execution of the code under test."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> datetime.datetime:  # type: ignore[override]
        if _GUARD.report is None:
            return _ORIGINAL_DATETIME.now(tz)
        return _ORIGINAL_DATETIME.fromtimestamp(_frozen(True, "datetime.now()") / 1_000_000_000,
                                                tz)

    @classmethod
    def utcnow(cls) -> datetime.datetime:  # type: ignore[override]
        if _GUARD.report is None:
            return _ORIGINAL_DATETIME.utcnow()
        return _ORIGINAL_DATETIME.fromtimestamp(_frozen(True, "datetime.utcnow()")
                                                / 1_000_000_000, datetime.UTC) \
            .replace(tzinfo=None)

    @classmethod
    def today(cls) -> datetime.datetime:  # type: ignore[override]
        return cls.now()


# Where modules bound a clock or an id by name (``from time import perf_counter``,
# ``from os import getpid``): found once per module, swapped while the guards are
# installed.
_BOUND_ORIGINALS = {**_CLOCKS, **BOUND_ORIGINALS}
_BOUND_GUARDS = {**_CLOCK_GUARDS, **BOUND_GUARDS}
_originals = {id(fn): name for name, fn in _BOUND_ORIGINALS.items()}
_bound: list[tuple[dict[str, Any], str, str]] = []
_scanned: set[str] = set()


def _scan_modules() -> None:
    for module_name, module in list(sys.modules.items()):
        if module_name in _scanned:
            continue
        _scanned.add(module_name)
        if module_name.split(".")[0] in ("specexact", "time", "datetime", "os", "posix",
                                         "threading", "_thread"):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            name = _originals.get(id(value))
            if name is not None and value is _BOUND_ORIGINALS[name]:
                _bound.append((namespace, key, name))


def _swap(guarded: bool) -> None:
    """Put the guards in place (``guarded``) or the originals back."""
    os._exit = _exit if guarded else _ORIGINAL_EXIT
    os.abort = _abort if guarded else _ORIGINAL_ABORT
    urandom = _urandom if guarded else _ORIGINAL_URANDOM
    os.urandom = urandom
    random._urandom = urandom  # type: ignore[attr-defined]
    for name, fn in _FORKS.items():
        fork = _FORK_GUARDS[name] if guarded else fn
        setattr(os, name, fork)
        if hasattr(posix, name):
            setattr(posix, name, fork)
    for name, fn in _CLOCKS.items():
        setattr(time, name, _CLOCK_GUARDS[name] if guarded else fn)
    datetime.datetime = _GuardedDatetime if guarded else _ORIGINAL_DATETIME  # type: ignore[misc]
    builtins.id = _id if guarded else _ORIGINAL_ID
    builtins.hash = _hash if guarded else _ORIGINAL_HASH
    # Fraction hashes its numerator and denominator, ints, by value: never an address.
    # It reads the real hash() (its module's own name shadows the guard), which takes
    # two of the guard's calls off every hash of specexact's numbers (a loop of Fraction
    # hashes: 1.47x the unguarded time before, 1.25x after); nothing is left in the
    # module when the guards are removed.
    if guarded:
        vars(fractions)["hash"] = _ORIGINAL_HASH
    else:
        vars(fractions).pop("hash", None)
    threading._start_new_thread = (  # type: ignore[attr-defined]
        _start_new_thread if guarded else _ORIGINAL_START)
    swap_process_guards(guarded)
    if guarded and len(_scanned) != len(sys.modules):
        _scan_modules()
    for namespace, key, name in _bound:
        old, new = (_BOUND_ORIGINALS[name], _BOUND_GUARDS[name]) if guarded \
            else (_BOUND_GUARDS[name], _BOUND_ORIGINALS[name])
        if namespace.get(key) is old:
            namespace[key] = new


def _collection_starts(phase: str, info: dict[str, int]) -> None:
    """``gc.callbacks``, first in the list: finalizers, weakref callbacks and other
    libraries' gc callbacks are not the code under test, whatever garbage they belong to
    (a Ray or Dask handle from another test, a library timing its collections): while
    the collector runs, this thread reads the real clocks, ids and addresses and nothing
    it reads is blamed on the code.  Which execution a collection falls in depends on
    every allocation before it, so a read there would move the frozen values and the
    names a report gives from one run to the next."""
    if phase == "start":
        guard = _GUARD
        guard.collected_report, guard.report = guard.report, None


def _collection_stops(phase: str, info: dict[str, int]) -> None:
    """``gc.callbacks``, last in the list: the code under test runs on."""
    if phase == "stop":
        guard = _GUARD
        guard.report, guard.collected_report = guard.collected_report, None


def _install() -> None:
    _excepthooks.append(threading.excepthook)
    threading.excepthook = _excepthook
    gc.callbacks.insert(0, _collection_starts)
    gc.callbacks.append(_collection_stops)
    _swap(True)


def _uninstall() -> None:
    _swap(False)
    for callback in (_collection_starts, _collection_stops):
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(callback)
    if threading.excepthook is _excepthook:
        threading.excepthook = _excepthooks[-1]
    _excepthooks.pop()


def running() -> bool:
    """Whether this thread runs code under test now (an execution, or a thread it
    started)."""
    return _GUARD.report is not None


def clock_reads() -> int:
    """How many times code under test read a clock, an address or a process or thread id
    on this thread, or in threads it started (frozen reads)."""
    return _GUARD.total_reads + child_reads[0]


@contextlib.contextmanager
def clock_epoch(epoch: int) -> Iterator[dict[str, None]]:
    """Read the frozen clocks, addresses and ids number ``epoch`` (0 or 1) on this thread
    within the body; what the code read there is collected in the dictionary yielded
    (``{"os.getpid()": None}``), for :func:`frozen_reads_message`."""
    guard = _GUARD
    previous, names = guard.epoch, guard.names
    collected: dict[str, None] = {}
    guard.epoch, guard.names = epoch, collected
    try:
        yield collected
    finally:
        guard.epoch, guard.names = previous, names


def frozen_reads_message(names: Iterable[str]) -> str:
    """Why a law that moved between the two frozen epochs has no verdict, naming what the
    code read (``names``: the reads :func:`clock_epoch` collected)."""
    read = sorted(names)
    shown = ", ".join(read[:6]) + (f" and {len(read) - 6} more" if len(read) > 6 else "")
    return ("the law of what the code returns depends on the clock or the object addresses "
            f"or the process and thread ids it read ({shown or 'in another thread'}): run "
            "under two frozen clocks, addresses and ids it gave two different laws, so they "
            "act as a coin and no exact verdict is possible; draw from rng instead")


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Install the guards for the body (an enumeration); nested uses are counted.

    Nothing is reported until :func:`swap_reporter` names where findings go:
    the tool's own code between executions keeps the originals' behaviour.
    """
    global _depth
    with _depth_lock:
        if _depth == 0:
            _install()
        _depth += 1
    try:
        yield
    finally:
        with _depth_lock:
            _depth -= 1
            if _depth == 0:
                _uninstall()


def swap_reporter(report: Report | None) -> Report | None:
    """Make ``report`` receive this thread's findings (None: none); return the previous one.

    Called around each execution of the code under test, inside :func:`installed`.
    """
    guard = _GUARD
    previous = guard.report
    guard.report = report
    if report is not None:
        guard.reads = 0  # each execution's clock starts again: replays read the same times
        guard.addresses = {}  # and so do its addresses
        guard.pending = None
        guard.thread_index, guard.started = 0, None  # and its threads' ids
    else:
        guard.addresses = None
    return previous
