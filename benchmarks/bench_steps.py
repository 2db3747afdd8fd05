"""Exact multi-step decoding: the engine against the naive baseline, as ratios in one run.

The step is Leviathan's chain rule on random context-dependent models.

What the ratio compares.  The baseline (``naive_steps.py``, issue 3's "naive
replay enumerator memoised per prefix but without lazy draws") composes
per-prefix step laws the same way, but its random source branches on every
categorical draw as soon as it is made, and it enumerates each prefix's step
law by replaying the step once per leaf.  The engine
(``decode_distribution``) keeps returned tokens lazy, defers model rows
whose prefix holds a token nobody has looked at yet, and cuts outputs to the
horizon before folding.  Both laws are checked equal before a ratio is
printed; the baseline gets fresh models (cold row caches), so it pays for
every row it asks, as the engine did.  The ratio is naive CPU s / engine
CPU s; it is printed with its two factors: how many fewer step runs the
engine makes (a count, the same on every machine) and what one run costs.

Why it is 3x and not the 8x of issue 3.  The baseline subclasses the
engine's random source (``ExactRandom``) and overrides only ``categorical``.
When issue 3 set the target, the engine decoded with its own faster source
(``StepRandom``) and the baseline with the plain one; commit 2a0b987 (issue
10) merged StepRandom's fast paths into ExactRandom, so the baseline got them
too.  Measured here at V = 5, gamma = 3, horizon 4 on the commits before and
after: the baseline fell from 12.7 to 5.6 CPU s while the engine stayed at
1.8-1.9 CPU s, and the ratio from 6.9x to 3.0x.  The engine did not get
slower: the baseline got the same random source, which is what
``naive_steps.py`` always said it measures ("the only difference ... is
laziness and the engine's bookkeeping").  The ratio now isolates that: 4.9x
fewer step runs, each costing about 1.6x an eager run (deferred rows and
their settlement, lazy tokens).  The target is issue 3's 8x scaled by the
baseline's measured 2.27x speed-up: **>= 3.5x** at V = 5 and V = 8, gamma = 3,
horizon 4; met when the engine's bookkeeping per run costs at most about
1.4x an eager run.

The memory figure is the growth of the peak RSS of a fresh subprocess over
one decode, divided by its step runs (issue 10: at most 300 bytes per run, so
V = 8, gamma = 4, horizon 5, about 14.5M runs, fits in a few GiB).

Run from the repository root::

    python benchmarks/bench_steps.py            # V = 5 headline, memory, growth (1 CPU min)
    python benchmarks/bench_steps.py --large    # adds V = 8 (about 3 CPU min) and
                                                # the memory figure at horizon 4 (about 5)
    python benchmarks/bench_steps.py --quick    # each section at its smallest size
    python benchmarks/bench_steps.py --memory 8 4 4   # only the memory figure
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from common import CLOCK, Figures, add_quick, at_least, at_most, cpu_timer
from naive_steps import naive_decode_distribution

from specexact import Budget, RecordingModel, decode_distribution, random_model_pair
from specexact.counterexamples import get

NO_LIMIT = Budget(max_seconds=None, max_executions=10**9)
RATIO_TARGET = 3.5  # issue 3's 8x over the baseline's 2.27x speed-up (see the docstring)
BYTES_PER_RUN = 300  # issue 10


def _counted(step: Callable[..., Any]) -> tuple[Callable[..., Any], list[int]]:
    calls = [0]

    def wrapped(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        calls[0] += 1
        return step(target, draft, prefix, rng)

    return wrapped, calls


def chain(gamma: int) -> Callable[..., Any]:
    """Leviathan's chain rule with ``gamma`` drafts and the bonus token (the catalogue's)."""
    rule: Callable[..., Any] = get(f"chain-gamma{gamma}").rule
    return rule


def measure(vocab: int, gamma: int, horizon: int, *, naive: bool, seed: int = 0
            ) -> dict[str, Any]:
    target, draft = random_model_pair(vocab, seed)
    step, calls = _counted(chain(gamma))
    with cpu_timer() as t:
        law = decode_distribution(step, target, draft, horizon, budget=NO_LIMIT)
    out: dict[str, Any] = {"exact_s": t.seconds, "exact_runs": calls[0]}
    if naive:
        step, calls = _counted(chain(gamma))
        cold_target, cold_draft = random_model_pair(vocab, seed)  # no rows computed yet
        with cpu_timer() as t:
            base = naive_decode_distribution(step, RecordingModel(cold_target),
                                             RecordingModel(cold_draft), horizon, NO_LIMIT)
        out["naive_s"] = t.seconds
        out["naive_runs"] = calls[0]
        if base != dict(law):
            raise SystemExit(f"laws differ at V={vocab} gamma={gamma} horizon={horizon}")
        out["ratio"] = out["naive_s"] / out["exact_s"]
    return out


def _memory_child(vocab: int, gamma: int, horizon: int) -> None:
    """In a fresh process: peak RSS growth over one decode, per step run (printed as JSON)."""
    target, draft = random_model_pair(vocab, 0)
    step, calls = _counted(chain(gamma))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with cpu_timer() as t:
        decode_distribution(step, target, draft, horizon, budget=NO_LIMIT)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux
    print(json.dumps({"runs": calls[0], "growth_kib": after - before, "seconds": t.seconds}))


def measure_memory(vocab: int, gamma: int, horizon: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(vocab), str(gamma),
                          str(horizon)], check=True, capture_output=True, text=True)
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    figures["bytes_per_run"] = figures["growth_kib"] * 1024 / figures["runs"]
    return figures


def memory_figures(figures: Figures, vocab: int, gamma: int, horizon: int, *,
                   judged: bool = True) -> None:
    m = measure_memory(vocab, gamma, horizon)
    label = f"V={vocab} gamma={gamma} horizon={horizon}"
    figures.show(f"{label} decode", m["seconds"], "CPU s",
                 note=f"{m['runs']} step runs, in a fresh process")
    target = at_most(BYTES_PER_RUN, source="issue 10")
    figures.show(f"{label} peak RSS growth per step run", m["bytes_per_run"], "bytes",
                 target if judged else target.elsewhere("horizon >= 3"),
                 f"{m['growth_kib'] / 1024:.1f} MiB over {m['runs']} runs")


def headline(figures: Figures, vocab: int, gamma: int, horizon: int, *, judged: bool) -> None:
    m = measure(vocab, gamma, horizon, naive=True)
    label = f"V={vocab} gamma={gamma} horizon={horizon}"
    figures.show(f"{label} engine", m["exact_s"], note=f"{m['exact_runs']} step runs")
    figures.show(f"{label} naive baseline", m["naive_s"], note=f"{m['naive_runs']} step runs")
    figures.show(f"{label} naive / engine", m["ratio"], "x",
                 at_least(RATIO_TARGET, source="issue 3's 8x, rescaled: see the docstring",
                          judged=judged, size="" if judged else "V = 5 and 8, horizon 4"))
    runs = m["naive_runs"] / m["exact_runs"]
    per_run = (m["exact_s"] / m["exact_runs"]) / (m["naive_s"] / m["naive_runs"])
    figures.show(f"  {label} step runs, naive / engine", runs, "x",
                 note="a count: what laziness saves")
    figures.show(f"  {label} CPU per step run, engine / naive", per_run, "x",
                 note="what the engine's bookkeeping costs")


def growth(figures: Figures, quick: bool) -> None:
    """How the cost grows with V, gamma and the horizon (issue 3 asks for the tables)."""
    def row(label: str, m: dict[str, Any]) -> None:
        note = f"{m['exact_runs']} step runs"
        if "ratio" in m:
            note += (f"; naive {m['naive_s']:.2f} CPU s, {m['naive_runs']} runs, "
                     f"ratio {m['ratio']:.2f}x")
        figures.show(label, m["exact_s"], note=note)

    print("\nGrowth with the vocabulary (gamma=3, horizon=3)")
    for vocab in (2, 3) if quick else (2, 3, 4, 5, 6):
        row(f"V={vocab}", measure(vocab, 3, 3, naive=vocab <= 5))
    print("\nGrowth with gamma (V=3, horizon=3)")
    for gamma in (1, 2) if quick else (1, 2, 3, 4):
        row(f"gamma={gamma}", measure(3, gamma, 3, naive=True))
    print("\nGrowth with the horizon (V=3, gamma=2)")
    for horizon in (1, 2) if quick else (1, 2, 3, 4, 5):
        row(f"horizon={horizon}", measure(3, 2, horizon, naive=horizon <= 4))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick(parser)
    parser.add_argument("--large", action="store_true",
                        help="add the V = 8 comparison and the horizon-4 memory figure "
                             "(about 8 CPU min more)")
    parser.add_argument("--memory", nargs=3, type=int, metavar=("V", "GAMMA", "HORIZON"),
                        help="only print the memory figure of one case")
    parser.add_argument("--memory-child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        _memory_child(*args.memory_child)
        return
    figures = Figures()
    print(CLOCK)
    if args.memory:
        memory_figures(figures, *args.memory)
        figures.close()
        return

    print("Headline: chain rule, random context-dependent models, naive baseline / engine.\n"
          "The baseline (naive_steps.py) is eager replay memoised per prefix on the engine's own\n"
          "random source, so the ratio measures laziness and the engine's bookkeeping alone.\n"
          "Issue 3's 8x was set when the baseline had a slower source (2.27x slower at V = 5);\n"
          f"rescaled, the target is {RATIO_TARGET}x (the docstring has the measurements).")
    if args.quick:
        headline(figures, 4, 3, 3, judged=False)
    else:
        headline(figures, 5, 3, 4, judged=True)
        if args.large:
            headline(figures, 8, 3, 4, judged=True)

    # Horizon 2 (27k runs) fits in memory the interpreter already holds: its growth is
    # 0 bytes, so the target is judged from horizon 3 (246k runs) on.
    print("\nMemory: peak RSS growth per step run (V = 8, gamma = 4)")
    if args.quick:
        memory_figures(figures, 8, 4, 2, judged=False)
    for horizon in () if args.quick else (3, 4) if args.large else (3,):
        memory_figures(figures, 8, 4, horizon)

    growth(figures, args.quick)
    figures.close()


if __name__ == "__main__":
    main()
