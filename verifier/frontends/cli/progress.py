"""Progress on a terminal only: a transient status line on stderr.

Nothing is shown when stderr is not a terminal (pipes, CI logs) or with
``--json``, so machine-read output stays exactly one JSON object.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A one-line counter, redrawn at most ten times a second.

    ``Progress(label, enabled=...)`` is a context manager; call it with the
    number of cases done (and optionally a total) as work advances.
    """

    def __init__(self, label: str, *, enabled: bool | None = None,
                 stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = _is_terminal(self._stream)
        self.enabled = enabled
        self.label = label
        self._last = 0.0
        self._width = 0
        self._start = time.monotonic()

    def __call__(self, done: int, total: int | None = None, detail: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and (total is None or done < total):
            return
        self._last = now
        count = f"{done}/{total}" if total is not None else f"{done} cases"
        text = f"{self.label}: {count}  {detail}".rstrip()
        text += f"  [{now - self._start:.0f}s]"
        self._stream.write("\r" + text.ljust(self._width))
        self._stream.flush()
        self._width = len(text)

    def clear(self) -> None:
        if self.enabled and self._width:
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
