"""Exact tables as text: one renderer for every report.

The verdict of a sampler, a step's joint law, the float and statistical
modes, the catalogue listing and the pytest assertion diff all print their
evidence through :func:`render_table`.  Long diffs are cut as pytest cuts
them: rows that show no difference, beyond the first few, are left out
unless the caller asks for everything (``-vv``)::

    >>> print(render_table(("token", "p"), [("0", "1/3"), ("1", "2/3")]))
    token    p
    ----------
        0  1/3
        1  2/3

The layout is rich's (``rich.table.Table``), drawn as plain ASCII whatever
the terminal: colour, where asked for, is added to the whole report by the
command line, never here.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

__all__ = [
    "IDENTICAL_ROWS_SHOWN",
    "exact_text",
    "omit_identical",
    "render_table",
    "signed",
]

#: Rows without a difference shown before the rest are cut (unless verbose).
IDENTICAL_ROWS_SHOWN = 3

Row = Sequence[str]

#: rich's ``box.SIMPLE_HEAD`` in ASCII: one dashed line under the header and no other,
#: so that logs, pytest diffs and terminals without box-drawing glyphs all read it.
RULE_UNDER_HEADER = "    \n    \n -- \n    \n    \n    \n    \n    \n"


#: Fractions longer than this print compactly in human text (JSON keeps them exact).
LONG_FRACTION = 24


def exact_text(x: Fraction | int) -> str:
    """An exact number for people: ``1/9`` as it is, ``2^-126 ~ 1.18e-38`` when it is long.

    Short fractions are printed whole.  A long one with a power-of-two
    denominator (what float code produces) prints as ``n*2^-k ~ value``,
    which is still exact; any other long one by its value to 3 significant
    digits after ``~`` (a 40-digit fraction is unreadable).  JSON reports
    always hold the fraction itself.
    """
    x = Fraction(x)
    text = str(x)
    if len(text) <= LONG_FRACTION:
        return text
    d = x.denominator
    if d & (d - 1) == 0:  # a power of two
        k = d.bit_length() - 1
        n = x.numerator
        head = f"2^-{k}" if n == 1 else (f"-2^-{k}" if n == -1 else f"{n}*2^-{k}")
        if len(head) <= LONG_FRACTION:
            return f"{head} ~ {float(x):.3g}"
    return f"~{float(x):.3g}"


def signed(x: Fraction) -> str:
    """A difference with its sign: ``+1/9``, ``-1/9``, and ``0`` for none."""
    return "0" if x == 0 else (f"+{exact_text(x)}" if x > 0 else exact_text(x))


def render_table(header: Row, rows: Sequence[Row], *,
                 align: Literal["right", "left"] = "right", rule: bool = True,
                 footer: Sequence[str] = ()) -> str:
    """``header`` and ``rows`` in aligned columns; ``rule`` draws a dashed line under the header.

    Right-aligned cells suit numbers; lines never end in blanks.  ``footer``
    lines (for example what :func:`omit_identical` left out) follow unaligned.
    The table is laid out by rich, always as plain ASCII text: the same bytes
    on a terminal, in a pipe, in a notebook and in a pytest diff.
    """
    # rich is imported when a table is drawn, not with every verdict module.
    from rich.box import Box
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Two blanks between columns: the box's blank divider and one of padding, or,
    # without a rule (no box), two of padding.
    table = Table(box=Box(RULE_UNDER_HEADER, ascii=True) if rule else None,
                  show_edge=False, pad_edge=False, header_style=None,
                  padding=(0, 1, 0, 0) if rule else (0, 2, 0, 0))
    for name in header:
        table.add_column(Text(name), justify=align, no_wrap=True)
    for row in rows:
        if len(row) != len(header):
            msg = f"a table row has {len(row)} cells, its header {len(header)}: {tuple(row)!r}"
            raise ValueError(msg)
        table.add_row(*(Text(cell) for cell in row))
    # Wide enough that nothing wraps, whatever the terminal (COLUMNS is not read).
    width = sum(max(cell_len(c) for c in column) + 2
                for column in zip(header, *rows, strict=True)) + 1
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, force_terminal=False,
            force_jupyter=False, force_interactive=False, legacy_windows=False,
            markup=False, emoji=False, highlight=False, soft_wrap=False).print(table)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
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
