"""Progress on stderr: rich's transient progress line on a terminal, a plain line every
10 s elsewhere (CI logs, pipes, TERM=dumb), nothing with ``-q`` or a machine format.

The report itself (stdout) never depends on progress: the lines go to stderr
and say only how many cases were judged and how long it has run.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import rich.progress

__all__ = ["Progress", "configure"]

#: Seconds between plain lines when stderr is not a terminal (``-v``: every second).
_EVERY = {"quiet": None, "normal": 10.0, "verbose": 1.0}
#: Seconds between redraws of the terminal's line (at most ten a second).
_REDRAW = 0.1
#: Columns of the terminal's bar and of its time (``0:00:00``); the label gets what the
#: count, the bar, the detail and the time leave, and never fewer than _MIN_LABEL.
_BAR = 10
_TIME = 7
_MIN_LABEL = 12
_settings = {"level": "normal", "color": "auto"}


def configure(*, quiet: bool = False, verbose: bool = False, color: str = "auto") -> None:
    """Set how chatty progress is for this command (the CLI's ``-q`` and ``-v``) and
    whether the terminal's line is coloured (``--color``: auto, always or never; auto
    colours unless NO_COLOR is set or TERM is dumb)."""
    _settings["level"] = "quiet" if quiet else "verbose" if verbose else "normal"
    _settings["color"] = color


class Progress:
    """A counter of cases judged: rich's progress line, redrawn in place on a terminal
    (at most ten times a second), else one plain line every 10 s.

    ``Progress(label, enabled=...)`` is a context manager; call it with the
    number of cases done (and optionally a total) as work advances.
    ``enabled=False`` shows nothing (``--json``); None decides from ``-q``/``-v``.
    """

    def __init__(self, label: str, *, enabled: bool | None = None,
                 stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = enabled is not False and _settings["level"] != "quiet"
        self._terminal = _can_redraw(self._stream)
        self._every = _EVERY[_settings["level"]] or 0.0
        self.label = label
        self._start = time.monotonic()
        # A log gets its first line after 10 s; a terminal shows the first count at once.
        self._last = self._start
        self._line: rich.progress.Progress | None = None
        self._task: rich.progress.TaskID | None = None

    def __call__(self, done: int, total: int | None = None, detail: str = "") -> None:
        if not self.enabled:
            return
        if self._terminal:
            self._redraw(done, total, detail)
            return
        now = time.monotonic()
        if now - self._last < self._every:
            return
        self._last = now
        text = f"{self.label}: {_count(done, total)}  {detail}".rstrip()
        self._stream.write(f"{text}  [{now - self._start:.0f}s]\n")
        self._stream.flush()

    def _redraw(self, done: int, total: int | None, detail: str) -> None:
        description = _count(done, total)
        now = time.monotonic()
        if self._line is None or self._task is None:
            self._line = _terminal_line(self._stream)
            self._task = self._line.add_task(description, total=total, completed=done,
                                             detail=detail, label=self._label_for(
                                                 self._line.console.width, description,
                                                 detail))
            self._line.start()  # draws the first count at once
            self._last = now
            return
        self._line.update(self._task, description=description, total=total,
                          completed=done, detail=detail,
                          label=self._label_for(self._line.console.width, description,
                                                detail))
        # No refresh thread (a fork pool may start under it): redraw here, throttled,
        # and always for the last case.
        if now - self._last >= _REDRAW or (total is not None and done >= total):
            self._last = now
            self._line.refresh()

    def _label_for(self, width: int, count: str, detail: str) -> str:
        """The label shortened to what the count, the bar, the detail and the time leave
        on a ``width``-column line: its start goes first (the rule's name is at the end)."""
        room = width - len(count) - len(detail) - _BAR - _TIME - 5
        return _shorten_left(f"{self.label}:", max(room, _MIN_LABEL))

    def clear(self) -> None:
        """Take the terminal's line away (a plain line in a log stays)."""
        if self._line is not None:
            self._line.stop()
            self._line, self._task = None, None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.clear()


def _shorten_left(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[len(text) - width + 1:]


def _count(done: int, total: int | None) -> str:
    return f"{done}/{total}" if total is not None else f"{done} cases"


def _terminal_line(stream: TextIO) -> rich.progress.Progress:
    """rich's transient progress line on ``stream``: the label, the count, a bar, the
    detail and the time taken; stdout and stderr are left alone (the report never passes
    through it). The label (often a long path) is shortened from the left to what the
    count, the bar, the detail and the time leave, which stay whole from about 70
    columns up; on a narrower terminal rich cuts what does not fit."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    color = _settings["color"]
    console = Console(file=stream, force_terminal=True, force_jupyter=False,
                      no_color=True if color == "never" else False if color == "always"
                      else None,
                      markup=False, emoji=False, highlight=False)

    def whole() -> Column:
        return Column(no_wrap=True)

    return Progress(TextColumn("{task.fields[label]}", markup=False, table_column=whole()),
                    TextColumn("{task.description}", markup=False, table_column=whole()),
                    BarColumn(bar_width=_BAR, table_column=whole()),
                    TextColumn("{task.fields[detail]}", markup=False,
                               table_column=whole()),
                    TimeElapsedColumn(table_column=whole()),
                    console=console, auto_refresh=False, transient=True,
                    redirect_stdout=False, redirect_stderr=False)


def _can_redraw(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that can redraw a line (TERM=dumb cannot: it
    gets the plain lines of a log)."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
