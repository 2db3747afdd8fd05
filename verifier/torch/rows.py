"""Probability rows as a torch dtype stores them: the layer under the exact-mode
entry points (:mod:`.api`) and the verdicts that describe their rows (:mod:`.verdict`)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import torch

from specexact.errors import InvalidArgument
from specexact.torch.tensor import GRID_BITS, stored

__all__ = ["dtype_rows", "stored_value", "torch_dtype"]


def torch_dtype(dtype: Any) -> torch.dtype:
    """``"float32"`` (or a torch float dtype) as the torch dtype, validated."""
    tdtype = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
    if not isinstance(tdtype, torch.dtype) or tdtype not in GRID_BITS:
        msg = (f"dtype={dtype!r} is not a supported torch float dtype; valid: 'float32', "
               "'float64', 'float16', 'bfloat16'")
        raise InvalidArgument(msg)
    return tdtype


def dtype_rows(values: Sequence[Fraction], dtype: torch.dtype, name: str
               ) -> tuple[Fraction, ...]:
    """Each exact value rounded to ``dtype`` as torch stores it (a row that need not
    sum to 1: its law is its own normalisation)."""
    out = tuple(stored_value(v, dtype) for v in values)
    if not any(out):
        msg = f"{name} rounds to all zeros in {dtype}"
        raise InvalidArgument(msg)
    return out


def stored_value(v: Fraction, dtype: torch.dtype) -> Fraction:
    """``v`` as ``dtype`` stores it, exactly; an overflow is an invalid argument."""
    x = stored(Fraction(v), dtype)
    if not isinstance(x, Fraction):
        msg = f"probability {v} overflows {dtype}"
        raise InvalidArgument(msg)
    return x
