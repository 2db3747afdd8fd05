"""What the guards know about the execution in progress, shared by :mod:`specexact.exact.guards`
(exits, entropy, forks, clocks, ``id``/``hash``, threads) and
:mod:`specexact.exact.process_guards` (process and thread ids, addresses shown by reprs,
files of ``/proc`` and ``/dev/*random``).

One thread-local record (:data:`GUARD`) says whether this thread runs code under test,
where its findings go, which of the two frozen epochs it reads, the frozen addresses of
the execution, and what it read (:func:`record_read`).  :func:`caller_is_engine` and
:func:`caller_is_library` decide who called a guarded function: specexact's own code
always reads the real values; the process and thread ids are frozen for the code under
test only, because libraries compare them with values they stored before (a pid
remembered at import to notice a fork).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import threading
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["ENTROPY_MESSAGE", "GUARD", "Report", "caller_is_engine", "caller_is_library",
           "child_reads", "frozen_address", "frozen_shown_address", "record_read"]

Report = Callable[[BaseException], NoReturn]

ENTROPY_MESSAGE = (
    "the code read {what}, entropy from the operating system that cannot be replayed "
    "(os.urandom, secrets, random.SystemRandom, uuid4...); its draws cannot be "
    "enumerated, so no exact verdict is possible: draw from rng instead")


class GuardState(threading.local):
    """The guards' view of this thread (one instance, :data:`GUARD`)."""

    report: Report | None = None
    #: Clock reads in the current execution, and frozen reads in this thread in all.
    reads = 0
    total_reads = 0
    #: Which frozen epoch the reads see (0 or 1).
    epoch = 0
    #: The frozen addresses of the current execution: id(object) -> (object, address).
    addresses: dict[int, tuple[Any, int]] | None = None
    #: The findings of threads the current execution started.
    pending: list[BaseException] | None = None
    #: Whether this thread was started by the code under test.
    child = False
    #: This thread's number in its execution (0: the thread that runs the code), and the
    #: count of threads the execution started, shared with them.
    thread_index = 0
    started: list[int] | None = None
    #: What the code read (``"os.getpid()"``...), while :func:`clock_epoch` collects it.
    names: dict[str, None] | None = None
    #: The reporter set aside while the garbage collector runs finalizers on this thread
    #: (they are not the code under test: see :func:`specexact.exact.guards.installed`).
    collected_report: Report | None = None


GUARD = GuardState()
#: Frozen reads made by threads the code under test started.
child_reads = [0]


def record_read(what: str) -> None:
    """Count a frozen read of ``what`` (a clock, an address, an id) by the code under test."""
    guard = GUARD
    guard.total_reads += 1
    if guard.child:
        child_reads[0] += 1
    names = guard.names
    if names is not None:
        names[what] = None


def caller_is_engine(depth: int) -> bool:
    """Whether the frame ``depth`` levels above the caller is specexact's own code (the
    catalogue's rules are code under test like any other)."""
    name = sys._getframe(depth + 1).f_globals.get("__name__", "")
    return (name == "specexact" or name.startswith("specexact.")) \
        and not name.startswith("specexact.counterexamples")


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    dirs.update(site.getsitepackages())
    with_user = getattr(site, "getusersitepackages", None)
    if with_user is not None:
        dirs.add(with_user())
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs)


_LIBRARY_DIRS = _library_dirs()
#: Per code file: whether it belongs to the standard library or an installed package.
_libraries: dict[str, bool] = {}


def caller_is_library(depth: int, skip: frozenset[str] = frozenset()) -> bool:
    """Whether the frame ``depth`` levels above the caller (past frames of the modules in
    ``skip``, thin wrappers such as :mod:`pathlib`) is specexact's own code, the standard
    library or an installed package: code that is not under test."""
    frame = sys._getframe(depth + 1)
    while skip and frame.f_back is not None and frame.f_globals.get("__name__") in skip:
        frame = frame.f_back
    name = frame.f_globals.get("__name__", "")
    if (name == "specexact" or name.startswith("specexact.")) \
            and not name.startswith("specexact.counterexamples"):
        return True
    filename = frame.f_code.co_filename
    known = _libraries.get(filename)
    if known is None:
        known = filename.startswith("<frozen ") or (
            not filename.startswith("<")
            and os.path.abspath(filename).startswith(_LIBRARY_DIRS))
        _libraries[filename] = known
    return known


# Frozen addresses, per epoch: 16-byte aligned like CPython's, other parities of the
# higher bits in the second epoch.
_ADDRESSES = ((0x7F00_0000_1000, 0x40), (0x5A5A_5A5A_5FF0, 0x1D0))
_REAL_ID = id


def _allocate(key: int, obj: Any, what: str) -> int:
    guard = GUARD
    addresses = guard.addresses
    assert addresses is not None
    known = addresses.get(key)
    if known is not None:
        return known[1]
    base, step = _ADDRESSES[guard.epoch]
    value = base + len(addresses) * step
    addresses[key] = (obj, value)
    record_read(what)
    return value


def frozen_address(obj: Any, what: str) -> int:
    """The frozen address of ``obj`` in the current execution (kept alive with it, so no
    other object gets its real id); the caller checked that one is running."""
    return _allocate(_REAL_ID(obj), obj, what)


def frozen_shown_address(real: int, what: str) -> int:
    """The frozen address standing for the real address ``real`` shown in a text (the
    object itself is out of reach: a nested one's address in ``repr([object()])``)."""
    return _allocate(real, None, what)
