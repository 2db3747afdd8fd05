"""Compiled and decorated torch functions run as plain Python under exact mode.

A ``torch.jit.script`` function keeps its Python source function as
``_torchdynamo_inline``; ``torch.compile`` wrappers expose
``_torchdynamo_orig_callable`` and ``__wrapped__``; ``torch.no_grad`` and
``torch.inference_mode`` decorators expose ``__wrapped__``.  The innermost
Python function is what gets enumerated.  Only the function handed to
specexact is unwrapped: a scripted helper it calls internally is not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["unwrap"]

_ATTRS = ("_torchdynamo_orig_callable", "_torchdynamo_inline", "__wrapped__", "_orig_mod")


def unwrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The plain Python function behind torch's compiling and grad-mode wrappers."""
    seen: set[int] = set()
    current: Any = fn
    while id(current) not in seen:
        seen.add(id(current))
        for attr in _ATTRS:
            inner = getattr(current, attr, None)
            if inner is not None and callable(inner):
                current = inner
                break
        else:
            break
    return current  # type: ignore[no-any-return]
