"""Finding a rule by name, with close names suggested when there is none."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Protocol, TypeVar

__all__ = ["by_name"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


def by_name(items: Iterable[N], name: str, what: str) -> N:
    """The item called ``name``; KeyError ``no {what} named ...`` listing close names."""
    pool = tuple(items)
    for item in pool:
        if item.name == name:
            return item
    close = difflib.get_close_matches(name, [i.name for i in pool], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"no {what} named {name!r}{hint}")
