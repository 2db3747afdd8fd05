"""``audit TARGET --floats`` and ``--uniform-bits K``.

Float and grid modes run :func:`specexact.properties.search_floats`: the sampler
search whose cases are judged by :mod:`specexact.floats.check`, which splits
a deviation into rounding (passes, reported) and structure (fails).  The
statistical mode is in :mod:`specexact.frontends.cli.statistical_cmd`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO

from specexact.errors import InvalidArgument
from specexact.frontends.audit import AuditOptions, FloatCounterexample
from specexact.frontends.cli.progress import Progress
from specexact.frontends.report import float_counterexample_json, vector_text

__all__ = ["float_audit"]


def _float_mode(args: argparse.Namespace, options: AuditOptions) -> tuple[dict[str, Any], str]:
    """The options of :func:`specexact.properties.search_floats` for these flags, and the mode's
    name."""
    bits = options.uniform_bits
    if args.floats:
        fmt = args.floats
        arrays = bool(args.arrays) or fmt == "float32"
        mode = f"floats ({fmt}{', numpy arrays' if arrays else ''}" \
               f"{f', {bits}-bit uniform' if bits else ''})"
        return {"fmt": fmt, "arrays": arrays, "uniform_bits": bits}, mode
    assert bits is not None
    return {"fmt": None, "uniform_bits": bits}, f"grid ({bits}-bit uniform)"


def float_audit(fn: Callable[..., Any], name: str, args: argparse.Namespace,
                options: AuditOptions, *, out: TextIO, err: TextIO) -> int:
    if options.kind != "sampler":
        msg = "--floats and --uniform-bits apply to samplers, not steps"
        raise InvalidArgument(msg)
    from specexact.properties import search_floats

    flags, mode = _float_mode(args, options)
    if options.examples is not None:
        flags["examples"] = options.examples
    with Progress(f"auditing {name} ({mode})", enabled=False if args.json else None,
                  stream=err) as progress:
        result = search_floats(fn, vocab_sizes=options.sizes, seed=options.seed or 0,
                               budget=options.budget, settings=options.settings,
                               progress=progress, **flags)
    if result.status == "undecided":
        assert result.error is not None
        raise result.error
    verdict, cases = result.verdict, result.cases
    low, high = options.sizes
    if args.json:
        data: dict[str, Any] = {
            "verdict": "pass" if verdict is None else "fail", "target": name,
            "kind": "sampler", "mode": mode, "cases": cases, "vocab_sizes": [low, high],
            "seed": options.seed, "coverage": result.covered, "counterexample": None}
        if verdict is not None:
            data["counterexample"] = float_counterexample_json(
                FloatCounterexample(result.witness.p, result.witness.q, verdict))
        json.dump(data, out, indent=2)
        out.write("\n")
    elif verdict is None:
        out.write(f"PASS  {name} (sampler, {mode}): no structural deviation and no support "
                  f"violation in {cases} exact cases, V = {low}..{high}; rounding within the "
                  f"stated tolerance\n{result.covered}\n")
    else:
        out.write(f"FAIL  {name} (sampler, {mode}) after {cases} exact cases\n"
                  f"{result.covered}\n\nminimal witness:\n"
                  f"{_row_line('p', result.witness.p, verdict.p)}\n"
                  f"{_row_line('q', result.witness.q, verdict.q)}\n\n{verdict.format()}\n")
    return 0 if verdict is None else 1


def _row_line(name: str, given: Any, law: Any) -> str:
    """A witness row: exact, or float values as given (they need not sum to 1) and their law."""
    if tuple(given) == tuple(law):
        return f"  {name} = {vector_text(law)}"
    floats = ", ".join(repr(float(x)) for x in given)
    return f"  {name} = ({floats})  (float values as given; judged as {name} / sum({name}))"
