"""``--jobs N`` and ``--executor``: where an audit's independent pieces run.

Without a target, ``specexact audit`` sweeps the catalogue: one task per rule
(its name and the seed travel, the worker re-imports the rule).  With one, the
search stays one search in this process, and ``--jobs``/``--executor`` split the
large levels of its decodes (:mod:`specexact.steps.levels`).  Either way the
results are folded in a fixed order, so the report is the same, byte for byte,
for any ``N`` and any executor.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

from specexact.executors import Executor, check_jobs, executor_from_spec, using_executor

__all__ = ["add_parallel_options", "catalogue_jobs", "check_jobs", "executor_of",
           "parallel_audit"]


def _nonnegative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        msg = f"{text!r} is not an integer"
        raise argparse.ArgumentTypeError(msg) from None
    if value < 0:
        msg = f"{value} must be >= 0"
        raise argparse.ArgumentTypeError(msg)
    return value


def add_parallel_options(parser: argparse.ArgumentParser) -> None:
    """``--jobs N`` and ``--executor local|dask|dask:ADDRESS``."""
    parser.add_argument(
        "--jobs", type=_nonnegative, default=None, metavar="N",
        help="worker processes (0 = one per CPU): the catalogue audit without TARGET runs "
             "one rule per task (default one per CPU up to 4); with a TARGET, the large "
             "levels of its decodes are split over them (default 1).  The report never "
             "depends on N")
    parser.add_argument(
        "--executor", default="local", metavar="local|dask|dask:ADDRESS",
        help="where the tasks run: local (a fork pool of --jobs processes, the default), "
             "dask (a local Dask cluster of --jobs workers, at least 2) or dask:ADDRESS "
             "(a running Dask scheduler, tcp://HOST:PORT; needs specexact[dask])")


def executor_of(args: argparse.Namespace, default_jobs: int) -> Executor:
    """The executor the options ask for (validated: a usage error names what is valid)."""
    jobs = args.jobs if args.jobs is not None else default_jobs
    return executor_from_spec(args.executor, check_jobs(jobs))


@contextlib.contextmanager
def parallel_audit(args: argparse.Namespace, default_jobs: int = 1) -> Iterator[Executor]:
    """The executor of the options, current for the block, closed after it."""
    executor = executor_of(args, default_jobs)
    try:
        with using_executor(executor):
            yield executor
    finally:
        executor.close()


def catalogue_jobs() -> int:
    """The catalogue sweep's default: one process per CPU, up to 4."""
    return min(os.cpu_count() or 1, 4)
