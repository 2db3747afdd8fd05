"""Search power: the fraction of seeds at which the default search finds each planted rule.

The planted rules (``planted.py`` under ``tests/``) are right except on a few
percent of random inputs (issue 13).  For each one this runs the default
search (``search_sampler`` / ``search_step`` with no options) at seeds
0..N-1 and prints how many seeds found it (target, issue 13: every seed),
the exact cases each search needed, the witness's size, and the CPU s of
the searches (no target).  Run from the repository root:

    python benchmarks/bench_search_power.py            # 5 seeds
    python benchmarks/bench_search_power.py --seeds 20 # more
    python benchmarks/bench_search_power.py --quick    # seed 0 of two rules
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import CLOCK, Figures, add_quick, cpu_timer, equal_to

from specexact.properties import search_sampler, search_step

# The planted rules live with the quality tests; found wherever the tests are kept.
sys.path.insert(0, str(next((Path(__file__).resolve().parent.parent / "tests")
                            .rglob("planted.py")).parent))

from planted import PLANTED_SAMPLERS, PLANTED_STEPS

QUICK_RULES = ("four-residuals", "bonus-from-draft")  # one sampler, one step: the fastest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    add_quick(parser)
    args = parser.parse_args(argv)
    figures = Figures()
    print(CLOCK)
    seeds = 1 if args.quick else args.seeds
    rules = {**PLANTED_SAMPLERS, **PLANTED_STEPS}
    if args.quick:
        rules = {name: rules[name] for name in QUICK_RULES}
    for name, rule in rules.items():
        found = 0
        cells = []
        with cpu_timer() as t:
            for seed in range(seeds):
                if name in PLANTED_SAMPLERS:
                    result = search_sampler(rule, seed=seed)
                    size = f"V={len(result.witness.p)}" if result.witness else "-"
                else:
                    result = search_step(rule, seed=seed)
                    w = result.witness
                    size = f"V={w.spec.vocab_size},h={w.horizon}" if w is not None else "-"
                found += result.status == "fail"
                cells.append(f"{result.cases}({size})" if result.status == "fail" else "missed")
        figures.show(f"{name}: seeds that found it", f"{found}/{seeds}", "",
                     equal_to(f"{seeds}/{seeds}", source="issue 13: every seed"),
                     f"cases per seed (witness size): {' '.join(cells)}; "
                     f"{t.seconds:.1f} CPU s")
    figures.close()


if __name__ == "__main__":
    main()
