"""The table renderer: rich's layout, drawn as plain ASCII whatever the terminal."""

from __future__ import annotations

import pytest

from specexact.tables import render_table

HEADER = ("token", "p", "actual - expected")
ROWS = [("0", "1/3", "+1/9"), ("1", "2/3", "-1/9")]
#: One dashed line under the header, two blanks between columns, numbers to the right.
EXPECTED = ("token    p  actual - expected\n"
            "-----------------------------\n"
            "    0  1/3               +1/9\n"
            "    1  2/3               -1/9")


@pytest.mark.parametrize("environ", [
    {},
    # What a CI runner or a user's shell may set: none of it reaches the table.
    {"COLUMNS": "12", "FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "TERM": "xterm-256color"},
    {"NO_COLOR": "1", "TERM": "dumb", "JUPYTER_COLUMNS": "8"},
])
def test_a_table_is_the_same_ascii_text_in_every_environment(monkeypatch, environ) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    text = render_table(HEADER, ROWS)
    assert text == EXPECTED
    assert text.isascii() and "\x1b" not in text


def test_cells_are_text_not_markup_and_align_by_their_width_on_screen() -> None:
    # rich measures cells as a terminal shows them: a CJK glyph takes two columns.
    text = render_table(("text", "p"), [("日本", "[bold]1/2"), ("ab", ":smile: 1e5")],
                        rule=False)
    assert text.splitlines() == ["text            p",
                                 "日本    [bold]1/2",
                                 "  ab  :smile: 1e5"]


def test_left_aligned_tables_end_no_line_in_blanks_and_keep_their_footer() -> None:
    text = render_table(("id", "operator"), [("m1", "swap"), ("m10", "x")], align="left",
                        footer=["2 identical mutants omitted, use -vv to show"])
    assert text.splitlines() == ["id   operator",
                                 "-------------",
                                 "m1   swap",
                                 "m10  x",
                                 "2 identical mutants omitted, use -vv to show"]


def test_a_long_row_is_never_wrapped() -> None:
    cell = "0," * 400
    text = render_table(("sequence", "p"), [(cell, "1/2")])
    assert text.splitlines()[1:] == ["-" * (len(cell) + 5), f"{cell}  1/2"]


def test_a_row_of_the_wrong_length_is_refused_with_its_cells() -> None:
    with pytest.raises(ValueError, match=r"a table row has 1 cells, its header 2: \('0',\)"):
        render_table(("token", "p"), [("0",)])
