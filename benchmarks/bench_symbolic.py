"""Symbolic proofs over the whole simplex: cost against V, and the targets of issue 5.

Run ``python benchmarks/bench_symbolic.py`` (``--max-vocab 4 --textbook-vocab
6`` for a quicker run).  Prints, for each rule and vocabulary size, the
verdict, the number of cases, the LP calls, the executions and the time: the
textbook rule for V = 2..10 (target: V = 8 under 60 s), the LP backend
against pure Fractions at one size, and the multi-draft rules at V = 3
(proved only with the product certificates of nonlinear.py).  (There is no ratio to one
numeric check: that check takes under a millisecond, so the ratio was noise.)
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from specexact.counterexamples import multidraft
from specexact.counterexamples.samplers import naive_resample as naive_fallback
from specexact.counterexamples.samplers import residual, textbook
from specexact.symbolic import prove
from specexact.symbolic.lp import backend, fraction_only, solve_lp


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


def _backends(vocab_size: int) -> None:
    """The LPs of one textbook proof, replayed on the installed backend and on Fractions."""
    from unittest import mock

    import specexact.symbolic.region as region

    recorded: list[tuple[Any, ...]] = []
    original = solve_lp

    def recording(*args: Any) -> Any:
        recorded.append(args)
        return original(*args)

    with mock.patch.object(region, "solve_lp", recording):
        prove(textbook, vocab_size)
    times = {}
    for name in (backend(), "fractions.Fraction"):
        start = time.perf_counter()
        if name == "fractions.Fraction":
            with fraction_only():
                answers = [original(*args) for args in recorded]
        else:
            answers = [original(*args) for args in recorded]
        times[name] = time.perf_counter() - start
        if name == backend():
            first = answers
        elif answers != first:
            raise AssertionError("the two backends disagree")  # never: both are exact
    slow, fast = times["fractions.Fraction"], times[backend()]
    print(f"textbook V={vocab_size}: its {len(recorded)} LPs replayed: {backend()} {fast:.2f}s, "
          f"pure Fraction {slow:.2f}s (ratio {slow / fast:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-vocab", type=int, default=5)
    parser.add_argument("--textbook-vocab", type=int, default=10,
                        help="largest V for the textbook rule (default 10)")
    args = parser.parse_args()
    print(f"LP backend: {backend()}")
    print("textbook rule (u * q[x] < p[x]): case count against V (target: V=8 under 60 s)")
    for v in range(2, args.textbook_vocab + 1):
        _row("textbook", textbook, v)
    _backends(4)
    print("multi-draft rules at V=3 (nonlinear regions proved empty by product certificates):")
    for name in ("multiround", "rrs_without_replacement", "spectr"):
        _row(name, getattr(multidraft, name), 3)
    print("textbook rule (u < min(1, p[x]/q[x])):")
    for v in range(2, min(args.max_vocab, 4) + 1):
        _row("textbook_ratio", textbook_ratio, v)
    print("naive fallback (resample from p):")
    for v in (2, 3):
        _row("naive_fallback", naive_fallback, v)
    print("one uniform reused for the test and the fallback (lossless at V=2):")
    for v in (2, 3):
        _row("uniform_reuse", uniform_reuse, v)


def _step_row(label: str, name: str, vocab_size: int, horizon: int,
              merge: bool = True) -> float:
    from specexact.counterexamples.steps import get_step_rule
    from specexact.symbolic import prove_step

    start = time.perf_counter()
    result = prove_step(get_step_rule(name).rule, vocab_size, horizon, merge_subtrees=merge)
    seconds = time.perf_counter() - start
    print(f"{label:34} {result.status} states={result.states} cases={result.cases} "
          f"regions={result.regions} LPs={result.lp_calls} executions={result.executions} "
          f"time={seconds:.2f}s")
    return seconds


def step_proof_chain(large: bool = False) -> None:
    """Issue 14: step proofs.  The chain rule, gamma = 2, V = 2, horizon 3, proved;
    the subtree merge (paths past the horizon compared as one) against no merge, in
    one run; with ``large``, the targets at V = 3 (a few minutes).

    ``python benchmarks/bench_symbolic.py --steps`` prints these lines only
    (``--steps-large`` adds V = 3).
    """
    _step_row("chain gamma=2 V=2 horizon=3:", "chain-gamma2", 2, 3)
    merged = _step_row("chain gamma=3 V=2 horizon=3 merged:", "chain-gamma3", 2, 3)
    unmerged = _step_row("  the same without the merge:", "chain-gamma3", 2, 3, merge=False)
    print(f"  merge speed-up: {unmerged / merged:.1f}x")
    if large:
        _step_row("chain gamma=2 V=3 horizon=2:", "chain-gamma2", 3, 2)
        _step_row("chain gamma=3 V=3 horizon=2:", "chain-gamma3", 3, 2)
        _step_row("block-no-ptau V=3 horizon=2:", "block-no-ptau", 3, 2)


if __name__ == "__main__":
    import sys

    if "--steps" in sys.argv or "--steps-large" in sys.argv:
        step_proof_chain(large="--steps-large" in sys.argv)
    else:
        main()
        print("step proofs:")
        step_proof_chain()
