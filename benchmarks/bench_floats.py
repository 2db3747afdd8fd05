"""Float mode: how much of its stated tolerance correct float code uses, and what it costs.

Run:  python benchmarks/bench_floats.py [--cases N]

For random exact (p, q) (vocabularies 2 to 16, seeded), correct float
implementations of the textbook rule are checked with ``check_floats``; the
script prints the largest rounding TV as a fraction of the stated tolerance
(it must stay below 1; the margin shows the tolerance is not loose by orders
of magnitude more than needed), and the time of ``check_floats`` relative to
one exact ``check_sampler`` run on the same cases.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specexact import check_floats, check_sampler


def textbook(p: Any, q: Any, rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.categorical([max(a - b, 0.0) for a, b in zip(p, q, strict=True)])


def np_vectorised(p: Any, q: Any, rng: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.minimum(1.0, p / q)
        r = np.maximum(p - q, 0.0)
        r = r / r.sum()
    x = rng.categorical(q)
    if rng.random() < ratio[x]:
        return x
    return rng.categorical(r)


def np_cdf_walk(p: Any, q: Any, rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    r = np.maximum(p - q, 0.0)
    c = np.cumsum(r) / r.sum()
    u = rng.random()
    for i, ci in enumerate(c):
        if u < ci:
            return i
    return int(np.flatnonzero(r)[-1])


VARIANTS = [
    ("python float64", textbook, {"fmt": "float64"}),
    ("numpy float64", np_vectorised, {"fmt": "float64", "arrays": True}),
    ("numpy float32", np_vectorised, {"fmt": "float32", "arrays": True}),
    ("numpy float32 cdf walk", np_cdf_walk, {"fmt": "float32", "arrays": True}),
]


def random_case(gen: random.Random) -> tuple[list[Fraction], list[Fraction]]:
    size = gen.randint(2, 16)
    while True:
        p = [gen.choice((0, 1, 2, 3, 7, 10, 13)) for _ in range(size)]
        q = [gen.choice((0, 1, 2, 3, 7, 10, 13)) for _ in range(size)]
        if sum(p) and sum(q):
            return ([Fraction(w, sum(p)) for w in p], [Fraction(w, sum(q)) for w in q])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60)
    args = parser.parse_args()
    gen = random.Random(7)
    cases = [random_case(gen) for _ in range(args.cases)]
    start = time.perf_counter()
    for p, q in cases:
        check_sampler(textbook, p, q)
    baseline = time.perf_counter() - start
    print(f"{len(cases)} random cases, V = 2..16; baseline: exact check_sampler "
          f"{baseline:.2f} s")
    print(f"{'variant':<24} {'grid':>5} {'max rounding/tol':>17} {'failures':>9} "
          f"{'time/baseline':>14}")
    for name, fn, kwargs in VARIANTS:
        for bits in (None, 24):
            worst = 0.0
            failures = 0
            start = time.perf_counter()
            for p, q in cases:
                verdict = check_floats(fn, p, q, uniform_bits=bits, **kwargs)
                failures += not verdict.passed
                if verdict.tolerance:
                    worst = max(worst, float(verdict.rounding_tv / verdict.tolerance))
            spent = time.perf_counter() - start
            print(f"{name:<24} {bits or '-':>5} {worst:>17.4f} {failures:>9} "
                  f"{spent / baseline:>14.1f}")


if __name__ == "__main__":
    main()
