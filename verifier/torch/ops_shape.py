"""Shape and indexing ops on exact tensors, and reading values out."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.exact.random_source import LazyToken
from specexact.torch.tensor import (
    ExactTensor,
    as_exact,
    as_int,
    cast,
    convert,
    is_float,
    make,
    read_scalar,
    scalar_operand,
    tensor_from_data,
)
from specexact.torch.values import Special, Uninit, dtype_semantics, unsupported

__all__ = ["SHAPE", "same", "size_args"]


def size_args(args: Sequence[Any]) -> tuple[int, ...]:
    """A size as torch ops take it: ``f(2, 3)`` or ``f((2, 3))``, ints or 0-d tensors."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
        args = tuple(args[0])
    return tuple(as_int(a) for a in args)


def _dim(d: Any, ndim: int) -> int:
    i: int = as_int(d)
    return i + max(ndim, 1) if i < 0 else i


# -- reading values -----------------------------------------------------------


def _one(t: ExactTensor, what: str) -> Any:
    if t.arr.size != 1:
        raise RuntimeError(f"a Tensor with {t.arr.size} elements cannot be converted to "
                           f"Scalar ({what})")
    return read_scalar(t.arr.reshape(-1)[0], what)


def item(self: Any) -> Any:
    t = as_exact(self)
    return _python_number(_one(t, "Tensor.item()"), t.dtype)


def _python_number(x: Any, dtype: torch.dtype) -> Any:
    """A value read into Python: in dtype semantics a float dtype's value is the Python
    float torch returns (exactly that value), so Python arithmetic on it is float64's."""
    if type(x) is Fraction and dtype.is_floating_point and dtype_semantics():
        return float(x)
    return x


def to_bool(self: Any) -> bool:
    t = as_exact(self)
    if t.arr.size != 1:
        raise RuntimeError(f"Boolean value of Tensor with {t.arr.size} values is ambiguous")
    return bool(convert(_one(t, "bool(tensor)"), torch.bool))


def to_int(self: Any) -> Any:
    x = _one(as_exact(self), "int(tensor)")
    return x.value() if isinstance(x, LazyToken) else int(x)  # int() fixes the token


def to_index(self: Any) -> Any:
    t = as_exact(self)
    if is_float(t.dtype) or t.dtype == torch.bool:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return as_int(_one(t, "a tensor used as an index"))


def to_float(self: Any) -> float:
    x = _one(as_exact(self), "float(tensor)")
    return float(x)


def tolist(self: Any) -> Any:
    t = as_exact(self)

    def conv(x: Any) -> Any:
        if isinstance(x, Uninit):
            return read_scalar(x, "Tensor.tolist()")
        return x.value if isinstance(x, Special) else _python_number(x, t.dtype)

    if t.arr.ndim == 0:
        return conv(t.arr[()])
    return np.frompyfunc(conv, 1, 1)(t.arr).tolist()


def length(self: Any) -> int:
    t = as_exact(self)
    if t.arr.ndim == 0:
        raise TypeError("len() of a 0-d tensor")
    return int(t.arr.shape[0])


def iterate(self: Any) -> Any:
    t = as_exact(self)
    return iter([getitem(t, i) for i in range(t.arr.shape[0])])


def size(self: Any, dim: Any = None) -> Any:
    t = as_exact(self)
    if dim is None:
        return torch.Size(t.arr.shape)
    return int(t.arr.shape[_dim(dim, t.arr.ndim)])


def numel(self: Any) -> int:
    return int(as_exact(self).arr.size)


def dim(self: Any) -> int:
    return int(as_exact(self).arr.ndim)


def represent(self: Any, *args: Any, **kwargs: Any) -> str:
    t = as_exact(self)
    return f"ExactTensor({t.arr.tolist()!r}, dtype={t.dtype})"


def format_(self: Any, spec: str) -> str:
    t = as_exact(self)
    if t.arr.size == 1 and spec:
        return format(float(read_scalar(t.arr.reshape(-1)[0], "format")), spec)
    return represent(t)


def _box(v: Any) -> np.ndarray[Any, Any]:
    a = np.empty((), dtype=object)
    a[()] = v
    return a


# -- indexing ---------------------------------------------------------------------


