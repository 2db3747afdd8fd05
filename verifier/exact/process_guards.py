"""Guards on what the code under test can read of its own process: ids, shown addresses, files.

Installed and removed with the others (:func:`specexact.exact.guards.installed`); inside
an execution of the code under test

* ``os.getpid``, ``os.getppid``, ``threading.get_ident`` and ``get_native_id`` (and
  their ``_thread`` twins, also where a module bound them by name) return frozen values
  per epoch, like the clocks: the thread that runs the code and each thread it starts
  get their own, the same on every replay.  A law that moves between the two epochs is
  UNDECIDED.  A frozen id handed back (``os.kill(os.getpid(), ...)``,
  ``signal.pthread_kill``, ``os.waitpid``...) reaches the real process or thread.  They
  are frozen for the code under test only: the standard library and
  installed packages (torch, numpy, Hypothesis, ``tempfile``, ``threading`` itself)
  compare them with values stored before, and read the real ones.
* ``repr`` and ``format`` show frozen addresses where the default text of an object
  shows its real one (``<object object at 0x7f...>``): the object's own address is its
  frozen ``id()``, a nested one's the next frozen address.  ``object.__repr__`` is C
  code that cannot be replaced, so ``str(x)``, f-strings, ``%`` formatting, ``print``
  and ``x.__repr__()`` still show the real address: out of reach (the real address is
  often the same on every replay of one run, so no replay check sees it either).
* ``open`` (``io.open``) and ``os.open`` of a path under ``/proc`` (the process's CPU
  ticks, memory, pids; the machine's load) or of ``/dev/urandom``, ``/dev/random``:
  an UNDECIDED, the same on every run, when the code under test opens it (directly or
  through :mod:`pathlib`); libraries read them as before.  A path reached through a
  symbolic link elsewhere, a listing of ``/proc`` and a subprocess are out of reach.
"""

from __future__ import annotations

import _thread
import builtins
import io
import os
import re
import signal
import threading
from collections.abc import Callable
from typing import Any

from specexact.errors import HiddenRandomness
from specexact.exact.guard_state import (
    ENTROPY_MESSAGE,
    GUARD,
    caller_is_engine,
    caller_is_library,
    frozen_address,
    frozen_shown_address,
    record_read,
)

__all__ = ["BOUND_GUARDS", "BOUND_ORIGINALS", "swap_process_guards"]

# Frozen ids, per epoch: (base, step per thread of the execution).  The two epochs
# differ in the parity of every digit that code might use as a coin.
_PID = ((24_682, 0), (31_337, 0))
_PPID = ((24_601, 0), (30_898, 0))
_IDENT = ((0x7F00_2000_0700, 0x80_1000), (0x6A5B_4C3D_28F0, 0x7F_E6D0))
_NATIVE_ID = ((24_682, 1), (31_337, 7))

_IDS: dict[str, tuple[Any, tuple[tuple[int, int], ...], str]] = {
    "getpid": (os.getpid, _PID, "os.getpid()"),
    "getppid": (os.getppid, _PPID, "os.getppid()"),
    "get_ident": (_thread.get_ident, _IDENT, "threading.get_ident()"),
    "get_native_id": (getattr(_thread, "get_native_id", None), _NATIVE_ID,
                      "threading.get_native_id()"),
}


#: The real id each frozen one stands for: a frozen pid handed to ``os.kill`` must
#: reach the process the code meant (its own), never another one that has that pid.
_real_ids: dict[int, int] = {}


def _id_guard(original: Callable[[], int], epochs: tuple[tuple[int, int], ...],
              what: str) -> Callable[[], int]:
    def read() -> int:
        guard = GUARD
        if guard.report is None or caller_is_library(1):
            return original()
        record_read(what)
        base, step = epochs[guard.epoch]
        value = base + guard.thread_index * step
        _real_ids[value] = original()
        return value

    read.__name__ = original.__name__
    read.__doc__ = original.__doc__
    return read


#: The originals and their guards, by name, for the modules that bound them by name.
BOUND_ORIGINALS: dict[str, Callable[..., Any]] = {
    name: fn for name, (fn, _, _) in _IDS.items() if fn is not None}
BOUND_GUARDS: dict[str, Callable[..., Any]] = {
    name: _id_guard(fn, epochs, what)
    for name, (fn, epochs, what) in _IDS.items() if fn is not None}
_HOMES: tuple[tuple[Any, str], ...] = (
    (os, "getpid"), (os, "getppid"), (threading, "get_ident"),
    (threading, "get_native_id"), (_thread, "get_ident"), (_thread, "get_native_id"))

