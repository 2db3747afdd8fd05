"""The exact gap of each k = 2 multi-draft rule to the optimal acceptance, as a table.

For each (p, q) below, each lossless multi-draft rule of the catalogue is run
exactly: its acceptance P(emitted token in the drafted set), alpha* (the subset
bound, which the max-flow coupling attains) for that rule's own set law, and the
gap.  Not a timing: exact figures, printed as a Markdown table (the README's),
with no target (issue 15 asks for the gaps, not for bounds on them); the one
timed figure is the CPU s the table took.

    python benchmarks/multidraft_gaps.py [--quick]
"""

from __future__ import annotations

import argparse
from fractions import Fraction

from common import CLOCK, Figures, add_quick, cpu_timer

# Internal: the gap computation lives with the newer algorithms of the catalogue; that
# module is being renamed, and this is the one place to update.
from specexact.counterexamples.multidraft_optimal import GAP_RULES, multidraft_gaps

CASES = [
    (("1/3", "1/3", "1/3"), ("1/2", "1/3", "1/6")),
    (("1/4", "1/4", "1/2"), ("1/2", "1/4", "1/4")),
    (("1/5", "3/5", "1/5"), ("3/5", "1/5", "1/5")),
    (("1/2", "1/3", "1/6"), ("1/6", "1/3", "1/2")),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick(parser)
    args = parser.parse_args()
    cases = CASES[:1] if args.quick else CASES
    figures = Figures()
    with cpu_timer() as t:
        rows = {case: multidraft_gaps(*case) for case in cases}
    head = ["rule", *[f"p = ({', '.join(p)}), q = ({', '.join(q)})" for p, q in cases],
            "largest gap"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for i, name in enumerate(GAP_RULES):
        cells = []
        worst = Fraction(0)
        for case in cases:
            row = rows[case][i]
            assert row.rule == name
            worst = max(worst, row.gap)
            cells.append(f"{row.acceptance} / {row.optimal}")
        print(f"| `{name}` | " + " | ".join(cells) + f" | {worst} |")
    print(f"\n(cells: acceptance / alpha*; exact figures, no target)\n{CLOCK}")
    figures.show(f"the table, {len(GAP_RULES)} rules x {len(cases)} cases", t.seconds,
                 note="exact figures, not a timing target")
    figures.close()


if __name__ == "__main__":
    main()
