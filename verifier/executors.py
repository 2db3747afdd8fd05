"""Where independent pieces of work run: this process, a fork pool, or a Dask cluster.

An executor runs ``fn(*args)`` for each tuple of ``arguments`` and returns the
results **in submission order**, whatever order the workers finish in, so that
what is built from them does not depend on the number of workers.  A task whose
worker died (a crash, ``os._exit``, the out-of-memory killer, a lost machine) is
retried; one that still cannot be finished comes back as :class:`Lost`, never as
a result, and whoever asked turns it into an UNDECIDED verdict (or redoes the
work in its own process).

* :class:`LocalExecutor` with ``jobs=1`` runs everything in this process;
  with ``jobs=N`` on a fork pool of ``N`` processes (forked, so a task's function
  may be a closure: the workers inherit it rather than receive it).
* :class:`DaskExecutor` runs on a ``dask.distributed`` cluster (``specexact[dask]``):
  an existing scheduler at ``address``, or a local cluster of ``workers``
  processes.  Functions travel by cloudpickle.

:func:`using_executor` makes an executor the current one for the code inside the
``with`` block: a decode (:mod:`specexact.steps`) then splits its large levels
over it.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from specexact.errors import InvalidArgument, Undecided

__all__ = [
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "Lost",
    "current",
    "executor_from_spec",
    "using_executor",
]

#: ``progress(done, detail)``: ``done`` tasks finished, ``detail`` naming the last one.
Progress = Callable[[int, str], None]


@dataclass(frozen=True)
class Lost:
    """A task that no worker finished: its worker died on every try."""

    reason: str

    def __str__(self) -> str:
        return f"the task was lost: {self.reason}"


class Executor(Protocol):
    """Runs independent tasks; results in submission order (:class:`Lost` for a lost one)."""

    #: How many tasks can run at once (1: in this process, one after the other).
    workers: int

    def map(self, fn: Callable[..., Any], arguments: Sequence[tuple[Any, ...]], *,
            shared: tuple[Any, ...] = (), progress: Progress | None = None) -> list[Any]:
        """``[fn(*shared, *args) for args in arguments]``, a :class:`Lost` where a worker
        died; ``shared`` travels to each worker once, not with every task."""

    def close(self) -> None:
        """Let the workers go."""


_CURRENT: ContextVar[Executor | None] = ContextVar("specexact_executor", default=None)


@dataclass(frozen=True)
class _Escaped:
    """A BaseException that is not an Exception, raised by the code under test in a worker.

    A worker dies on such an exception and its task is never answered: the
    worker returns this marker instead, and the parent raises it again.
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


def _guarded(fn: Callable[..., Any], shared: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
    """``fn(*shared, *args)`` in a worker, which runs its work serially (no nested pools)."""
    token = _CURRENT.set(None)
    try:
        return fn(*shared, *args)
    except Exception:
        raise  # the pool sends it back to the parent
    except KeyboardInterrupt:
        return _Escaped("interrupt", "KeyboardInterrupt")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, (int, str)) or exc.code is None \
            else repr(exc.code)
        return _Escaped("exit", "SystemExit", code)
    except BaseException as exc:
        name = type(exc).__name__
        return _Escaped("other", f"{name}({exc})" if str(exc) else name)
    finally:
        _CURRENT.reset(token)


#: The function and arguments of the fork pool's current ``map``: set before the
#: workers fork, so they inherit them and a task is only its index (closures and
#: models never have to be pickled; only the results are).
#: Keyed by a number per ``map``, so maps on two threads never mix their tasks.
_FORKED: dict[int, tuple[Callable[..., Any], tuple[Any, ...], Sequence[tuple[Any, ...]]]] = {}
_MAPS = itertools.count()


def _forked_call(key: int, index: int) -> Any:
    fn, shared, arguments = _FORKED[key]
    return _guarded(fn, shared, arguments[index])


def _unwrap(value: Any) -> Any:
    if isinstance(value, _Escaped):
        value.reraise()
    return value


def _label(args: tuple[Any, ...]) -> str:
    return str(args[0]) if args else ""


class LocalExecutor:
    """This process (``jobs=1``) or a fork pool of ``jobs`` processes (0: one per CPU)."""

    def __init__(self, jobs: int = 1) -> None:
        self.workers = check_jobs(jobs)

    def __repr__(self) -> str:
        return f"LocalExecutor(jobs={self.workers})"

    def close(self) -> None:
        """Nothing to let go: each ``map`` starts and ends its own pool."""

    def map(self, fn: Callable[..., Any], arguments: Sequence[tuple[Any, ...]], *,
            shared: tuple[Any, ...] = (), progress: Progress | None = None) -> list[Any]:
        if self.workers == 1 or len(arguments) <= 1 or not _can_fork():
            results = []
            for done, args in enumerate(arguments, start=1):
                results.append(fn(*shared, *args))
                if progress is not None:
                    progress(done, _label(args))
            return results
        results_by_index: dict[int, Any] = {}
        pending = list(range(len(arguments)))
        key = next(_MAPS)
        _FORKED[key] = (fn, shared, arguments)
        try:
            # First all tasks on one pool; the tasks a dead worker took down with it
            # are then tried once more each on a pool of their own, so that one task
            # that kills its worker loses no other.
            pending = self._round(key, arguments, pending, self.workers, results_by_index,
                                  progress)
            for index in list(pending):
                self._round(key, arguments, [index], 1, results_by_index, progress)
        finally:
            del _FORKED[key]
        for index in range(len(arguments)):
            if index not in results_by_index:
                results_by_index[index] = Lost("its worker process died on every try "
                                               f"({_label(arguments[index])})")
                if progress is not None:
                    progress(len(results_by_index), _label(arguments[index]))
        return [_unwrap(results_by_index[i]) for i in range(len(arguments))]

    @staticmethod
    def _round(key: int, arguments: Sequence[tuple[Any, ...]], indices: list[int],
               workers: int, results: dict[int, Any], progress: Progress | None) -> list[int]:
        """Run ``indices`` on a fresh pool; the indices no worker finished."""
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(workers, len(indices)), mp_context=context) as pool:
            futures = {i: pool.submit(_forked_call, key, i) for i in indices}
            lost = []
            for index, future in futures.items():
                try:
                    value = future.result()
                except BrokenProcessPool:
                    lost.append(index)
                    continue
                results[index] = value
                if progress is not None:
                    progress(len(results), _label(arguments[index]))
        return lost


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


