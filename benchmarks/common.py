"""What every benchmark shares: one clock, and one line shape for a figure against its target.

The clock is CPU time: :func:`cpu_seconds` is ``time.process_time()`` (every
thread of this process) plus the CPU time of the child processes that have
ended and been waited for (``RUSAGE_CHILDREN``), so a section that forks
workers is counted whole.  Other load on a shared machine skews it much less
than wall time.  Every time and every ratio a benchmark prints comes from it.

Every figure is printed by :meth:`Figures.show` as one line::

    textbook V=8 prove: 11.90 CPU s (target <= 20 CPU s, issue 27) ok
    chain V=5 gamma=3 horizon=4, naive / engine: 3.07x (target >= 3.5x, see docstring) MISSED
    growth V=4: 0.41 CPU s (no target)

A target that is stated for another size than the one measured (``--quick``)
is printed with ``not judged at this size`` instead of ok or MISSED.  The
last line of a run counts the figures: ``N figures: A ok, B MISSED, ...``.
``tests/test_benchmarks_run.py`` runs every script with ``--quick`` and
checks that shape.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["CLOCK", "Figures", "Target", "add_quick", "at_least", "at_most", "best_of",
           "cpu_seconds", "cpu_timer", "equal_to", "timed", "wall_timer"]

CLOCK = ("Times are CPU s (this process's CPU time, time.process_time, plus its finished "
         "child processes'); every ratio is one of CPU s, measured in this run.")


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and its finished, waited-for children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class CpuTimer:
    """The CPU seconds spent inside a ``with cpu_timer() as t:`` block, in ``t.seconds``."""

    def __init__(self) -> None:
        self.start = cpu_seconds()
        self.seconds = 0.0


@contextmanager
def cpu_timer() -> Iterator[CpuTimer]:
    timer = CpuTimer()
    try:
        yield timer
    finally:
        timer.seconds = cpu_seconds() - timer.start


@contextmanager
def wall_timer() -> Iterator[CpuTimer]:
    """Wall-clock seconds inside the block, in ``t.seconds``: only for what parallel work
    saves (bench_parallel.py), always printed as "wall s" next to the CPU s it cost."""
    timer = CpuTimer()
    start = time.perf_counter()
    try:
        yield timer
    finally:
        timer.seconds = time.perf_counter() - start


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` and the CPU seconds it took."""
    with cpu_timer() as t:
        result = fn(*args, **kwargs)
    return result, t.seconds


def best_of(repeats: int, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """The smallest CPU time of ``repeats`` calls (the least disturbed by other load)."""
    return min(timed(fn, *args, **kwargs)[1] for _ in range(repeats))


@dataclass(frozen=True)
class Target:
    """``figure op value``, with where it comes from; ``judged=False`` when the run
    measured another size than the one the target is stated for."""

    op: str
    value: Any
    unit: str = ""
    source: str = ""
    judged: bool = True
    size: str = ""

    def elsewhere(self, size: str) -> Target:
        """This target, stated at ``size``, shown next to a figure measured at another size."""
        return replace(self, judged=False, size=size)

    def met(self, figure: Any) -> bool:
        if self.op == "<=":
            return bool(figure <= self.value)
        if self.op == ">=":
            return bool(figure >= self.value)
        return bool(figure == self.value)

    def text(self, default_unit: str = "") -> str:
        value = _number(self.value) if isinstance(self.value, float | int) else self.value
        unit = self.unit or default_unit
        unit = unit if unit in ("", "x") else f" {unit}"
        where = f" at {self.size}" if self.size else ""
        source = f", {self.source}" if self.source else ""
        op = "" if self.op == "==" else f"{self.op} "
        return f"target {op}{value}{unit}{where}{source}"


def at_most(value: float, unit: str = "", *, source: str = "", judged: bool = True,
            size: str = "") -> Target:
    return Target("<=", value, unit, source, judged, size)


def at_least(value: float, unit: str = "", *, source: str = "", judged: bool = True,
             size: str = "") -> Target:
    return Target(">=", value, unit, source, judged, size)


def equal_to(value: Any, *, source: str = "", judged: bool = True, size: str = "") -> Target:
    return Target("==", value, "", source, judged, size)


def _number(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def _format(value: Any, unit: str) -> str:
    if isinstance(value, bool) or not isinstance(value, float | int):
        return f"{value}{f' {unit}' if unit else ''}"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "CPU s":
        return f"{value:.2f} CPU s"
    text = f"{value}" if isinstance(value, int) else f"{value:.4g}"
    return f"{text} {unit}" if unit else text


class Figures:
    """Prints figures in the one line shape, and counts them for the closing line."""

    def __init__(self) -> None:
        self.counts = {"ok": 0, "MISSED": 0, "not judged at this size": 0, "no target": 0}

    def show(self, label: str, value: Any, unit: str = "CPU s",
             target: Target | None = None, note: str = "") -> bool | None:
        """Print one figure; returns whether it met its target (None when not judged)."""
        tail = f"; {note}" if note else ""
        if target is None:
            verdict, met = "", None
            self.counts["no target"] += 1
            text = f"(no target{tail})"
        else:
            if target.judged:
                met = target.met(value)
                verdict = " ok" if met else " MISSED"
                self.counts["ok" if met else "MISSED"] += 1
            else:
                met = None
                verdict = " not judged at this size"
                self.counts["not judged at this size"] += 1
            text = f"({target.text(unit)}{tail})"
        print(f"{label}: {_format(value, unit)} {text}{verdict}", flush=True)
        return met

    def close(self) -> None:
        total = sum(self.counts.values())
        parts = ", ".join(f"{n} {what}" for what, n in self.counts.items() if n)
        print(f"\n{total} figures: {parts}", flush=True)


def add_quick(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="every section once, at its smallest size (a few CPU s; "
                             "tests/test_benchmarks_run.py runs it)")
