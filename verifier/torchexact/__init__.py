"""Exact mode for unmodified torch code (imports torch only when used).

>>> from verifier.torchexact import check_torch_sampler   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "check_torch_sampler",
    "torch_output_distribution",
    "torch_step",
]

_HOME = {"check_torch_sampler": "api", "torch_output_distribution": "api",
         "torch_step": "steps"}


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib
        module = importlib.import_module(f"verifier.torchexact.{_HOME[name]}")
        return getattr(module, name)
    msg = f"module 'verifier.torchexact' has no attribute {name!r}"
    raise AttributeError(msg)
