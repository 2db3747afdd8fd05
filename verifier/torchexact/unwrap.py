"""Compiled and decorated torch functions run as plain Python under exact mode.

``torch.jit.script`` functions keep the original Python function
(``ScriptFunction`` has no ``__wrapped__`` but scripted functions are made
from one we can find through ``__original_fn``/``_torchdynamo_orig_callable``);
``torch.compile``, ``torch.no_grad`` and ``torch.inference_mode`` wrappers
expose ``__wrapped__``.  The wrapped Python function is what gets enumerated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["unwrap"]

_ATTRS = ("_torchdynamo_orig_callable", "__original_fn", "__wrapped__", "_orig_mod")


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
