"""Exact enumeration cost vs plain sampling, as ratios measured in one run.

Two baselines:

* the *reference*: 2V plain calls of the same sampler with
  :class:`SeededRandom` (exact draws, which validate and sum the weights as
  Fractions).  Targets: the textbook rule's exact enumeration costs at most
  2x that at V = 200, and at most 0.35x at V = 1000;
* the *lean reference*: 1.5V plain calls (the textbook rule's choice tree
  has about 1.5V leaves: V draft tokens, half of them with a rejection
  branch) with a float-driven random source that does no Fraction
  arithmetic, so what is left is the sampler's own work.  Target: at most
  1.0x at V = 1000.

For comparison we also time a naive replay enumerator that branches every
categorical draw eagerly (no lazy tokens).

Run: python benchmarks/bench_engine.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specexact import Budget, SeededRandom, output_distribution
from specexact.counterexamples.samplers import textbook


class _Eager:
    """Wraps the exact source so every categorical draw branches at once."""

    def __init__(self, rng: Any) -> None:
        self._rng = rng

    def random(self) -> Any:
        return self._rng.random()

    def categorical(self, weights: Any) -> int:
        return int(self._rng.categorical(weights))

    def bernoulli(self, prob: Any) -> bool:
        return bool(self._rng.bernoulli(prob))


def naive_eager(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    return textbook(p, q, _Eager(rng))


def random_pair(v: int, seed: int) -> tuple[list[Fraction], list[Fraction]]:
    r = random.Random(seed)

    def one() -> list[Fraction]:
        w = [r.randint(1, 50) for _ in range(v)]
        t = sum(w)
        return [Fraction(x, t) for x in w]

    return one(), one()


class FloatRandom:
    """Plain draws driven by floats: weights are read as floats, never added as Fractions."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def random(self) -> float:
        return self._random.random()

    def categorical(self, weights: Any) -> int:
        return self._random.choices(range(len(weights)), [float(w) for w in weights])[0]

    def bernoulli(self, prob: Any) -> bool:
        return self._random.random() < float(prob)


def reference_seconds(p: list[Fraction], q: list[Fraction]) -> float:
    start = time.perf_counter()
    for seed in range(2 * len(p)):
        textbook(list(p), list(q), SeededRandom(seed))
    return time.perf_counter() - start


def lean_reference_seconds(p: list[Fraction], q: list[Fraction]) -> float:
    start = time.perf_counter()
    for seed in range(3 * len(p) // 2):
        textbook(list(p), list(q), FloatRandom(seed))
    return time.perf_counter() - start


def exact_seconds(sampler: Any, p: list[Fraction], q: list[Fraction]) -> float:
    start = time.perf_counter()
    law = output_distribution(sampler, p, q, budget=Budget())
    elapsed = time.perf_counter() - start
    assert law == p, "the textbook rule must preserve p"
    return elapsed


def best_of(n: int, fn: Any, *args: Any) -> float:
    return min(fn(*args) for _ in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip V = 1000 and the naive run")
    args = parser.parse_args()
    sizes = (10, 50, 200) if args.quick else (10, 50, 200, 1000)
    print(f"{'V':>5} {'reference 2V calls':>19} {'lean 1.5V calls':>16} {'exact':>9} "
          f"{'/ reference':>12} {'/ lean':>7}")
    ratios: dict[int, tuple[float, float]] = {}
    for v in sizes:
        p, q = random_pair(v, v)
        repeats = 3 if v <= 200 else 1
        ref = best_of(repeats, reference_seconds, p, q)
        lean = best_of(repeats, lean_reference_seconds, p, q)
        exact = best_of(repeats, exact_seconds, textbook, p, q)
        ratios[v] = exact / ref, exact / lean
        print(f"{v:>5} {ref:>18.4f}s {lean:>15.4f}s {exact:>8.4f}s "
              f"{exact / ref:>11.2f}x {exact / lean:>6.2f}x", flush=True)
    print(f"\nTarget (V = 200): exact <= 2x reference; measured {ratios[200][0]:.2f}x")
    if 1000 in ratios:
        print(f"Target (V = 1000): exact <= 0.35x reference, <= 1.0x lean reference; "
              f"measured {ratios[1000][0]:.2f}x and {ratios[1000][1]:.2f}x")
    if not args.quick:
        p, q = random_pair(200, 200)
        ref = best_of(3, reference_seconds, p, q)
        eager = exact_seconds(naive_eager, p, q)
        print(f"Naive enumerator without lazy draws (V = 200): {eager / ref:.1f}x reference")


if __name__ == "__main__":
    main()
