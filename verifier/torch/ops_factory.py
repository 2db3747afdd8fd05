"""Factories: zeros/ones/full/empty/arange/tensor, their ``*_like`` and ``new_*`` forms.

``empty``-like factories fill with :class:`~specexact.torch.values.Uninit`
markers naming the call site; reading one into a result is a finding.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.torch.ops_shape import size_args
from specexact.torch.tensor import (
    ExactTensor,
    as_exact,
    as_int,
    cast,
    element_for,
    is_float,
    make,
    read_scalar,
    scalar_operand,
    tensor_from_data,
)
from specexact.torch.values import Uninit, user_location

__all__ = ["FACTORY"]



def _index_array(t: ExactTensor) -> np.ndarray[Any, Any]:
    vals = [as_int(read_scalar(v, "an index")) for v in t.arr.reshape(-1)]
    return np.array(vals, dtype=np.int64).reshape(t.arr.shape)


def _dtype(kwargs: dict[str, Any], default: torch.dtype | None = None) -> torch.dtype:
    dt = kwargs.get("dtype")
    return dt if dt is not None else (default or torch.get_default_dtype())


def _filled(shape: tuple[int, ...], value: Any, dtype: torch.dtype) -> ExactTensor:
    arr = np.empty(shape, dtype=object)
    arr[...] = np.asarray(_box(scalar_operand(value, dtype)), dtype=object)
    return make(arr, dtype)


def _box(v: Any) -> np.ndarray[Any, Any]:
    a = np.empty((), dtype=object)
    a[()] = v
    return a


def zeros(*size: Any, **kwargs: Any) -> ExactTensor:
    return _filled(size_args(size), 0, _dtype(kwargs))


def ones(*size: Any, **kwargs: Any) -> ExactTensor:
    return _filled(size_args(size), 1, _dtype(kwargs))


def full(size: Any, fill_value: Any, **kwargs: Any) -> ExactTensor:
    default = None
    if isinstance(fill_value, bool):
        default = torch.bool
    elif isinstance(fill_value, int):
        default = torch.int64
    return _filled(size_args((size,)), fill_value, _dtype(kwargs, default))


def empty(*size: Any, **kwargs: Any) -> ExactTensor:
    return _uninit(size_args(size), _dtype(kwargs), "torch.empty")


def _uninit(shape: tuple[int, ...], dtype: torch.dtype, name: str) -> ExactTensor:
    arr = np.empty(shape, dtype=object)
    arr[...] = _box(Uninit(f"{name} at {user_location()}"))
    return make(arr, dtype)


def _like(fn_name: str) -> Any:
    def fn(input: Any, *args: Any, **kwargs: Any) -> ExactTensor:
        t = as_exact(input)
        dt = _dtype(kwargs, t.dtype)
        shape = tuple(t.arr.shape)
        if fn_name == "empty":
            return _uninit(shape, dt, "torch.empty_like")
        if fn_name == "full":
            return _filled(shape, args[0] if args else kwargs["fill_value"], dt)
        return _filled(shape, 0 if fn_name == "zeros" else 1, dt)

    return fn


def _new(fn_name: str) -> Any:
    def fn(self: Any, *args: Any, **kwargs: Any) -> ExactTensor:
        t = as_exact(self)
        dt = _dtype(kwargs, t.dtype)
        if fn_name == "tensor":
            return tensor_from_data(args[0] if args else kwargs["data"], dt)
        if fn_name == "full":
            return _filled(size_args((args[0],)), args[1] if len(args) > 1
                           else kwargs["fill_value"], dt)
        shape = size_args(args)
        if fn_name == "empty":
            return _uninit(shape, dt, "Tensor.new_empty")
        return _filled(shape, 0 if fn_name == "zeros" else 1, dt)

    return fn


def tensor(data: Any, **kwargs: Any) -> ExactTensor:
    return tensor_from_data(data, kwargs.get("dtype"))


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> ExactTensor:
    if isinstance(data, torch.Tensor):
        t = as_exact(data)
        return t if dtype is None else cast(t, dtype)
    return tensor_from_data(data, dtype)


def arange(*args: Any, **kwargs: Any) -> ExactTensor:
    vals = [Fraction(a) if not isinstance(a, torch.Tensor)
            else Fraction(read_scalar(as_exact(a).arr.reshape(-1)[0], "arange"))
            for a in args]
    start, step = Fraction(0), Fraction(1)
    if len(vals) == 1:
        end = vals[0]
    elif len(vals) == 2:
        start, end = vals
    else:
        start, end, step = vals[:3]
    integral = all(v.denominator == 1 for v in vals) and not any(
        isinstance(a, float) for a in args)
    dt = _dtype(kwargs, torch.int64 if integral else None)
    out = []
    x = start
    while (x < end) if step > 0 else (x > end):
        out.append(element_for(int(x) if not is_float(dt) else x, dt))
        x += step
    arr = np.empty(len(out), dtype=object)
    arr[:] = out
    return make(arr, dt)


def one_hot(tensor: Any, num_classes: int = -1) -> ExactTensor:
    t = as_exact(tensor)
    idx = _index_array(t)
    n = num_classes if num_classes >= 0 else int(idx.max()) + 1
    arr = np.empty((*idx.shape, n), dtype=object)
    arr[...] = _box(0)
    for pos in np.ndindex(*idx.shape):
        arr[(*pos, int(idx[pos]))] = 1
    return make(arr, torch.int64)


FACTORY: dict[str, Any] = {
    "zeros": zeros, "ones": ones, "full": full, "empty": empty,
    "zeros_like": _like("zeros"), "ones_like": _like("ones"), "full_like": _like("full"),
    "empty_like": _like("empty"), "new_zeros": _new("zeros"), "new_ones": _new("ones"),
    "new_full": _new("full"), "new_empty": _new("empty"), "new_tensor": _new("tensor"),
    "tensor": tensor, "as_tensor": as_tensor, "arange": arange, "one_hot": one_hot,
}
