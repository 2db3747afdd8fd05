"""``specexact mutate FILE.py:fn --tests "COMMAND"``: mutation testing of an engine's tests."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from specexact.errors import InvalidArgument

__all__ = ["add_mutate_parser", "run_mutate"]

EXIT_OUTPUT = 3  # as the command's (specexact.frontends.cli.main), which imports this

MUTATE_EPILOG = """\
TARGET is path/to/file.py:function (or file.py:Class.method); the function and the
module-level functions it calls are mutated.  The project (--root, default the current
directory) is copied to a temporary directory; each mutant is written there, COMMAND
is run in the copy (its cwd, first on PYTHONPATH), and the mutant is judged by
'specexact audit' with the --audit options.  A mutant the audit passes is equivalent
and does not count.  The tests and the audit must pass on the original.
exit codes: 0 the tests kill every non-equivalent mutant, 1 a mutant specexact refutes
survives the tests, 2 usage error, or only mutants without a verdict survive, 3 the
plot could not be written
"""

#: audit options the mutate command sets itself for each mutant's audit.
_OWN = ("--json", "--max-seconds", "-q", "--quiet", "-v", "--verbose", "-h", "--help")
#: audit options of the sampled (statistical) audit, whose pass proves nothing exact.
_SAMPLED = ("--statistical", "--batched", "--samples")


def add_mutate_parser(sub: Any, common: Sequence[argparse.ArgumentParser]) -> None:
    mutate = sub.add_parser(
        "mutate", parents=list(common),
        help="mutation-test your own sampler tests with the catalogue's bug classes",
        description="Plant the catalogue's bug classes in TARGET's source, one mutant at a "
                    "time; run your test command and specexact's audit on each; report "
                    "which mutants your tests kill and the two mutation scores.",
        epilog=MUTATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    mutate.add_argument("target", metavar="TARGET", help="path/to/file.py:function")
    mutate.add_argument("--tests", required=True, metavar="COMMAND",
                        help="the shell command that runs your tests, e.g. "
                             "\"python -m pytest -q tests/test_sampler.py\"; exit 0 means "
                             "the mutant survived")
    mutate.add_argument("--operators", metavar="NAMES",
                        help="comma-separated operator names, like lt-to-le,shared-uniform "
                             "(default: all of them; a wrong name is answered with the "
                             "list)")
    mutate.add_argument("--audit", default="", metavar="OPTIONS",
                        help="options of 'specexact audit' for judging each mutant, as one "
                             "string, e.g. \"--torch --signature chain --gamma 2\" "
                             "(default: none; the kind is read from the signature)")
    mutate.add_argument("--root", metavar="DIR",
                        help="the project copied for each run (default: the current "
                             "directory, or TARGET's folder when TARGET is outside it)")
    mutate.add_argument("--timeout", type=float, metavar="S",
                        help="seconds the tests may run on a mutant before it counts as "
                             "timeout, which counts as killed (default: 5x the original "
                             "run, at least 10)")
    mutate.add_argument("--audit-seconds", type=float, metavar="S",
                        help="seconds each mutant's audit may run before it is undecided "
                             "(default: 10x the original's audit, at least 60)")
    mutate.add_argument("--diffs", action="store_true",
                        help="show every mutant's diff (default: the survivors' only)")
    mutate.add_argument("--json", action="store_true", help="print one JSON object")
    mutate.add_argument("--plot", metavar="FILE.png",
                        help="bars of the two mutation scores per operator (needs "
                             "matplotlib)")


def _audit_args(text: str, parser: Callable[[], argparse.ArgumentParser]) -> list[str]:
    """The --audit options, split like a shell and checked by the audit's own parser
    (``parser()`` builds the command's parser)."""
    try:
        args = shlex.split(text)
    except ValueError as exc:
        msg = f"--audit {text!r}: {exc}"
        raise InvalidArgument(msg) from None
    own = [a for a in args if a.split("=", 1)[0] in _OWN]
    if own:
        msg = (f"--audit must not hold {', '.join(own)}: mutate runs each audit with "
               "--json and --audit-seconds itself")
        raise InvalidArgument(msg)
    sampled = [a for a in args if a.split("=", 1)[0] in _SAMPLED]
    if sampled:
        msg = (f"--audit must not hold {', '.join(sampled)}: mutate judges each mutant "
               "exactly, and a sampled audit's pass does not make a mutant equivalent")
        raise InvalidArgument(msg)
    try:
        parser().parse_args(["audit", "file.py:function", *args])
    except Exception as exc:  # the parser's usage error, whatever its class
        msg = f"--audit {text!r}: {str(exc).splitlines()[0]}"
        raise InvalidArgument(msg) from None
    return args


def _progress(err: TextIO, quiet: bool) -> Any:
    def show(done: int, total: int, result: Any) -> None:
        if quiet:
            return
        mutant = result.mutant
        err.write(f"specexact mutate: {done}/{total} {mutant.id} {mutant.operator} "
                  f"{mutant.location}: tests {result.tests}, specexact "
                  f"{result.verdict.upper()}\n")
        err.flush()
    return show


def run_mutate(args: argparse.Namespace, *, out: TextIO, err: TextIO,
               parser: Callable[[], argparse.ArgumentParser]) -> int:
    """Run ``specexact mutate``; write the report (and the plot); the exit code.

    ``parser()`` is the command's parser, which checks the ``--audit`` options."""
    from specexact.mutation import mutate, plot_scores, report_human, report_json

    for flag, value in (("--timeout", args.timeout), ("--audit-seconds", args.audit_seconds)):
        if value is not None and not value > 0:
            msg = f"{flag} {value:g} must be a positive number of seconds"
            raise InvalidArgument(msg)
    operators = [n.strip() for n in args.operators.split(",") if n.strip()] \
        if args.operators is not None else None
    if operators == []:
        msg = "--operators names no operator"
        raise InvalidArgument(msg)
    report = mutate(args.target, args.tests, root=args.root, operators=operators,
                    audit_args=_audit_args(args.audit, parser), timeout=args.timeout,
                    audit_seconds=args.audit_seconds,
                    progress=_progress(err, args.quiet or args.json))
    code = {"pass": 0, "fail": 1, "undecided": 2}[report.outcome]
    if args.plot:
        try:
            plot_scores(report, args.plot)
        except OSError as exc:
            err.write(f"specexact: error: cannot write the plot {args.plot}: "
                      f"{exc.strerror or exc}\n")
            code = EXIT_OUTPUT
    if args.json:
        data = report_json(report)
        if args.plot:
            data["plot"] = args.plot
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        out.write(report_human(report, diffs=True if args.diffs else None) + "\n")
        if args.plot and code != EXIT_OUTPUT:
            out.write(f"\nplot written to {args.plot}\n")
    return code
