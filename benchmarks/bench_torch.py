"""Exact mode for torch code: cost against the same rule written against ``rng``.

1. The textbook rule in torch (multinomial draft, ``torch.rand`` test,
   multinomial residual), one position, V = 50, continuous uniform: exact
   enumeration time divided by the enumeration time of
   ``specexact.counterexamples.samplers.textbook`` on the same (p, q).  Target: <= 10x.
2. A ``chain`` audit (vLLM-style torch verifier), k = 2, V = 3, horizon 3,
   through ``check_step``.  Target: under 10 s.

Both runs happen here, in one process, so the ratio is measured, not assumed.

Run: python benchmarks/bench_torch.py
"""

from __future__ import annotations

import itertools
import random
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import torch

from specexact.counterexamples.samplers import textbook
from specexact.exact.engine import output_distribution
from specexact.steps.models import random_model_pair
from specexact.steps.verdict import check_step
from specexact.torch import torch_output_distribution, torch_step


def torch_textbook(p: torch.Tensor, q: torch.Tensor) -> Any:
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)


def dyadic_pair(v: int, seed: int) -> tuple[list[Fraction], list[Fraction]]:
    """Random p, q with denominator 2**10: exact in float32, so both runs see one (p, q)."""
    r = random.Random(seed)

    def one() -> list[Fraction]:
        cuts = sorted(r.sample(range(1, 1024), v - 1))
        edges = [0, *cuts, 1024]
        return [Fraction(b - a, 1024) for a, b in itertools.pairwise(edges)]

    return one(), one()


def best_of(n: int, fn: Any) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    p, q = dyadic_pair(50, seed=0)
    law_t = torch_output_distribution(torch_textbook, p, q, uniform="continuous")
    law_r = output_distribution(textbook, p, q)
    assert law_t == law_r == dict(enumerate(p)), "the two runs must agree exactly"
    t_torch = best_of(3, lambda: torch_output_distribution(torch_textbook, p, q,
                                                           uniform="continuous"))
    t_rng = best_of(3, lambda: output_distribution(textbook, p, q))
    ratio = t_torch / t_rng
    print(f"single position, V = 50: torch exact {t_torch * 1e3:.1f} ms, "
          f"rng rule {t_rng * 1e3:.1f} ms, ratio {ratio:.1f}x (target <= 10x)")
    t_grid = best_of(3, lambda: torch_output_distribution(torch_textbook, p, q))
    print(f"  with the float32 grid uniform (default): {t_grid * 1e3:.1f} ms")

    from test_torch_exact_steps import vllm_chain
    target, draft = random_model_pair(3, seed=1)
    step = torch_step(vllm_chain, signature="chain", gamma=2, uniform="continuous")
    start = time.perf_counter()
    verdict = check_step(step, target, draft, 3)
    t_chain = time.perf_counter() - start
    print(f"chain audit k = 2, V = 3, horizon 3: {t_chain:.2f} s "
          f"(passed={verdict.passed}; target < 10 s)")


if __name__ == "__main__":
    main()