def _real_id(value: Any) -> Any:
    """The real pid or thread id for a frozen one the code under test was given."""
    if GUARD.report is None or type(value) is not int:
        return value
    if value < 0 and -value in _real_ids:  # os.kill(-pgid, ...): a process group
        return -_real_ids[-value]
    return _real_ids.get(value, value)


def _signal_guard(original: Callable[..., Any]) -> Callable[..., Any]:
    def send(target: Any, *args: Any, **kwargs: Any) -> Any:
        return original(_real_id(target), *args, **kwargs)

    send.__name__ = original.__name__
    send.__doc__ = original.__doc__
    return send


_SIGNALS: tuple[tuple[Any, str, Callable[..., Any]], ...] = tuple(
    (module, name, getattr(module, name)) for module, name in (
        (os, "kill"), (os, "killpg"), (os, "pidfd_open"), (os, "waitpid"),
        (os, "getpgid"), (os, "getsid"), (signal, "pthread_kill"))
    if hasattr(module, name))
_SIGNAL_GUARDS = {name: _signal_guard(fn) for _, name, fn in _SIGNALS}

_ORIGINAL_REPR = builtins.repr
_ORIGINAL_FORMAT = builtins.format
#: How CPython's default repr shows an address (``%p``: ``0x`` and lowercase hex).
_SHOWN = re.compile(r" at 0x([0-9a-f]+)")


def _frozen_text(obj: Any, text: str, what: str) -> str:
    frozen_address(obj, what)  # the object's own address is its frozen id()

    def replace(match: re.Match[str]) -> str:
        return f" at {frozen_shown_address(int(match.group(1), 16), what):#x}"

    return _SHOWN.sub(replace, text)


def _repr(obj: Any, /) -> str:
    text = _ORIGINAL_REPR(obj)
    if " at 0x" not in text or GUARD.report is None or GUARD.addresses is None \
            or caller_is_engine(1):
        return text
    return _frozen_text(obj, text, "repr() of an object that shows its address")


def _format(value: Any, format_spec: str = "", /) -> str:
    text = _ORIGINAL_FORMAT(value, format_spec)
    if " at 0x" not in text or GUARD.report is None or GUARD.addresses is None \
            or caller_is_engine(1):
        return text
    return _frozen_text(value, text, "format() of an object that shows its address")


_ORIGINAL_OPEN = io.open
_ORIGINAL_OS_OPEN = os.open
_ENTROPY_FILES = frozenset({"/dev/random", "/dev/urandom", "/dev/arandom", "/dev/hwrng"})
_WRAPPERS = frozenset({"pathlib", "io", "_pyio", "codecs"})
_PROC_MESSAGE = (
    "the code read {what}, the state of its own process or of the machine (CPU ticks, "
    "memory, pids, load), which changes from run to run and cannot be replayed, so no "
    "exact verdict is possible: draw from rng instead")


def _check_path(file: Any) -> None:
    """Report an open of a file of ``/proc`` or an entropy device by the code under test."""
    if not isinstance(file, (str, bytes, os.PathLike)):
        return  # a file descriptor
    path = os.path.abspath(os.fsdecode(os.fspath(file)))
    entropy = path in _ENTROPY_FILES
    if not (entropy or path == "/proc" or path.startswith("/proc/")):
        return
    if caller_is_library(2, _WRAPPERS):
        return
    report = GUARD.report
    assert report is not None
    what = f"the file {path}"
    report(HiddenRandomness((ENTROPY_MESSAGE if entropy else _PROC_MESSAGE).format(what=what)))


def _open(file: Any, *args: Any, **kwargs: Any) -> Any:
    if GUARD.report is not None:
        _check_path(file)
    return _ORIGINAL_OPEN(file, *args, **kwargs)


def _os_open(path: Any, *args: Any, **kwargs: Any) -> int:
    if GUARD.report is not None:
        _check_path(path)
    return _ORIGINAL_OS_OPEN(path, *args, **kwargs)


def swap_process_guards(guarded: bool) -> None:
    """Put these guards in place (``guarded``) or the originals back."""
    for module, name in _HOMES:
        if name in BOUND_ORIGINALS and hasattr(module, name):
            setattr(module, name, (BOUND_GUARDS if guarded else BOUND_ORIGINALS)[name])
    for module, name, fn in _SIGNALS:
        setattr(module, name, _SIGNAL_GUARDS[name] if guarded else fn)
    builtins.repr = _repr if guarded else _ORIGINAL_REPR
    builtins.format = _format if guarded else _ORIGINAL_FORMAT
    opener = _open if guarded else _ORIGINAL_OPEN
    builtins.open = opener
    io.open = opener
    os.open = _os_open if guarded else _ORIGINAL_OS_OPEN