def _index_part(i: Any) -> Any:
    if isinstance(i, torch.Tensor):
        t = as_exact(i)
        if t.dtype == torch.bool:
            vals = [bool(convert(read_scalar(v, "a boolean mask")
                                 if isinstance(v, Uninit) else v, torch.bool))
                    for v in t.arr.reshape(-1)]
            return np.array(vals, dtype=bool).reshape(t.arr.shape)
        if is_float(t.dtype):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if t.arr.ndim == 0:
            return as_int(read_scalar(t.arr[()], "an index"))
        vals = [as_int(read_scalar(v, "an index")) for v in t.arr.reshape(-1)]
        return np.array(vals, dtype=np.int64).reshape(t.arr.shape)
    if isinstance(i, slice):
        return slice(*(None if v is None else as_int(v)
                       for v in (i.start, i.stop, i.step)))
    if isinstance(i, (list, tuple)):
        values = [as_int(_index_part(v)) if not isinstance(v, bool) else v for v in i]
        # torch reads [] as an empty long index (numpy would make it float64 and refuse)
        mask = bool(values) and all(isinstance(v, bool) for v in values)
        return np.array(values, dtype=bool if mask else np.int64)
    if i is None or i is Ellipsis:
        return i
    return as_int(i)


def convert_index(idx: Any) -> Any:
    parts = idx if isinstance(idx, tuple) else (idx,)
    out = tuple(_index_part(p) for p in parts)
    if not any(isinstance(p, np.ndarray) for p in out) and Ellipsis not in out:
        out = (*out, Ellipsis)  # keeps numpy returning a (0-d) view, as torch does
    return out


def getitem(self: Any, idx: Any) -> ExactTensor:
    t = as_exact(self)
    res = t.arr[convert_index(idx)]
    return make(res if isinstance(res, np.ndarray) else _box(res), t.dtype)


