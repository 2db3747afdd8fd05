"""Exact multi-step decoding: the engine against the naive baseline, as ratios in one run.

The step is Leviathan's chain rule on random context-dependent models.  The
baseline (``naive_steps.py``) composes per-prefix step laws the same way
but branches on every categorical draw as soon as it is made; the engine
keeps returned tokens lazy, defers model rows whose prefix holds a token
nobody has looked at yet, cuts outputs to the horizon before folding, and
hands the step a random source with cheaper hot paths.  Both laws are
checked equal before a ratio is printed; the baseline gets fresh models
(cold row caches), so it pays for every row it asks, as the engine did.
Times are CPU seconds of this process (``time.process_time``), which other
load on the machine skews less than wall time; "runs" counts calls of the
step.  The memory figure is the growth of the peak RSS of a fresh
subprocess over one decode, divided by its step runs (target: at most
0.3 KB per run, so V = 8, gamma = 4, horizon 5, about 14.5M runs, fits in
a few GiB).  Run from the repository root:

    python benchmarks/bench_steps.py            # headline figures and growth tables
    python benchmarks/bench_steps.py --quick    # skip the V = 8 comparison (minutes)
    python benchmarks/bench_steps.py --memory 8 4 4   # only the memory figure
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from naive_steps import naive_decode_distribution

from specexact import Budget, RecordingModel, decode_distribution, random_model_pair
from specexact.counterexamples.chain_steps import chain

NO_LIMIT = Budget(max_seconds=None, max_executions=10**9)


def _counted(step: Callable[..., Any]) -> tuple[Callable[..., Any], list[int]]:
    calls = [0]

    def wrapped(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        calls[0] += 1
        return step(target, draft, prefix, rng)

    return wrapped, calls


def measure(vocab: int, gamma: int, horizon: int, *, naive: bool, seed: int = 0
            ) -> dict[str, Any]:
    target, draft = random_model_pair(vocab, seed)
    step, calls = _counted(functools.partial(chain, gamma=gamma))
    start = time.process_time()
    law = decode_distribution(step, target, draft, horizon, budget=NO_LIMIT)
    out: dict[str, Any] = {"exact_s": time.process_time() - start, "exact_runs": calls[0]}
    if naive:
        step, calls = _counted(functools.partial(chain, gamma=gamma))
        cold_target, cold_draft = random_model_pair(vocab, seed)  # no rows computed yet
        start = time.process_time()
        base = naive_decode_distribution(step, RecordingModel(cold_target),
                                         RecordingModel(cold_draft), horizon, NO_LIMIT)
        out["naive_s"] = time.process_time() - start
        out["naive_runs"] = calls[0]
        if base != dict(law):
            raise SystemExit(f"laws differ at V={vocab} gamma={gamma} horizon={horizon}")
        out["ratio"] = out["naive_s"] / out["exact_s"]
    return out


def _memory_child(vocab: int, gamma: int, horizon: int) -> None:
    """In a fresh process: peak RSS growth over one decode, per step run (printed as JSON)."""
    target, draft = random_model_pair(vocab, 0)
    step, calls = _counted(functools.partial(chain, gamma=gamma))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    decode_distribution(step, target, draft, horizon, budget=NO_LIMIT)
    seconds = time.process_time() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux
    print(json.dumps({"runs": calls[0], "growth_kib": after - before, "seconds": seconds}))


def measure_memory(vocab: int, gamma: int, horizon: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(vocab), str(gamma),
                          str(horizon)], check=True, capture_output=True, text=True)
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    figures["kib_per_run"] = figures["growth_kib"] / figures["runs"]
    return figures


def _memory_row(vocab: int, gamma: int, horizon: int) -> str:
    m = measure_memory(vocab, gamma, horizon)
    return (f"V={vocab} gamma={gamma} horizon={horizon}: {m['runs']:>9} step runs, "
            f"{m['seconds']:7.1f} s, peak RSS growth {m['growth_kib'] / 1024:8.1f} MiB, "
            f"{m['kib_per_run'] * 1024:6.0f} bytes per run (target <= 300)")


def _row(label: str, m: dict[str, Any]) -> str:
    text = f"{label:<28} exact {m['exact_s']:8.2f} s ({m['exact_runs']:>8} step runs)"
    if "naive_s" in m:
        text += (f"   naive {m['naive_s']:8.2f} s ({m['naive_runs']:>8} runs)"
                 f"   ratio {m['ratio']:5.1f}x (runs {m['naive_runs'] / m['exact_runs']:4.1f}x)")
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the V = 8 comparison")
    parser.add_argument("--memory", nargs=3, type=int, metavar=("V", "GAMMA", "HORIZON"),
                        help="only print the memory figure of one case")
    parser.add_argument("--memory-child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        _memory_child(*args.memory_child)
        return
    if args.memory:
        print(_memory_row(*args.memory))
        return

    print("Headline: chain rule, random context-dependent models (target >= 8x)")
    print(_row("V=5 gamma=3 horizon=4", measure(5, 3, 4, naive=True)))
    if not args.quick:
        print(_row("V=8 gamma=3 horizon=4", measure(8, 3, 4, naive=True)), flush=True)

    print("\nMemory: peak RSS growth per step run (V = 8, gamma = 4)")
    for horizon in (2, 3) if args.quick else (2, 3, 4):
        print(_memory_row(8, 4, horizon), flush=True)

    print("\nGrowth with the vocabulary (gamma=3, horizon=3)")
    for vocab in (2, 3, 4, 5, 6):
        print(_row(f"V={vocab}", measure(vocab, 3, 3, naive=vocab <= 5)), flush=True)
    print("\nGrowth with gamma (V=3, horizon=3)")
    for gamma in (1, 2, 3, 4):
        print(_row(f"gamma={gamma}", measure(3, gamma, 3, naive=True)), flush=True)
    print("\nGrowth with the horizon (V=3, gamma=2)")
    for horizon in (1, 2, 3, 4, 5):
        print(_row(f"horizon={horizon}", measure(3, 2, horizon, naive=horizon <= 4)),
              flush=True)


if __name__ == "__main__":
    main()
