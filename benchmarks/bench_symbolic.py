"""Symbolic proofs over the whole simplex: cost against V, and the targets of issue 5.

Run ``python benchmarks/bench_symbolic.py`` (``--max-vocab 4`` for a quicker
run).  Prints, for each rule and vocabulary size, the verdict, the number of
cases, the LP calls, the executions and the time.  (There is no ratio to one
numeric check: that check takes under a millisecond, so the ratio was noise.)
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from counterexamples.samplers import naive_resample as naive_fallback
from counterexamples.samplers import residual, textbook
from verifier.modes.symbolic import prove


def textbook_ratio(p: list[Any], q: list[Any], rng: Any) -> Any:
    """The test written ``u < min(1, p[x] / q[x])``, the residual normalised."""
    x = rng.categorical(q)
    if rng.random() < min(1, p[x] / q[x]):
        return x
    r = residual(p, q)
    total = sum(r)
    return rng.categorical([w / total for w in r])


def uniform_reuse(p: list[Any], q: list[Any], rng: Any) -> Any:
    """One uniform for the test and the inverse-CDF fallback (FlashInfer #424)."""
    u = rng.random()
    x = rng.categorical(q)
    if u * q[x] < p[x]:
        return x
    r = residual(p, q)
    total = sum(r)
    cumulative: Any = 0
    last = 0
    for i, w in enumerate(r):
        if w:
            cumulative += w / total
            last = i
            if u < cumulative:
                return i
    return last


def _row(name: str, rule: Any, vocab_size: int) -> None:
    start = time.perf_counter()
    result = prove(rule, vocab_size)
    seconds = time.perf_counter() - start
    print(f"{name:16} V={vocab_size}  {result.status:8} cases={len(result.cases):3d} "
          f"biased={len(result.refuting):3d} undecided={len(result.undecided):2d} "
          f"LPs={result.lp_calls:5d} executions={result.executions:5d} "
          f"time={seconds:7.2f}s")
    if result.refuting and vocab_size <= 3:
        case = result.refuting[0]
        print("    first biased case:")
        print("\n".join("    " + line for line in case.describe().splitlines()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-vocab", type=int, default=5)
    args = parser.parse_args()
    print("textbook rule (u * q[x] < p[x]): case count against V")
    for v in range(2, args.max_vocab + 1):
        _row("textbook", textbook, v)
    print("textbook rule (u < min(1, p[x]/q[x])):")
    for v in range(2, min(args.max_vocab, 4) + 1):
        _row("textbook_ratio", textbook_ratio, v)
    print("naive fallback (resample from p):")
    for v in (2, 3):
        _row("naive_fallback", naive_fallback, v)
    print("one uniform reused for the test and the fallback (lossless at V=2):")
    for v in (2, 3):
        _row("uniform_reuse", uniform_reuse, v)


def step_proof_chain() -> None:
    """Issue 14: the chain rule, gamma = 2, V = 2, horizon 3, proved (time printed).

    ``python benchmarks/bench_symbolic.py --steps`` prints this line only.
    """
    from counterexamples.chain_steps import chain
    from verifier.modes.symbolic import prove_step

    start = time.perf_counter()
    result = prove_step(chain, 2, 3)  # gamma = 2 is chain's default
    seconds = time.perf_counter() - start
    print(f"chain gamma=2 V=2 horizon=3: {result.status} states={result.states} "
          f"cases={result.cases} regions={result.regions} LPs={result.lp_calls} "
          f"executions={result.executions} time={seconds:.2f}s")


if __name__ == "__main__":
    import sys

    if "--steps" in sys.argv:
        step_proof_chain()
    else:
        main()
        print("step proofs:")
        step_proof_chain()
