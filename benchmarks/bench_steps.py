"""Exact multi-step decoding: the engine against the naive baseline, as ratios in one run.

The step is Leviathan's chain rule on random context-dependent models.  The
baseline (``naive_steps.py``) composes per-prefix step laws the same way
but branches on every categorical draw as soon as it is made; the engine
keeps returned tokens lazy, defers model rows whose prefix holds a token
nobody has looked at yet, cuts outputs to the horizon before folding, and
hands the step a random source with cheaper hot paths.  Both laws are
checked equal before a ratio is printed.  Times are CPU seconds of this
process (``time.process_time``), which other load on the machine skews
less than wall time; "runs" counts calls of the step.  Run from the
repository root:

    python benchmarks/bench_steps.py            # headline figures and growth tables
    python benchmarks/bench_steps.py --quick    # skip the V = 8 comparison (minutes)
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from naive_steps import naive_decode_distribution

from counterexamples.chain_steps import chain
from verifier import Budget, RecordingModel, decode_distribution, random_model_pair

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
        start = time.process_time()
        base = naive_decode_distribution(step, RecordingModel(target), RecordingModel(draft),
                                         horizon, NO_LIMIT)
        out["naive_s"] = time.process_time() - start
        out["naive_runs"] = calls[0]
        if base != dict(law):
            raise SystemExit(f"laws differ at V={vocab} gamma={gamma} horizon={horizon}")
        out["ratio"] = out["naive_s"] / out["exact_s"]
    return out


def _row(label: str, m: dict[str, Any]) -> str:
    text = f"{label:<28} exact {m['exact_s']:8.2f} s ({m['exact_runs']:>8} step runs)"
    if "naive_s" in m:
        text += (f"   naive {m['naive_s']:8.2f} s ({m['naive_runs']:>8} runs)"
                 f"   ratio {m['ratio']:5.1f}x (runs {m['naive_runs'] / m['exact_runs']:4.1f}x)")
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the V = 8 comparison")
    args = parser.parse_args(argv)

    print("Headline: chain rule, random context-dependent models (target >= 8x)")
    print(_row("V=5 gamma=3 horizon=4", measure(5, 3, 4, naive=True)))
    if not args.quick:
        print(_row("V=8 gamma=3 horizon=4", measure(8, 3, 4, naive=True)), flush=True)

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
