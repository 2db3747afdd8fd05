"""Search power: the fraction of seeds at which the default search finds each planted rule.

The planted rules (``tests/quality/planted.py``) are right except on a few
percent of random inputs (issue 13).  For each one this runs the default
search (``search_sampler`` / ``search_step`` with no options) at seeds
0..N-1 and prints how many seeds found it, the exact cases each search
needed, and the witness's size.  Counts, not times: the figures are the
same on any machine.  Run from the repository root:

    python benchmarks/bench_search_power.py            # 5 seeds
    python benchmarks/bench_search_power.py --seeds 20 # more
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "quality"))

from planted import PLANTED_SAMPLERS, PLANTED_STEPS

from specexact.properties import search_sampler, search_step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    args = parser.parse_args(argv)
    print(f"{'planted rule':28} {'found':>7}  cases per seed (witness size)")
    for name, rule in {**PLANTED_SAMPLERS, **PLANTED_STEPS}.items():
        found = 0
        cells = []
        for seed in range(args.seeds):
            if name in PLANTED_SAMPLERS:
                result = search_sampler(rule, seed=seed)
                size = f"V={len(result.witness.p)}" if result.witness else "-"
            else:
                result = search_step(rule, seed=seed)
                w = result.witness
                size = f"V={w.spec.vocab_size},h={w.horizon}" if w is not None else "-"
            found += result.status == "fail"
            cells.append(f"{result.cases}({size})" if result.status == "fail" else "missed")
        print(f"{name:28} {found:>3}/{args.seeds:<3}  {' '.join(cells)}", flush=True)


if __name__ == "__main__":
    main()
