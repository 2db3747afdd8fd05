"""``--format`` and ``--color``: how a command's report is written.

Every command writes its report either as text (for people) or as its JSON payload;
with a machine format the payload becomes the one versioned report document
(:func:`specexact.frontends.formats.build_document`) and is rendered as
``json``, ``junit``, ``sarif`` or ``github``.  ``--json`` is ``--format json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from specexact.errors import InvalidArgument
from specexact.frontends.formats import FORMATS, MACHINE_FORMATS, build_document, render

__all__ = [
    "COLORS",
    "COMMANDS",
    "add_output_options",
    "colour_error",
    "colour_in_argv",
    "colour_report",
    "command_in_argv",
    "format_in_argv",
    "settle_output",
    "write_document",
]

COLORS = ("auto", "always", "never")
COMMANDS = ("audit", "prove", "explain", "catalogue", "power", "mutate")


def add_output_options(common: argparse.ArgumentParser) -> None:
    """``--format`` and ``--color``, accepted after every subcommand."""
    common.add_argument("--format", choices=FORMATS, default=None,
                        help="text (default), json (the versioned report document; "
                             "--json is the same), junit (JUnit XML), sarif (SARIF 2.1.0, "
                             "for code scanning) or github (GitHub Actions annotations)")
    common.add_argument("--color", choices=COLORS, default=None,
                        help="colour the text report and the error line: auto (default: "
                             "on a terminal, unless NO_COLOR is set), always, never")


def settle_output(args: argparse.Namespace, *, fmt: str | None = None,
                  color: str | None = None) -> None:
    """Settle ``args.format`` (``--json`` is ``--format json``; ``fmt``: the project's
    default) and ``args.colour`` (a bool); ``args.json`` is then true for every machine
    format, so that each command writes its JSON payload."""
    given = getattr(args, "format", None)
    if getattr(args, "json", False) and given not in (None, "json"):
        msg = f"--json is --format json; it cannot be combined with --format {given}"
        raise InvalidArgument(msg)
    chosen = "json" if getattr(args, "json", False) else given or fmt or "text"
    if getattr(args, "markdown", False) and chosen != "text":
        msg = f"--markdown is a text format; it cannot be combined with --format {chosen}"
        raise InvalidArgument(msg)
    args.format = chosen
    args.json = chosen != "text"
    args.colour = chosen == "text" and _colour_wanted(args.color or color or "auto")


def _colour_wanted(choice: str) -> bool:
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def format_in_argv(argv: Sequence[str]) -> str | None:
    """The machine format named on a command line that could not be parsed (for the
    error report), or None."""
    found: str | None = None
    for i, arg in enumerate(argv):
        if arg == "--json":
            found = "json"
        elif arg == "--format" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--format="):
            found = arg.partition("=")[2]
    return found if found in MACHINE_FORMATS else None


def colour_in_argv(argv: Sequence[str]) -> bool:
    """Whether to colour the error of a command line that could not be parsed."""
    choice = "auto"
    for i, arg in enumerate(argv):
        if arg == "--color" and i + 1 < len(argv):
            choice = argv[i + 1]
        elif arg.startswith("--color="):
            choice = arg.partition("=")[2]
    return format_in_argv(argv) is None and choice in COLORS and _colour_wanted(choice)


def command_in_argv(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if a in COMMANDS), None)


def write_document(out: Any, fmt: str, command: str | None, payload: Any,
                   exit_code: int) -> None:
    """Write ``payload`` (a command's JSON payload, or its text) as the report document
    in ``fmt``."""
    if isinstance(payload, str):
        payload = json.loads(payload) if payload.strip() else {}
    out.write(render(build_document(command, payload, exit_code=exit_code), fmt))


_CODES = {"PASS": "32", "PROVED": "32", "ok": "32", "FAIL": "31", "REFUTED": "31",
          "MISMATCH": "31", "UNDECIDED": "33"}
_VERDICT_WORD = re.compile(r"^(PASS|PROVED|FAIL|REFUTED|MISMATCH|UNDECIDED)\b", re.MULTILINE)


def colour_report(text: str) -> str:
    """The text report with its verdict words coloured (bold green, red, yellow)."""
    return _VERDICT_WORD.sub(lambda m: f"\x1b[1;{_CODES[m.group(1)]}m{m.group(1)}\x1b[0m", text)


def colour_error(line: str) -> str:
    """``specexact: error: ...`` with its label coloured."""
    return re.sub(r"^specexact: (error|undecided|fail):",
                  lambda m: "specexact: \x1b[1;"
                            f"{'33' if m.group(1) == 'undecided' else '31'}m{m.group(1)}:"
                            "\x1b[0m", line)
