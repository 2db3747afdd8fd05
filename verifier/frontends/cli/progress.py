"""Progress on stderr: a transient status line on a terminal, a plain line every 10 s
elsewhere (CI logs, pipes), nothing with ``-q`` or ``--json``.

The report itself (stdout) never depends on progress: the lines go to stderr
and say only how many cases were judged and how long it has run.
"""

from __future__ import annotations

import math
import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress", "configure"]

#: Seconds between plain lines when stderr is not a terminal (``-v``: every second).
_EVERY = {"quiet": None, "normal": 10.0, "verbose": 1.0}
_level = ["normal"]


def configure(*, quiet: bool = False, verbose: bool = False) -> None:
    """Set how chatty progress is for this command (the CLI's ``-q`` and ``-v``)."""
    _level[0] = "quiet" if quiet else "verbose" if verbose else "normal"


class Progress:
    """A counter of cases judged: redrawn in place on a terminal (at most ten times a
    second), else one line every 10 s.

    ``Progress(label, enabled=...)`` is a context manager; call it with the
    number of cases done (and optionally a total) as work advances.
    ``enabled=False`` shows nothing (``--json``); None decides from ``-q``/``-v``.
    """

    def __init__(self, label: str, *, enabled: bool | None = None,
                 stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = enabled is not False and _level[0] != "quiet"
        self._terminal = _is_terminal(self._stream)
        self._every = 0.1 if self._terminal else (_EVERY[_level[0]] or 0.0)
        self.label = label
        self._start = time.monotonic()
        # A terminal shows the first count at once; a log gets its first line after 10 s.
        self._last = -math.inf if self._terminal else self._start
        self._width = 0

    def __call__(self, done: int, total: int | None = None, detail: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < self._every and (total is None or done < total
                                               or not self._terminal):
            return
        self._last = now
        count = f"{done}/{total}" if total is not None else f"{done} cases"
        text = f"{self.label}: {count}  {detail}".rstrip()
        text += f"  [{now - self._start:.0f}s]"
        if self._terminal:
            self._stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self._stream.write(text + "\n")
        self._stream.flush()

    def clear(self) -> None:
        if self.enabled and self._terminal and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.clear()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