class DaskExecutor:
    """A ``dask.distributed`` cluster: the scheduler at ``address``, or (``address=None``)
    a local cluster of ``workers`` processes with one thread each, started here
    (``processes=False``: threads of this process, which start in a second).

    Dask retries a task whose worker died (``distributed.scheduler.allowed-failures``,
    3 by default); one that kills every worker it meets comes back :class:`Lost`.
    """

    def __init__(self, address: str | None = None, workers: int = 2, *,
                 processes: bool = True) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            msg = ("--executor dask needs dask.distributed: pip install 'specexact[dask]'")
            raise InvalidArgument(msg) from None
        self.address = address
        self._cluster: Any = None
        try:
            if address is None:
                self._cluster = LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=check_jobs(workers), threads_per_worker=1, processes=processes,
                    dashboard_address=None)
                self._client: Any = Client(self._cluster)  # type: ignore[no-untyped-call]
            else:
                self._client = Client(address, timeout=30)  # type: ignore[no-untyped-call]
        except (OSError, TimeoutError) as exc:
            self.close()
            msg = (f"--executor dask:{address}: cannot reach a Dask scheduler there "
                   f"({type(exc).__name__}: {exc}); give tcp://HOST:PORT of a running "
                   "`dask scheduler`, or plain --executor dask for a local cluster")
            raise InvalidArgument(msg) from None
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))

    def __repr__(self) -> str:
        where = self.address or "a local cluster"
        return f"DaskExecutor({where}, {self.workers} workers)"

    def close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.close()

    def on_every_worker(self, fn: Callable[[], Any]) -> None:
        """Run ``fn()`` once on every worker now (imports, say, before a timed run)."""
        if self._client is not None:
            self._client.run(fn)

    def map(self, fn: Callable[..., Any], arguments: Sequence[tuple[Any, ...]], *,
            shared: tuple[Any, ...] = (), progress: Progress | None = None) -> list[Any]:
        from distributed import KilledWorker

        if self._client is None:
            msg = "this DaskExecutor was closed"
            raise InvalidArgument(msg)
        # ``shared`` (a decode's step and models) is sent to every worker once.
        common = self._client.scatter([shared], broadcast=True, hash=False)[0] if shared \
            else ()
        futures = [self._client.submit(_guarded, fn, common, args, pure=False)
                   for args in arguments]
        results: list[Any] = []
        for done, (future, args) in enumerate(zip(futures, arguments, strict=True), start=1):
            try:
                value = future.result()
            except KilledWorker as exc:
                value = Lost(f"every Dask worker that ran it died ({exc})")
            except (OSError, TimeoutError) as exc:  # the scheduler went away
                value = Lost(f"the Dask cluster stopped answering ({type(exc).__name__})")
            results.append(value)
            if progress is not None:
                progress(done, _label(args))
        return [_unwrap(value) for value in results]


def check_jobs(jobs: int) -> int:
    """Validate a number of jobs: 0 means one per CPU."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        msg = f"--jobs {jobs} must be >= 1 (or 0 for one process per CPU)"
        raise InvalidArgument(msg)
    return jobs or (os.cpu_count() or 1)


def executor_from_spec(spec: str, jobs: int = 1) -> Executor:
    """``local`` (a fork pool of ``jobs``), ``dask`` (a local cluster of ``jobs`` workers,
    at least 2) or ``dask:ADDRESS`` (the scheduler there, e.g. ``tcp://10.0.0.5:8786``)."""
    name, _, address = spec.partition(":")
    if name == "local" and not address:
        return LocalExecutor(jobs)
    if name == "dask":
        if spec.endswith(":") and not address:
            msg = "--executor dask: needs an ADDRESS after the colon (dask:tcp://HOST:PORT)"
            raise InvalidArgument(msg)
        return DaskExecutor(address or None, workers=max(check_jobs(jobs), 2))
    msg = (f"--executor {spec!r} is not an executor; give local, dask (a local cluster) or "
           "dask:ADDRESS (a running scheduler, tcp://HOST:PORT)")
    raise InvalidArgument(msg)


def current() -> Executor | None:
    """The executor set by the innermost :func:`using_executor`, or None (work stays serial)."""
    return _CURRENT.get()


@contextlib.contextmanager
def using_executor(executor: Executor | None) -> Iterator[Executor | None]:
    """Make ``executor`` the current one inside the block (None: serial)."""
    token = _CURRENT.set(executor)
    try:
        yield executor
    finally:
        _CURRENT.reset(token)
