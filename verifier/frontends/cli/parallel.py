"""``--jobs N``: running independent audits on several processes.

Each job is a top-level function called with picklable arguments (a target
string, a catalogue name), so workers re-import what they audit instead of
receiving it.  Results come back in submission order.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from specexact.errors import InvalidArgument, Undecided

__all__ = ["check_jobs", "run_jobs"]

R = TypeVar("R")


def check_jobs(jobs: int) -> int:
    """Validate ``--jobs``: 0 means one per CPU."""
    if jobs < 0:
        msg = f"--jobs {jobs} must be >= 1 (or 0 for one process per CPU)"
        raise InvalidArgument(msg)
    return jobs or (os.cpu_count() or 1)


@dataclass(frozen=True)
class _Escaped:
    """A BaseException that is not an Exception, raised by the code under test in a worker.

    A pool worker dies on such an exception and its task is never answered, so
    the parent would wait forever: the worker returns this marker instead.
    """

    kind: str  # "interrupt", "exit" or "other"
    text: str
    code: int | str | None = None

    def reraise(self) -> None:
        if self.kind == "interrupt":
            raise KeyboardInterrupt
        if self.kind == "exit":
            raise SystemExit(self.code)
        msg = (f"the code under test raised {self.text}, a BaseException that is not an "
               "Exception")
        raise Undecided(msg)


def _call(payload: tuple[Callable[..., Any], int, tuple[Any, ...]]) -> tuple[int, Any]:
    fn, index, args = payload
    try:
        return index, fn(*args)
    except Exception:
        raise  # the pool sends it back to the parent
    except KeyboardInterrupt:
        return index, _Escaped("interrupt", "KeyboardInterrupt")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, (int, str)) or exc.code is None \
            else repr(exc.code)
        return index, _Escaped("exit", "SystemExit", code)
    except BaseException as exc:
        name = type(exc).__name__
        return index, _Escaped("other", f"{name}({exc})" if str(exc) else name)


def run_jobs(fn: Callable[..., R], arguments: Sequence[tuple[Any, ...]], *, jobs: int,
             progress: Callable[[int, str], None] | None = None) -> list[R]:
    """``[fn(*args) for args in arguments]``, on up to ``jobs`` processes."""
    jobs = check_jobs(jobs)
    results: dict[int, R] = {}
    if jobs == 1 or len(arguments) <= 1:
        for index, args in enumerate(arguments):
            if progress is not None:
                progress(index, str(args[0]))
            results[index] = fn(*args)
        if progress is not None:
            progress(len(arguments), "")
        return [results[i] for i in range(len(arguments))]
    # fork keeps start-up cheap and lets workers inherit sys.path tweaks made
    # while loading a file target; fall back to the platform default elsewhere.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    payloads = [(fn, i, args) for i, args in enumerate(arguments)]
    with context.Pool(min(jobs, len(arguments))) as pool:
        for done, (index, value) in enumerate(pool.imap_unordered(_call, payloads), start=1):
            if isinstance(value, _Escaped):
                value.reraise()
            results[index] = value
            if progress is not None:
                progress(done, str(arguments[index][0]))
    return [results[i] for i in range(len(arguments))]
