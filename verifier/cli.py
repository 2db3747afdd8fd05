"""The ``specexact`` command line.  Exit codes: 0 pass, 1 violation, 2 usage error / undecided."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from verifier.errors import SpecexactError, Undecided
from verifier.verdict import check_sampler

__all__ = ["main"]

EDGE_CASES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("1/5", "1/2", "3/10"), ("1/2", "3/10", "1/5")),
    (("1/2", "3/10", "1/5"), ("9/10", "1/20", "1/20")),
    (("1/3", "2/3"), ("2/3", "1/3")),
    (("1/2", "1/2"), ("1/2", "1/2")),
    (("1/5", "1/2", "3/10"), ("1/5", "1/2", "3/10")),
    (("1/2", "1/2"), ("1", "0")),
    (("1/2", "1/2", "0"), ("0", "0", "1")),
    (("1", "0"), ("0", "1")),
    (("0", "1/4", "3/4"), ("1/2", "0", "1/2")),
)


def _audit_catalogue() -> int:
    from counterexamples import catalogue

    rows = [("rule", "kind", "expected", "found", "match")]
    ok = True
    for entry in catalogue():
        if entry.kind != "sampler":
            continue
        found_fail = False
        for p, q in EDGE_CASES:
            try:
                verdict = check_sampler(entry.rule, p, q)
            except Undecided:
                found_fail = True
                break
            if not verdict.passed:
                found_fail = True
                break
        found = "wrong" if found_fail else "lossless"
        expected = "lossless" if entry.lossless else "wrong"
        ok &= found == expected
        rows.append((entry.name, entry.kind, expected, found, "yes" if found == expected else "NO"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="specexact", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    audit = sub.add_parser("audit", help="audit a sampler, or the bundled catalogue")
    audit.add_argument("target", nargs="?")
    args = parser.parse_args(argv)
    try:
        if args.command == "audit" and args.target is None:
            return _audit_catalogue()
        print("auditing a target arrives with the CLI issue", file=sys.stderr)
        return 2
    except SpecexactError as exc:
        print(f"specexact: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

