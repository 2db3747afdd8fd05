"""What the defaults that reach the bugs (issue 25) cost on the bundled catalogue.

Issue 25 widened the default search: samplers are also judged at V = 8, 16, 64 on
block-structured edge cases (``BLOCK_VOCAB_SIZES``), steps on every token at V = 4
(``full_depth_specs``, and ``late_token_specs`` past the capped horizon),
cross-vocabulary steps to their longest token plus two characters
(``default_horizon``).  Its targets, on the bundled catalogue with default options:

* the median sampler audit takes **<= 5 CPU s**, the median step audit **<= 15 CPU s**
  (cross-vocabulary steps are steps);
* the whole catalogue takes **<= 1.5x** the CPU time of the defaults before issue 25.

"Before" is measured in the same run: the same audits with the three additions taken
out (no block-structured sizes, no full-depth cases, the 3-character horizon of
before).  Each configuration runs in a fresh interpreter of its own (``--child``), so
that no cache warmed by one serves the other; the time of each rule is its audit's CPU
time in that child.  Every rule's verdict must be the one the catalogue expects in both
configurations, and the same in both, else no ratio is printed.

Run from the repository root::

    python benchmarks/bench_defaults.py           # the whole catalogue, both ways
                                                  # (about 10 CPU min)
    python benchmarks/bench_defaults.py --quick   # 2 rules of each kind (about 1 CPU min)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import CLOCK, Figures, add_quick, at_most, cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "issue 25"
MEDIAN_SAMPLER = 5.0
MEDIAN_STEP = 15.0
WHOLE_RATIO = 1.5
QUICK_PER_KIND = 2


def _before_issue_25() -> None:
    """Take issue 25's three additions out of the default search (in this child only)."""
    from specexact.properties import crossvocab_search, search, step_search

    search.BLOCK_VOCAB_SIZES = ()  # type: ignore[assignment,misc]  # what the search reads
    step_search.full_depth_specs = lambda *args, **kwargs: []  # type: ignore[assignment]
    step_search.late_token_specs = lambda *args, **kwargs: []  # type: ignore[assignment]
    crossvocab_search.default_horizon = (  # type: ignore[assignment]
        lambda spec: crossvocab_search.MIN_HORIZON)


def child(mode: str, names: list[str]) -> None:
    """Audit ``names`` with the defaults (``mode`` "now") or those before issue 25
    ("before"); print one JSON row per rule: its verdict and its CPU seconds."""
    from specexact.frontends.cli.catalogue_cmd import audit_entry

    if mode == "before":
        _before_issue_25()
    rows = []
    for name in names:
        start = cpu_seconds()
        row = audit_entry(name, None, None)
        rows.append({"rule": name, "kind": row["kind"], "found": row["found"],
                     "match": row["match"], "cpu": cpu_seconds() - start})
    print(json.dumps(rows))


def _names(quick: bool) -> list[str]:
    from specexact.counterexamples import catalogue

    entries = list(catalogue())
    if not quick:
        return [entry.name for entry in entries]
    chosen: list[str] = []
    for kind in ("sampler", "step", "cross-vocab"):
        chosen += [e.name for e in entries if e.kind == kind][:QUICK_PER_KIND]
    return chosen


def _run(mode: str, names: list[str]) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, __file__, "--child", mode, *names], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"{mode}: the child exited {done.returncode}: {done.stderr[-2000:]}")
        sys.exit(1)
    rows: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_quick(parser)
    parser.add_argument("--child", nargs="+", metavar=("MODE", "RULE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1:])
        return
    print(CLOCK)
    names = _names(args.quick)
    now = _run("now", names)
    before = _run("before", names)
    wrong = [r["rule"] for r in now + before if not r["match"]]
    moved = [a["rule"] for a, b in zip(now, before, strict=True) if a["found"] != b["found"]]
    figures = Figures()
    size = f"{len(names)} rules" if args.quick else "the whole catalogue"
    judged = not args.quick
    for kinds, target in ((("sampler",), MEDIAN_SAMPLER), (("step", "cross-vocab"), MEDIAN_STEP)):
        times = [r["cpu"] for r in now if r["kind"] in kinds]
        if times:
            what = " and ".join(kinds)
            figures.show(f"{size}: median default {what} audit ({len(times)} rules)",
                         statistics.median(times),
                         target=at_most(target, "CPU s", source=SOURCE, judged=judged,
                                        size="the whole catalogue"))
    total_now, total_before = sum(r["cpu"] for r in now), sum(r["cpu"] for r in before)
    figures.show(f"{size}: defaults now", total_now)
    figures.show(f"{size}: defaults before issue 25", total_before)
    if wrong or moved:
        print(f"verdicts: not as the catalogue expects {wrong}; moved {moved}; no ratio")
        sys.exit(1)
    figures.show(f"{size}: now / before", total_now / total_before, "x",
                 at_most(WHOLE_RATIO, "x", source=SOURCE, judged=judged,
                         size="the whole catalogue"))
    slowest = sorted(now, key=lambda r: -r["cpu"])[:5]
    print("slowest now: " + ", ".join(f"{r['rule']} {r['cpu']:.1f} s" for r in slowest))
    figures.close()


if __name__ == "__main__":
    main()
