"""The exact gap of each k = 2 multi-draft rule to the optimal acceptance, as a table.

For each (p, q) below, each lossless multi-draft rule of the catalogue is run
exactly: its acceptance P(emitted token in the drafted set), alpha* (the subset
bound, which the max-flow coupling attains) for that rule's own set law, and the
gap.  Not a timing: exact figures, printed as a Markdown table (the README's).

    python benchmarks/multidraft_gaps.py
"""

from __future__ import annotations

from fractions import Fraction

from specexact.counterexamples.multidraft_optimal import GAP_RULES, multidraft_gaps

CASES = [
    (("1/3", "1/3", "1/3"), ("1/2", "1/3", "1/6")),
    (("1/4", "1/4", "1/2"), ("1/2", "1/4", "1/4")),
    (("1/5", "3/5", "1/5"), ("3/5", "1/5", "1/5")),
    (("1/2", "1/3", "1/6"), ("1/6", "1/3", "1/2")),
]


def main() -> None:
    rows = {case: multidraft_gaps(*case) for case in CASES}
    head = ["rule", *[f"p = ({', '.join(p)}), q = ({', '.join(q)})" for p, q in CASES],
            "largest gap"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for i, name in enumerate(GAP_RULES):
        cells = []
        worst = Fraction(0)
        for case in CASES:
            row = rows[case][i]
            assert row.rule == name
            worst = max(worst, row.gap)
            cells.append(f"{row.acceptance} / {row.optimal}")
        print(f"| `{name}` | " + " | ".join(cells) + f" | {worst} |")


if __name__ == "__main__":
    main()
