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

Each replacement calls ``report(error)``, which must record the error and
unwind the execution (the choice tree's ``fail``): code under test that
catches ``Exception`` cannot swallow it.  Outside an enumeration, and in
threads other than the one enumerating, the originals are untouched in
behaviour.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
from collections.abc import Callable, Iterator
from typing import NoReturn

from specexact.errors import HiddenRandomness, SamplerFailure

__all__ = ["ProcessExit", "installed", "swap_reporter"]

Report = Callable[[BaseException], NoReturn]

_ENTROPY_MESSAGE = (
    "the code read {what}, entropy from the operating system that cannot be replayed "
    "(os.urandom, secrets, random.SystemRandom, uuid4...); its draws cannot be "
    "enumerated, so no exact verdict is possible: draw from rng instead")


class ProcessExit(SamplerFailure):
    """The code under test tried to end the process (``os._exit`` or ``os.abort``)."""


class _Guard(threading.local):
    report: Report | None = None


_GUARD = _Guard()
_ORIGINAL_EXIT = os._exit
_ORIGINAL_ABORT = os.abort
_ORIGINAL_URANDOM = os.urandom
_depth_lock = threading.Lock()
_depth = 0


def _reporter() -> Report | None:
    return _GUARD.report


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
    report(HiddenRandomness(_ENTROPY_MESSAGE.format(what=f"os.urandom({size!r})")))
    raise AssertionError("unreachable")  # pragma: no cover


def _install() -> None:
    os._exit = _exit
    os.abort = _abort
    os.urandom = _urandom
    random._urandom = _urandom  # type: ignore[attr-defined]


def _uninstall() -> None:
    os._exit = _ORIGINAL_EXIT
    os.abort = _ORIGINAL_ABORT
    os.urandom = _ORIGINAL_URANDOM
    random._urandom = _ORIGINAL_URANDOM  # type: ignore[attr-defined]


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
    previous = _GUARD.report
    _GUARD.report = report
    return previous
