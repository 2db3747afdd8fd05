"""``--plot FILE`` of ``audit`` and ``prove``: the witness's law against p."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, TextIO

from specexact.frontends.witness_plot import check_plot_path, plot_witness, witness_laws

__all__ = ["EXIT_OUTPUT", "add_plot_option", "check_plot_option", "write_witness_plot"]

#: The exit code when the plot could not be written (as for the report itself).
EXIT_OUTPUT = 3


def add_plot_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plot", metavar="FILE.png",
                        help="on a failure, draw the witness's exact law against p, the "
                             "signed difference per token and any mass where p = 0 (the "
                             "suffix names the format; needs specexact[plot])")


def check_plot_option(args: argparse.Namespace) -> None:
    """Refuse a --plot FILE that cannot be written, before anything is computed."""
    path = getattr(args, "plot", None)
    if path:
        check_plot_path(path)


def write_witness_plot(payload: Mapping[str, Any], path: str, err: TextIO,
                       code: int) -> int:
    """Draw the witness of ``payload`` (an audit's or a proof's JSON) to ``path``;
    ``code`` is the command's exit code, 3 when the plot cannot be written."""
    laws = witness_laws(payload)
    if laws is None:
        err.write(f"specexact: no plot written to {path}: there is no witness with a law "
                  "to draw (a pass, a crash or no verdict)\n")
        return code
    expected, actual, caption = laws
    try:
        plot_witness(expected, actual, path, caption=caption)
    except OSError as exc:
        err.write(f"specexact: error: cannot write the plot {path}: "
                  f"{exc.strerror or exc}\n")
        return EXIT_OUTPUT
    return code
