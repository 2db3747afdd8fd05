"""Compiled and decorated torch functions run as plain Python under exact mode.

A ``torch.jit.script`` function keeps its Python source function as
``_torchdynamo_inline``; ``torch.compile`` wrappers expose
``_torchdynamo_orig_callable`` and ``__wrapped__``; ``torch.no_grad`` and
``torch.inference_mode`` decorators expose ``__wrapped__``.  The innermost
Python function is what gets enumerated.  The function handed to specexact is
unwrapped by :func:`unwrap`; a scripted helper it calls internally runs as its
Python source through :func:`scripted_as_python`, which exact mode installs
for the duration of each execution (the TorchScript interpreter would run
torch's own kernels on exact tensors, which have no data).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["positional_arity", "scripted_as_python", "unwrap"]

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


def positional_arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments ``fn`` requires (3 when it takes ``*args``): the
    torch signatures hand a generator (or per-row generators) to code that has room."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 3
    return sum(1 for p in params if p.kind in kinds and p.default is inspect.Parameter.empty)


def _script_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        source = getattr(self, "_torchdynamo_inline", None)
        if source is None:  # no Python source kept (a function loaded from a file)
            return original(self, *args, **kwargs)
        return source(*args, **kwargs)

    return call


@contextmanager
def scripted_as_python() -> Iterator[None]:
    """While active, every ``torch.jit.script`` function runs as its Python source.

    ``ScriptFunction.__call__`` is swapped on the class (calls already compiled
    into other scripted code are not reached, but those callers run as Python
    too); the original is restored on exit.
    """
    import torch

    cls: Any = torch._C.ScriptFunction
    original = cls.__call__
    cls.__call__ = _script_call(original)
    try:
        yield
    finally:
        cls.__call__ = original
