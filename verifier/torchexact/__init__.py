"""Exact mode for unmodified torch code (imports torch only when used).

>>> from verifier.torchexact import check_torch_sampler   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "check_torch_sampler",
    "torch_output_distribution",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from verifier.torchexact import api
        return getattr(api, name)
    msg = f"module 'verifier.torchexact' has no attribute {name!r}"
    raise AttributeError(msg)
