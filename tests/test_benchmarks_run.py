"""Every script in benchmarks/ runs to its end, on one clock, with a target beside every figure.

Each script is run with ``--quick`` (every section once, at its smallest
size) in a subprocess.  Timings are not asserted here: the figures and their
targets are the scripts' business (``benchmarks/common.py``); this only keeps
them runnable and in the one line shape.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
#: Scripts are the files with a ``__main__`` block; the rest (common.py, the naive
#: baseline) are modules they import.
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if "__main__" in p.read_text())

FIGURE = re.compile(r": .* \((target |no target)")
CLOSING = re.compile(r"^(\d+) figures: ")
TIME = re.compile(r"\d CPU s\b")
OTHER_CLOCKS = ("perf_counter", "time.time(", "monotonic", ".elapsed")


def test_scripts_are_found() -> None:
    names = {p.name for p in SCRIPTS}
    assert {"bench_engine.py", "bench_steps.py", "bench_symbolic.py"} <= names
    assert "common.py" not in names


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_one_clock(path: Path) -> None:
    source = path.read_text()
    if path.name != "common.py":
        for clock in OTHER_CLOCKS:
            assert clock not in source, f"{path.name} reads {clock!r}: time with common.py"
    if path in SCRIPTS:
        assert "from common import" in source
        assert "--quick" in source or "add_quick" in source


@pytest.mark.slow
@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_script_runs_quick(path: Path) -> None:
    done = subprocess.run([sys.executable, str(path), "--quick"], cwd=BENCHMARKS.parent,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    figures = [line for line in lines if FIGURE.search(line)]
    closing = [m for m in map(CLOSING.match, lines) if m]
    assert len(closing) == 1, done.stdout[-3000:]
    assert int(closing[0].group(1)) == len(figures) >= 1, done.stdout[-3000:]
    for line in lines:
        if TIME.search(line):
            assert FIGURE.search(line), f"a time without its target: {line!r}"
