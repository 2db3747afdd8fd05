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

Issue 27 adds: the textbook rule's exact enumeration at V = 3000 in at
most 5 CPU s.  Every time is CPU s (common.py).

Run: python benchmarks/bench_engine.py [--quick]
"""

from __future__ import annotations

import argparse
import random
from fractions import Fraction
from typing import Any

from common import CLOCK, Figures, add_quick, at_most, best_of

from specexact import Budget, SeededRandom, output_distribution
from specexact.counterexamples import get

textbook = get("textbook").rule


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


def reference(p: list[Fraction], q: list[Fraction]) -> None:
    """2V plain calls with the exact seeded source."""
    for seed in range(2 * len(p)):
        textbook(list(p), list(q), SeededRandom(seed))


def lean_reference(p: list[Fraction], q: list[Fraction]) -> None:
    """1.5V plain calls with a float-driven source."""
    for seed in range(3 * len(p) // 2):
        textbook(list(p), list(q), FloatRandom(seed))


def exact(sampler: Any, p: list[Fraction], q: list[Fraction]) -> None:
    law = output_distribution(sampler, p, q, budget=Budget())
    assert law == p, "the textbook rule must preserve p"


# Targets by V: (exact / reference, exact / lean reference).
RATIO_TARGETS = {200: (at_most(2, source="issue 2"), None),
                 1000: (at_most(0.35, source="issue 10"), at_most(1.0, source="issue 10"))}
LARGE_V, LARGE_TARGET = 3000, at_most(5, source="issue 27")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick(parser)
    args = parser.parse_args()
    figures = Figures()
    print(CLOCK)
    sizes = (10, 50) if args.quick else (10, 50, 200, 1000)
    print("textbook rule, single position: exact enumeration against plain calls")
    for v in sizes:
        p, q = random_pair(v, v)
        repeats = 3 if v <= 200 else 1
        ref = best_of(repeats, reference, p, q)
        lean = best_of(repeats, lean_reference, p, q)
        ex = best_of(repeats, exact, textbook, p, q)
        ref_target, lean_target = RATIO_TARGETS.get(v, (None, None))
        if args.quick:
            ref_target = RATIO_TARGETS[200][0].elsewhere("V = 200")
            lean_target = RATIO_TARGETS[1000][1].elsewhere("V = 1000")
        figures.show(f"V={v} exact / reference (2V seeded calls)", ex / ref, "x", ref_target,
                     f"exact {ex:.4f} CPU s, reference {ref:.4f} CPU s")
        figures.show(f"V={v} exact / lean reference (1.5V float calls)", ex / lean, "x",
                     lean_target, f"lean reference {lean:.4f} CPU s")

    v = 200 if args.quick else LARGE_V
    p, q = random_pair(v, v)
    target = LARGE_TARGET if v == LARGE_V else LARGE_TARGET.elsewhere(f"V = {LARGE_V}")
    figures.show(f"V={v} exact enumeration", best_of(1, exact, textbook, p, q), "CPU s", target)

    v = 10 if args.quick else 200
    p, q = random_pair(v, v)
    ref = best_of(3, reference, p, q)
    eager = best_of(1, exact, naive_eager, p, q)
    figures.show(f"V={v} naive enumerator without lazy draws / reference", eager / ref, "x",
                 note="for comparison; issue 2 measured 88x at V = 200")
    figures.close()


if __name__ == "__main__":
    main()