def _values_for(target: ExactTensor, value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return cast(as_exact(value), target.dtype).arr
    arr = np.empty((), dtype=object)
    arr[()] = scalar_operand(value, target.dtype)
    return arr


def setitem(self: Any, idx: Any, value: Any) -> None:
    t = as_exact(self)
    t.arr[convert_index(idx)] = _values_for(t, value)


def index_put(self: Any, indices: Any, values: Any, accumulate: bool = False) -> ExactTensor:
    t = clone(self)
    return index_put_(t, indices, values, accumulate)


def index_put_(self: Any, indices: Any, values: Any, accumulate: bool = False) -> ExactTensor:
    t = as_exact(self)
    idx = tuple(_index_part(i) for i in indices)
    if accumulate:
        raise unsupported("index_put_ with accumulate=True")
    t.arr[idx] = _values_for(t, values)
    return t


def write_into(target: ExactTensor, result: Any) -> ExactTensor:
    """The in-place half of ``op_``: write ``result`` into ``target`` in its dtype."""
    target.arr[...] = _values_for(target, result)
    return target


def copy_(self: Any, src: Any, non_blocking: bool = False) -> ExactTensor:
    return write_into(as_exact(self), src)


def fill_(self: Any, value: Any) -> ExactTensor:
    return write_into(as_exact(self), value)


def zero_(self: Any) -> ExactTensor:
    return write_into(as_exact(self), 0)


def gather(input: Any, dim: Any, index: Any, *, sparse_grad: bool = False) -> ExactTensor:
    t = as_exact(input)
    idx = _index_part(as_exact(index))
    return make(np.take_along_axis(t.arr, np.asarray(idx), axis=_dim(dim, t.arr.ndim)),
                t.dtype)


def take_along_dim(input: Any, indices: Any, dim: Any = None) -> ExactTensor:
    t = as_exact(input)
    if dim is None:
        flat = make(t.arr.reshape(-1), t.dtype)
        return gather(flat, 0, make(as_exact(indices).arr.reshape(-1), torch.int64))
    return gather(t, dim, indices)


def scatter(input: Any, dim: Any, index: Any, src: Any = None, *, value: Any = None,
            reduce: Any = None) -> ExactTensor:
    return scatter_(clone(input), dim, index, src, value=value, reduce=reduce)


def scatter_(self: Any, dim: Any, index: Any, src: Any = None, *, value: Any = None,
             reduce: Any = None) -> ExactTensor:
    t = as_exact(self)
    if reduce is not None:
        raise unsupported(f"scatter with reduce={reduce!r}")
    idx = np.asarray(_index_part(as_exact(index)))
    src = value if src is None else src
    if isinstance(src, torch.Tensor):
        s = cast(as_exact(src), t.dtype).arr
        s = s[tuple(slice(0, n) for n in idx.shape)]
    else:
        s = np.empty(idx.shape, dtype=object)
        s.reshape(-1)[:] = [scalar_operand(src, t.dtype)] * idx.size
    d = _dim(dim, t.arr.ndim)
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[d] = int(idx[pos])
        t.arr[tuple(target)] = s[pos]
    return t


def index_select(input: Any, dim: Any, index: Any) -> ExactTensor:
    t = as_exact(input)
    idx = np.asarray(_index_part(as_exact(index))).reshape(-1)
    return make(np.take(t.arr, idx, axis=_dim(dim, t.arr.ndim)), t.dtype)


def nonzero(input: Any, *, as_tuple: bool = False) -> Any:
    t = as_exact(input)
    flags = np.array([bool(convert(read_scalar(v, "nonzero"), torch.bool))
                      for v in t.arr.reshape(-1)], dtype=bool).reshape(t.arr.shape)
    where = np.nonzero(flags)
    if as_tuple:
        return tuple(tensor_from_data([int(i) for i in w], torch.int64) for w in where)
    rows = np.stack(where, axis=-1) if where else np.zeros((0, 0))
    return tensor_from_data([[int(i) for i in r] for r in rows], torch.int64) \
        if len(rows) else make(np.empty((0, t.arr.ndim), dtype=object), torch.int64)


# -- shapes ----------------------------------------------------------------------


def view(self: Any, *shape: Any) -> ExactTensor:
    t = as_exact(self)
    if len(shape) == 1 and isinstance(shape[0], torch.dtype):
        raise unsupported("Tensor.view(dtype) (reinterpreting bits)")
    return make(t.arr.reshape(size_args(shape)), t.dtype)


def reshape(self: Any, *shape: Any) -> ExactTensor:
    return view(self, *shape)


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> ExactTensor:
    t = as_exact(input)
    shape = list(t.arr.shape)
    if not shape:
        return make(t.arr.reshape(1), t.dtype)
    s, e = _dim(start_dim, len(shape)), _dim(end_dim, len(shape))
    new = [*shape[:s], int(np.prod(shape[s:e + 1], dtype=np.int64)), *shape[e + 1:]]
    return make(t.arr.reshape(new), t.dtype)


def expand(self: Any, *sizes: Any) -> ExactTensor:
    t = as_exact(self)
    want = list(size_args(sizes))
    have = [1] * (len(want) - t.arr.ndim) + list(t.arr.shape)
    final = [h if w == -1 else w for w, h in zip(want, have, strict=True)]
    return make(np.broadcast_to(t.arr.reshape(have), final), t.dtype)


def view_as(self: Any, other: Any) -> ExactTensor:
    return view(self, tuple(as_exact(other).arr.shape))


def broadcast_to(input: Any, size: Any) -> ExactTensor:
    return expand(input, size)


def expand_as(self: Any, other: Any) -> ExactTensor:
    return expand(self, *as_exact(other).arr.shape)


def repeat(self: Any, *sizes: Any) -> ExactTensor:
    t = as_exact(self)
    reps = size_args(sizes)
    arr = t.arr.reshape((1,) * (len(reps) - t.arr.ndim) + t.arr.shape)
    return make(np.tile(arr, reps), t.dtype)


def _repeat_counts(repeats: Any) -> Any:
    counts = _index_part(as_exact(repeats)) if isinstance(repeats, torch.Tensor) \
        else as_int(repeats)
    if np.any(np.asarray(counts) < 0):
        raise RuntimeError("repeats can not be negative")
    return counts


def repeat_interleave(input: Any, repeats: Any = None, dim: Any = None, *,
                      output_size: Any = None) -> ExactTensor:
    """``torch.repeat_interleave``: each element (along ``dim``; of the flattened tensor
    when ``dim`` is None) repeated; with one 1-D count tensor, the indices repeated."""
    if repeats is None:  # repeat_interleave(counts): 0..n-1, each its count's times
        counts = _repeat_counts(input)
        out = np.repeat(np.arange(len(np.atleast_1d(counts))), counts)
        result = make(np.array([int(i) for i in out], dtype=object), torch.int64)
    else:
        t = as_exact(input)
        counts = _repeat_counts(repeats)
        arr = t.arr.reshape(-1) if dim is None else t.arr
        axis = 0 if dim is None else _dim(dim, t.arr.ndim)
        result = make(np.repeat(arr, counts, axis=axis), t.dtype)
    if output_size is not None and as_int(output_size) != result.arr.shape[
            0 if dim is None else _dim(dim, result.arr.ndim)]:
        raise RuntimeError("allocated size does not match required size")
    return result


def unsqueeze(input: Any, dim: Any) -> ExactTensor:
    t = as_exact(input)
    d = as_int(dim)
    d = d + t.arr.ndim + 1 if d < 0 else d
    return make(np.expand_dims(t.arr, d), t.dtype)


def squeeze(input: Any, *dims: Any, dim: Any = None) -> ExactTensor:
    t = as_exact(input)
    if dims:
        dim = dims[0] if len(dims) == 1 else dims
    if dim is None:
        return make(np.squeeze(t.arr), t.dtype)
    wanted = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    ds = tuple(d for d in (_dim(x, t.arr.ndim) for x in wanted) if t.arr.shape[d] == 1)
    return make(np.squeeze(t.arr, axis=ds) if ds else t.arr, t.dtype)


def _common(tensors: Sequence[Any]) -> tuple[list[ExactTensor], torch.dtype]:
    ts = [as_exact(x) for x in tensors]
    dt = ts[0].dtype
    for x in ts[1:]:
        dt = torch.promote_types(dt, x.dtype)
    return [cast(x, dt) for x in ts], dt


def cat(tensors: Sequence[Any], dim: Any = 0, *, out: Any = None) -> ExactTensor:
    ts, dt = _common([x for x in tensors if not (as_exact(x).arr.ndim == 1
                                                  and as_exact(x).arr.size == 0)] or tensors)
    return make(np.concatenate([x.arr for x in ts], axis=_dim(dim, ts[0].arr.ndim)), dt)


def pad(input: Any, pad: Sequence[Any], mode: str = "constant", value: Any = None
        ) -> ExactTensor:
    """``F.pad`` in its constant mode: ``pad`` is (before, after) per dimension from the
    last; a negative amount crops, as in torch."""
    if mode != "constant":
        raise unsupported(f"F.pad with mode={mode!r} (only mode='constant' is modelled)")
    t = as_exact(input)
    amounts = [as_int(a) for a in pad]
    if len(amounts) % 2 or len(amounts) // 2 > t.arr.ndim:
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the "
                           "number of dimensions of the input")
    fill = scalar_operand(0 if value is None else value, t.dtype)
    arr = t.arr
    for i in range(len(amounts) // 2):
        axis = arr.ndim - 1 - i
        before, after = amounts[2 * i], amounts[2 * i + 1]
        n = arr.shape[axis]
        keep = [slice(None)] * arr.ndim
        keep[axis] = slice(max(-before, 0), n - max(-after, 0))
        arr = arr[tuple(keep)]
        shape = list(arr.shape)
        shape[axis] += max(before, 0) + max(after, 0)
        grown = np.empty(shape, dtype=object)
        grown[...] = fill
        place = [slice(None)] * arr.ndim
        place[axis] = slice(max(before, 0), max(before, 0) + arr.shape[axis])
        grown[tuple(place)] = arr
        arr = grown
    return make(arr.copy(), t.dtype)


def stack(tensors: Sequence[Any], dim: Any = 0, *, out: Any = None) -> ExactTensor:
    ts, dt = _common(tensors)
    d = as_int(dim)
    d = d + ts[0].arr.ndim + 1 if d < 0 else d
    return make(np.stack([x.arr for x in ts], axis=d), dt)


def flip(input: Any, dims: Any) -> ExactTensor:
    t = as_exact(input)
    ds = tuple(_dim(d, t.arr.ndim) for d in (dims if isinstance(dims, (list, tuple))
                                             else (dims,)))
    return make(np.flip(t.arr, axis=ds).copy(), t.dtype)  # torch.flip copies


def transpose(input: Any, dim0: Any, dim1: Any) -> ExactTensor:
    t = as_exact(input)
    return make(np.swapaxes(t.arr, _dim(dim0, t.arr.ndim), _dim(dim1, t.arr.ndim)), t.dtype)


def permute(input: Any, *dims: Any) -> ExactTensor:
    t = as_exact(input)
    return make(np.transpose(t.arr, tuple(_dim(d, t.arr.ndim) for d in size_args(dims))), t.dtype)


def t_(input: Any) -> ExactTensor:
    t = as_exact(input)
    return make(t.arr.T, t.dtype)


def clone(input: Any, *, memory_format: Any = None) -> ExactTensor:
    t = as_exact(input)
    return make(t.arr.copy(), t.dtype)


def same(input: Any, *args: Any, **kwargs: Any) -> ExactTensor:
    return as_exact(input)


def contiguous(self: Any, memory_format: Any = None) -> ExactTensor:
    """Itself when already contiguous, else a contiguous copy (as torch)."""
    t = as_exact(self)
    if t.arr.flags["C_CONTIGUOUS"]:
        return t
    return make(np.ascontiguousarray(t.arr), t.dtype)


def to(self: Any, *args: Any, **kwargs: Any) -> ExactTensor:
    t = as_exact(self)
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, torch.Tensor):
            dtype = a.dtype
    out = t if dtype is None else cast(t, dtype)
    if kwargs.get("copy") and out is t:
        out = clone(t)
    return out


