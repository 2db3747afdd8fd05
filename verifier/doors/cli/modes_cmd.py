"""``audit TARGET --floats``, ``--uniform-bits K`` and ``--statistical``.

Float and grid modes judge each case with :mod:`verifier.modes.floats`, which
splits a deviation into rounding (passes, reported) and structure (fails).
The cases are the search's hand-picked edge cases, then seeded Hypothesis
pairs; Hypothesis shrinks a failing pair.  The statistical mode runs
:func:`verifier.modes.statistical.statistical_audit` on its own panel.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO

from verifier.doors.audit import AuditOptions
from verifier.doors.cli.progress import Progress
from verifier.doors.report import fraction_text, law_json, vector_text
from verifier.errors import InvalidArgument, Undecided

__all__ = ["float_audit", "statistical_audit_command"]

DEFAULT_FLOAT_EXAMPLES = 100


class _Found(Exception):
    def __init__(self, verdict: Any) -> None:
        super().__init__("counterexample")
        self.verdict = verdict


def search_floats(check: Callable[[Any, Any], Any], options: AuditOptions,
                  progress: Callable[[int], None] | None = None) -> tuple[Any, int]:
    """The first failing float verdict, shrunk, and the number of cases checked."""
    verdict, cases = _first_failure(check, options, progress)
    if verdict is None:
        return None, cases
    from properties.search import shrink_pair

    found = {(tuple(verdict.p), tuple(verdict.q)): verdict}

    def fails(pair: Any) -> bool:
        try:
            candidate = check(*pair)
        except Undecided:
            return False
        if candidate.passed:
            return False
        found[pair] = candidate
        return True

    smallest = shrink_pair((tuple(verdict.p), tuple(verdict.q)), fails,
                           min_size=options.sizes[0])
    return found[smallest], cases + len(found) - 1


def _first_failure(check: Callable[[Any, Any], Any], options: AuditOptions,
                   progress: Callable[[int], None] | None) -> tuple[Any, int]:
    import hypothesis
    from hypothesis import HealthCheck, Phase, given

    from properties.edge_cases import sampler_edge_cases
    from properties.strategies import pq_pairs

    low, high = options.sizes
    cases = 0
    for p, q in sampler_edge_cases(low, high):
        verdict = check(p, q)
        cases += 1
        if progress is not None:
            progress(cases)
        if not verdict.passed:
            return verdict, cases
    examples = DEFAULT_FLOAT_EXAMPLES if options.examples is None else options.examples
    if examples == 0:
        return None, cases
    undecided: list[Undecided] = []

    def test(pair: Any) -> None:
        nonlocal cases
        try:
            verdict = check(*pair)
        except Undecided as exc:
            undecided.append(exc)
            return
        cases += 1
        if progress is not None:
            progress(cases)
        if not verdict.passed:
            raise _Found(verdict)

    settings = options.settings or hypothesis.settings(
        max_examples=examples, database=None, deadline=None, derandomize=False,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    run = given(pq_pairs(vocab_sizes=(low, high)))(test)
    run = settings(run)
    run = hypothesis.seed(options.seed if options.seed is not None else 0)(run)
    try:
        run()
    except _Found as found:
        return found.verdict, cases
    if undecided:
        raise undecided[0]
    return None, cases


def _float_check(fn: Callable[..., Any], args: argparse.Namespace,
                 options: AuditOptions) -> tuple[Callable[[Any, Any], Any], str]:
    from verifier.modes.floats import check_floats, check_grid

    bits = options.uniform_bits
    if args.floats:
        fmt = args.floats
        arrays = bool(args.arrays) or fmt == "float32"
        mode = f"floats ({fmt}{', numpy arrays' if arrays else ''}" \
               f"{f', {bits}-bit uniform' if bits else ''})"
        return (lambda p, q: check_floats(fn, p, q, fmt=fmt, arrays=arrays, uniform_bits=bits,
                                          budget=options.budget)), mode
    assert bits is not None
    return (lambda p, q: check_grid(fn, p, q, uniform_bits=bits, budget=options.budget)), \
        f"grid ({bits}-bit uniform)"


def float_audit(fn: Callable[..., Any], name: str, args: argparse.Namespace,
                options: AuditOptions, *, out: TextIO, err: TextIO) -> int:
    if options.kind != "sampler":
        msg = "--floats and --uniform-bits apply to samplers, not steps"
        raise InvalidArgument(msg)
    check, mode = _float_check(fn, args, options)
    with Progress(f"auditing {name} ({mode})", enabled=False if args.json else None,
                  stream=err) as progress:
        verdict, cases = search_floats(check, options, progress)
    low, high = options.sizes
    if args.json:
        data: dict[str, Any] = {
            "verdict": "pass" if verdict is None else "fail", "target": name,
            "kind": "sampler", "mode": mode, "cases": cases, "vocab_sizes": [low, high],
            "seed": options.seed, "counterexample": None}
        if verdict is not None:
            vocab = range(len(verdict.p))
            data["counterexample"] = {
                "p": [fraction_text(x) for x in verdict.p],
                "q": [fraction_text(x) for x in verdict.q],
                "expected": law_json({i: x for i, x in enumerate(verdict.p)}, vocab),
                "actual": law_json(verdict.actual, vocab),
                "tv": fraction_text(verdict.total_tv),
                "severity": verdict.severity,
                "reason": verdict.headline(),
                "floats": verdict.to_json(),
            }
        json.dump(data, out, indent=2)
        out.write("\n")
    elif verdict is None:
        out.write(f"PASS  {name} (sampler, {mode}): no structural deviation and no support "
                  f"violation in {cases} exact cases, V = {low}..{high}; rounding within the "
                  "stated tolerance\n")
    else:
        out.write(f"FAIL  {name} (sampler, {mode}) after {cases} exact cases\n\n"
                  f"minimal witness:\n  p = {vector_text(verdict.p)}\n"
                  f"  q = {vector_text(verdict.q)}\n\n{verdict.format()}\n")
    return 0 if verdict is None else 1


def statistical_audit_command(fn: Callable[..., Any], name: str, args: argparse.Namespace,
                              *, out: TextIO, err: TextIO) -> int:
    from verifier.modes.statistical import statistical_audit

    if args.samples is not None and args.samples < 1:
        msg = f"--samples {args.samples} must be >= 1"
        raise InvalidArgument(msg)
    with Progress(f"sampling {name}", enabled=False if args.json else None, stream=err):
        report = statistical_audit(fn, samples=args.samples, seed=args.seed)
    if args.json:
        data = {"verdict": "pass" if report.passed else "fail", "target": name,
                "kind": "sampler", "mode": "statistical", "cases": len(report.cases),
                "counterexample": _statistical_counterexample(report),
                "statistical": report.to_json()}
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        out.write(report.format() + "\n")
    code: int = report.exit_code
    return code


def _statistical_counterexample(report: Any) -> dict[str, Any] | None:
    failures = list(report.failures)
    if not failures:
        return None
    worst = failures[0]
    case = worst.case
    vocab = range(len(case.p))
    return {
        "p": [fraction_text(x) for x in case.p],
        "q": [fraction_text(x) for x in case.q],
        "expected": law_json(dict(enumerate(case.p)), vocab),
        # empirical frequencies, not an exact law: the statistical mode only observes
        "actual": law_json(dict(enumerate(worst.observed)), vocab),
        "observed_tv": fraction_text(worst.observed_tv),
        "p_value": worst.p_value,
        "reason": worst.reason,
    }
