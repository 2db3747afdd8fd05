"""Context-local collectors: a block gathers what deeper layers noticed while it ran.

A :class:`Collector` is a list that exists only inside :meth:`Collector.collecting`
(per thread and per asyncio task, as a :class:`contextvars.ContextVar`); outside it,
:meth:`Collector.current` is None and deeper code records nothing.

>>> notes: Collector[str] = Collector("example_notes")
>>> notes.current() is None
True
>>> with notes.collecting() as found:
...     notes.current().append("seen")
>>> found
['seen']
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

__all__ = ["Collector"]

T = TypeVar("T")


class Collector(Generic[T]):
    """One named, context-local list, live while :meth:`collecting` runs (nestable:
    the innermost block collects)."""

    def __init__(self, name: str) -> None:
        self._var: ContextVar[list[T] | None] = ContextVar(name, default=None)

    @contextmanager
    def collecting(self) -> Iterator[list[T]]:
        """A fresh list that collects while the block runs, and keeps what it got."""
        found: list[T] = []
        token = self._var.set(found)
        try:
            yield found
        finally:
            self._var.reset(token)

    def current(self) -> list[T] | None:
        """The list of the innermost :meth:`collecting` block, or None outside one."""
        return self._var.get()