def as_type(dtype: torch.dtype) -> Any:
    def fn(self: Any, memory_format: Any = None) -> ExactTensor:
        return cast(as_exact(self), dtype)

    return fn


def type_as(self: Any, other: Any) -> ExactTensor:
    return cast(as_exact(self), other.dtype)


def type_(self: Any, dtype: Any = None, non_blocking: bool = False) -> Any:
    if dtype is None:
        return "torch." + {torch.float32: "FloatTensor", torch.float64: "DoubleTensor",
                           torch.int64: "LongTensor", torch.bool: "BoolTensor"}.get(
            as_exact(self).dtype, "Tensor")
    return cast(as_exact(self), dtype)


def split(input: Any, split_size: Any, dim: int = 0) -> tuple[ExactTensor, ...]:
    t = as_exact(input)
    d = _dim(dim, t.arr.ndim)
    n = t.arr.shape[d]
    if isinstance(split_size, int):
        bounds = list(range(split_size, n, split_size))
    else:
        bounds = list(np.cumsum(split_size)[:-1])
    return tuple(make(a, t.dtype) for a in np.split(t.arr, bounds, axis=d))


def unbind(input: Any, dim: int = 0) -> tuple[ExactTensor, ...]:
    t = as_exact(input)
    d = _dim(dim, t.arr.ndim)
    return tuple(make(np.take(t.arr, i, axis=d), t.dtype) for i in range(t.arr.shape[d]))


