"""Exact tables as text: one renderer for every report.

The verdict of a sampler, a step's joint law, the float and statistical
modes, the catalogue listing and the pytest assertion diff all print their
evidence through :func:`render_table`.  Long diffs are cut as pytest cuts
them: rows that show no difference, beyond the first few, are left out
unless the caller asks for everything (``-vv``)::

    >>> print(render_table(("token", "p"), [("0", "1/3"), ("1", "2/3")]))
    token    p
    -----  ---
        0  1/3
        1  2/3
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

__all__ = ["IDENTICAL_ROWS_SHOWN", "omit_identical", "render_table", "signed"]

#: Rows without a difference shown before the rest are cut (unless verbose).
IDENTICAL_ROWS_SHOWN = 3

Row = Sequence[str]


def signed(x: Fraction) -> str:
    """A difference with its sign: ``+1/9``, ``-1/9``, and ``0`` for none."""
    return "0" if x == 0 else (f"+{x}" if x > 0 else str(x))


def render_table(header: Row, rows: Sequence[Row], *,
                 align: Literal["right", "left"] = "right", rule: bool = True,
                 footer: Sequence[str] = ()) -> str:
    """``header`` and ``rows`` in aligned columns; ``rule`` draws a dashed line under the header.

    Right-aligned cells suit numbers; lines never end in blanks.  ``footer``
    lines (for example what :func:`omit_identical` left out) follow unaligned.
    """
    table = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]

    def line(cells: Row) -> str:
        pad = str.ljust if align == "left" else str.rjust
        return "  ".join(pad(c, w) for c, w in zip(cells, widths, strict=True)).rstrip()

    lines = [line(r) for r in table]
    if rule:
        lines.insert(1, "  ".join("-" * w for w in widths))
    lines.extend(footer)
    return "\n".join(lines)


def omit_identical(rows: Sequence[Row], identical: Sequence[bool], *,
                   verbose: bool = False, keep: int = IDENTICAL_ROWS_SHOWN,
                   what: str = "outcomes") -> tuple[list[Row], list[str]]:
    """The rows to show and the footer saying how many identical ones were left out.

    Every row with a difference is kept; of the identical ones, the first
    ``keep`` are.  ``verbose`` keeps everything (pytest's ``-vv``).
    """
    if verbose:
        return list(rows), []
    shown: list[Row] = []
    omitted = 0
    for row, same in zip(rows, identical, strict=True):
        if same and keep <= 0:
            omitted += 1
            continue
        if same:
            keep -= 1
        shown.append(row)
    footer = [f"{omitted} identical {what} omitted, use -vv to show"] if omitted else []
    return shown, footer