SHAPE: dict[str, Any] = {
    "item": item, "__bool__": to_bool, "__int__": to_int, "__index__": to_index,
    "__float__": to_float, "tolist": tolist, "__len__": length, "__iter__": iterate,
    "size": size, "numel": numel, "nelement": numel, "dim": dim, "ndimension": dim,
    "__repr__": represent, "__str__": represent, "__format__": format_,
    "__getitem__": getitem, "__setitem__": setitem, "index_put_": index_put_,
    "index_put": index_put, "copy_": copy_, "fill_": fill_, "zero_": zero_,
    "gather": gather, "take_along_dim": take_along_dim, "scatter": scatter, "scatter_": scatter_,
    "index_select": index_select, "nonzero": nonzero,
    "view": view, "view_as": view_as, "broadcast_to": broadcast_to, "reshape": reshape,
    "flatten": flatten, "expand": expand,
    "expand_as": expand_as, "repeat": repeat, "repeat_interleave": repeat_interleave,
    "unsqueeze": unsqueeze, "squeeze": squeeze,
    "pad": pad, "cat": cat, "concat": cat, "concatenate": cat, "stack": stack, "flip": flip,
    "transpose": transpose, "swapaxes": transpose, "permute": permute, "t": t_,
    "clone": clone, "contiguous": contiguous, "detach": same, "cpu": same, "cuda": same,
    "requires_grad_": same, "to": to, "float": as_type(torch.float32),
    "double": as_type(torch.float64), "long": as_type(torch.int64),
    "int": as_type(torch.int32), "bool": as_type(torch.bool),
    "half": as_type(torch.float16), "bfloat16": as_type(torch.bfloat16),
    "type_as": type_as, "type": type_, "split": split, "unbind": unbind,
}
