"""Reductions, scans, sorting and softmax on exact tensors, and noise races.

A row reduction moves the reduced axis last and walks rows in Python.  Ties
go to the lowest index (torch's rule for max/argmax; for ``sort``/``topk``
torch leaves tie order unspecified, here it is stable).  NaN propagates as
in torch: ``max``/``argmax`` return the first NaN and its index, ``sort``
puts NaN last (first when descending).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.numbers import ZERO
from specexact.torch import grid, realops
from specexact.torch.kernels import div_scalar, exp_scalar, log_scalar
from specexact.torch.noise import LogE, NoiseRecord, Opaque, PendingRace, Race, Scaled
from specexact.torch.ops_elementwise import maximum, minimum
from specexact.torch.tensor import (
    ExactTensor,
    as_exact,
    as_int,
    cast,
    convert,
    is_float,
    make,
    read_scalar,
)
from specexact.torch.values import Special, Uninit, dtype_semantics, unsupported

__all__ = ["REDUCE"]


def _axis(t: ExactTensor, dim: Any) -> int:
    d: int = as_int(dim)
    return d + max(t.arr.ndim, 1) if d < 0 else d


def _rows(t: ExactTensor, dim: Any) -> tuple[list[list[Any]], tuple[int, ...], int]:
    """Rows along ``dim`` (None: the flattened tensor) and the shape of the rest."""
    if dim is None or t.arr.ndim == 0:
        return [list(t.arr.reshape(-1))], (), -1
    d = _axis(t, dim)
    moved = np.moveaxis(t.arr, d, -1)
    rest = tuple(moved.shape[:-1])
    return [list(r) for r in moved.reshape(-1, moved.shape[-1])], rest, d


def _build(values: list[Any], rest: tuple[int, ...], dtype: torch.dtype, keep: int | None,
           d: int) -> ExactTensor:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values if values else []
    out = arr.reshape(rest) if rest else arr.reshape(())
    if keep is not None and d >= 0:
        out = np.expand_dims(out, d)
    return make(out, dtype)


def _width(t: ExactTensor, d: int) -> int:
    """The length of ``t``'s rows along ``d`` (-1: the flattened tensor)."""
    return int(t.arr.shape[d]) if d >= 0 else int(t.arr.size)


def _build_rows(rows: list[list[Any]], rest: tuple[int, ...], dtype: torch.dtype, d: int,
                ndim: int, width: int = 0) -> ExactTensor:
    """The rows back in place along ``d``; ``width`` is the row length when there are
    no rows (an empty tensor keeps its reduced-along size, as in torch)."""
    n = len(rows[0]) if rows else width
    arr = np.empty((len(rows), n), dtype=object)
    for i, r in enumerate(rows):
        arr[i, :] = r
    out = arr.reshape((*rest, n))
    if d >= 0:
        return make(np.moveaxis(out, -1, d), dtype)
    out = out.reshape(-1) if ndim else out.reshape(())
    return make(out, dtype)


# -- sums and scans ----------------------------------------------------------------


def _sum_row(row: list[Any], float_out: bool) -> Any:
    total: Any = ZERO if float_out else 0
    for x in row:
        total = total + (int(x) if isinstance(x, bool) else x)
    return total


def _sum_dtype(t: ExactTensor, dtype: Any) -> torch.dtype:
    if dtype is not None:
        return dtype  # type: ignore[no-any-return]
    return t.dtype if is_float(t.dtype) else torch.int64


def sum_(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    t = as_exact(input)
    out_dt = _sum_dtype(t, dtype)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    if len(dims) > 1:
        for d in sorted((_axis(t, x) for x in dims), reverse=True):
            t = sum_(t, d, keepdim, dtype=out_dt)
        return t
    rows, rest, d = _rows(cast(t, out_dt), dims[0])
    vals = [_sum_row(r, is_float(out_dt)) for r in rows]
    return _build(vals, rest, out_dt, 1 if keepdim else None, d)


def mean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    t = as_exact(input)
    if not is_float(t.dtype) and dtype is None:
        raise RuntimeError("mean(): could not infer output dtype; input is not floating point")
    s = sum_(t, dim, keepdim, dtype=dtype)
    n = t.arr.size // max(s.arr.size, 1) if t.arr.size else 1
    return make(np.frompyfunc(lambda x: div_scalar(x, Fraction(n)), 1, 1)(s.arr)
                if s.arr.ndim else _box(div_scalar(s.arr[()], Fraction(n))), s.dtype)


def _box(v: Any) -> np.ndarray[Any, Any]:
    a = np.empty((), dtype=object)
    a[()] = v
    return a


def prod(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    t = as_exact(input)
    out_dt = _sum_dtype(t, dtype)
    rows, rest, d = _rows(cast(t, out_dt), dim)
    vals = [functools.reduce(operator.mul, r, Fraction(1) if is_float(out_dt) else 1)
            for r in rows]
    return _build(vals, rest, out_dt, 1 if keepdim else None, d)


def _scan(op: Callable[[Any, Any], Any]) -> Callable[..., ExactTensor]:
    def fn(input: Any, dim: Any, *, dtype: Any = None) -> ExactTensor:
        t = as_exact(input)
        out_dt = _sum_dtype(t, dtype)
        rows, rest, d = _rows(cast(t, out_dt), dim)
        out = []
        for r in rows:
            acc: list[Any] = []
            for x in r:
                acc.append(x if not acc else op(acc[-1], x))
            out.append(acc)
        return _build_rows(out, rest, out_dt, d, t.arr.ndim, _width(t, d))

    return fn


# -- max / min / argmax ------------------------------------------------------------


def _is_noise(x: Any) -> bool:
    return isinstance(x, (Race, LogE, Scaled, Opaque, grid.GridDraw))


def _best(row: list[Any], largest: bool) -> int:
    """Index of the first max (min); the first NaN wins, as in torch."""
    best = 0
    for i, x in enumerate(row):
        if isinstance(x, Uninit):
            read_scalar(x, "max/argmax")
        if isinstance(x, Special) and x.is_nan:
            return i
        if i and bool(x > row[best] if largest else x < row[best]):
            best = i
    return best


def race(row: list[Any], largest: bool) -> Any:
    """The winner of an argmax/argmin over independent noise: a categorical draw."""
    weights: list[Fraction] = []
    recs: list[NoiseRecord] = []
    below: list[Any] = []  # the constant <= 0 entries (None where the entry is noise)
    for x in row:
        if isinstance(x, Special) and x.is_nan:
            return row.index(x)
        if isinstance(x, Special) and x.value == (-np.inf if largest else np.inf):
            weights.append(ZERO)
            below.append(None)
            continue
        if largest and type(x) in (Fraction, int) and x <= 0:
            # an exact 0 (a masked lane, a zeroed residual) ties with w / E for w = 0;
            # a negative constant (a masked-off sentinel) loses to both
            weights.append(ZERO)
            below.append(x)
            continue
        below.append(None)
        if largest and isinstance(x, Race):
            w = x.w
        elif largest and isinstance(x, LogE):
            w = x.race_weight()
        elif isinstance(x, Scaled) and (x.c < 0) == largest:
            w = 1 / abs(x.c)  # argmin of c E (c > 0) is a race with weight 1/c
        else:
            raise unsupported(f"an {'argmax' if largest else 'argmin'} over a row mixing "
                              f"noise with {x!r}: only rows of w / E, log w + G or E / w "
                              "entries (or -inf) are modelled")
        if x.rec.used or x.rec in recs:
            raise unsupported("an argmax over exponential/Gumbel noise already used in "
                              "another race (the two winners are dependent)")
        recs.append(x.rec)
        weights.append(w)
    if any(w > 0 for w in weights):
        # Entries w / E with w <= 0 are <= 0 < any positive one: they never win.
        return PendingRace(recs, [max(w, ZERO) for w in weights])
    # No positive entry: the first exact 0 (w = 0) beats negatives and -inf, as torch's
    # argmax takes the first maximum; a row of -inf gives index 0.
    zeros = [i for i, x in enumerate(row) if not isinstance(x, Special) and weights[i] == 0
             and (below[i] is None or below[i] == 0)]
    if zeros:
        return zeros[0]
    constants = [(c, i) for i, c in enumerate(below) if c is not None]
    if constants and all(w == 0 for w in weights):
        # only negative constants and -inf: the first largest constant
        top = max(c for c, _ in constants)
        return next(i for c, i in constants if c == top)
    if any(w < 0 for w in weights):
        raise unsupported("an argmax over a row whose race entries are all negative (w / E "
                          "with every w < 0): its winner's law has no closed form here")
    return 0


def _arg(row: list[Any], largest: bool) -> Any:
    if any(isinstance(x, grid.GridDraw) for x in row):
        return grid.race(row, largest)
    if any(_is_noise(x) for x in row):
        return race(row, largest)
    return _best(row, largest)


def _argfn(largest: bool) -> Callable[..., ExactTensor]:
    def fn(input: Any, dim: Any = None, keepdim: bool = False) -> ExactTensor:
        t = as_exact(input)
        rows, rest, d = _rows(t, dim)
        return _build([_arg(r, largest) for r in rows], rest, torch.int64,
                      1 if keepdim else None, d)

    return fn


def _maxfn(largest: bool) -> Callable[..., Any]:
    name = "max" if largest else "min"

    def fn(input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None) -> Any:
        t = as_exact(input)
        if isinstance(dim, torch.Tensor):
            return (maximum if largest else minimum)(t, dim)
        rows, rest, d = _rows(t, dim)
        idx = [_arg(r, largest) for r in rows]
        vals = [Opaque() if any(_is_noise(x) for x in r) else r[int(i)]
                for r, i in zip(rows, idx, strict=True)]
        values = _build(vals, rest, t.dtype, 1 if keepdim else None, d)
        if dim is None:
            return values
        indices = _build(idx, rest, torch.int64, 1 if keepdim else None, d)
        return getattr(torch.return_types, name)((values, indices))

    return fn


def _amax(largest: bool) -> Callable[..., ExactTensor]:
    def fn(input: Any, dim: Any = None, keepdim: bool = False) -> ExactTensor:
        t = as_exact(input)
        rows, rest, d = _rows(t, dim if not isinstance(dim, (tuple, list)) or len(dim) != 1
                              else dim[0])
        vals = [r[_best(r, largest)] for r in rows]
        return _build(vals, rest, t.dtype, 1 if keepdim else None, d)

    return fn


# -- sorting ------------------------------------------------------------------------


def _order(row: list[Any], descending: bool) -> list[int]:
    def key_cmp(i: int, j: int) -> int:
        a, b = row[i], row[j]
        for v in (a, b):
            if isinstance(v, Uninit):
                read_scalar(v, "sort")
        a_nan = isinstance(a, Special) and a.is_nan
        b_nan = isinstance(b, Special) and b.is_nan
        if a_nan or b_nan:
            if a_nan and b_nan:
                return 0
            big = 1 if a_nan else -1  # NaN is the largest value
            return -big if descending else big
        if bool(a < b):
            return 1 if descending else -1
        if bool(b < a):
            return -1 if descending else 1
        return 0

    return sorted(range(len(row)), key=functools.cmp_to_key(key_cmp))


def sort(input: Any, dim: Any = -1, descending: bool = False, stable: bool = False,
         *, out: Any = None) -> Any:
    t = as_exact(input)
    rows, rest, d = _rows(t, dim)
    orders = [_order(r, descending) for r in rows]
    vals = [[r[i] for i in o] for r, o in zip(rows, orders, strict=True)]
    w = _width(t, d)
    return torch.return_types.sort((_build_rows(vals, rest, t.dtype, d, t.arr.ndim, w),
                                    _build_rows(orders, rest, torch.int64, d, t.arr.ndim, w)))


def argsort(input: Any, dim: Any = -1, descending: bool = False, stable: bool = False
            ) -> ExactTensor:
    return sort(input, dim, descending).indices  # type: ignore[no-any-return]


def topk(input: Any, k: Any, dim: Any = -1, largest: bool = True, sorted: bool = True,
         *, out: Any = None) -> Any:
    t = as_exact(input)
    rows, rest, d = _rows(t, dim)
    k = as_int(k)
    orders = [_order(r, largest)[:k] for r in rows]
    vals = [[r[i] for i in o] for r, o in zip(rows, orders, strict=True)]
    return torch.return_types.topk((_build_rows(vals, rest, t.dtype, d, t.arr.ndim, k),
                                    _build_rows(orders, rest, torch.int64, d, t.arr.ndim, k)))


def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Any = None) -> Any:
    seq = as_exact(sorted_sequence)
    scalar = not isinstance(input, torch.Tensor)
    vals = as_exact(input) if not scalar else None
    right = right or side == "right"
    if sorter is not None:
        raise unsupported("searchsorted with sorter=")

    def position(row: Sequence[Any], v: Any) -> int:
        # Count the entries before v: strictly smaller (left) or at most v (right).
        read_scalar(v, "searchsorted") if isinstance(v, Uninit) else None
        for i, s in enumerate(row):
            if isinstance(s, Uninit):
                read_scalar(s, "searchsorted")
            if not bool(s <= v if right else s < v):
                return i
        return len(row)

    dt = torch.int32 if out_int32 else torch.int64
    if scalar:
        return make(_box(position(list(seq.arr.reshape(-1)), input)), dt)
    assert vals is not None
    if seq.arr.ndim == 1:
        out = np.frompyfunc(lambda v: position(list(seq.arr), v), 1, 1)(vals.arr)
        return make(out if isinstance(out, np.ndarray) else _box(out), dt)
    seq_rows = seq.arr.reshape(-1, seq.arr.shape[-1])
    val_rows = vals.arr.reshape(-1, vals.arr.shape[-1])
    res = np.empty(val_rows.shape, dtype=object)
    for i in range(val_rows.shape[0]):
        for j in range(val_rows.shape[1]):
            res[i, j] = position(list(seq_rows[i]), val_rows[i, j])
    return make(res.reshape(vals.arr.shape), dt)


# -- softmax ----------------------------------------------------------------------


def _softmax_row(row: list[Any], log: bool) -> list[Any]:
    for x in row:
        if isinstance(x, Uninit):
            return [x] * len(row)
    top = row[_best(row, True)]
    shifted = [x - top for x in row]
    exps = [exp_scalar(x) for x in shifted]
    total: Any = ZERO
    for e in exps:
        total = total + e
    if log:
        log_total = log_scalar(total)
        return [x - log_total for x in shifted]
    return [div_scalar(e, total) for e in exps]


def _softmax(log: bool) -> Callable[..., ExactTensor]:
    def fn(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None,
           **kwargs: Any) -> ExactTensor:
        t = as_exact(input)
        if dtype is not None:
            t = cast(t, dtype)
        if dim is None:
            dim = 0 if t.arr.ndim in (0, 1, 3) else 1  # torch's legacy implicit dim
        rows, rest, d = _rows(t, dim)
        dt = t.dtype if is_float(t.dtype) else torch.get_default_dtype()
        out = [_softmax_row([convert(x, dt) for x in r], log) for r in rows]
        return _build_rows(out, rest, dt, d, t.arr.ndim, _width(t, d))

    return fn


def _bool_reduce(fn: Callable[[list[bool]], bool]) -> Callable[..., ExactTensor]:
    def op(input: Any, dim: Any = None, keepdim: bool = False) -> ExactTensor:
        t = as_exact(input)
        rows, rest, d = _rows(t, dim)
        vals = [fn([bool(convert(read_scalar(x, "any/all"), torch.bool)) for x in r])
                for r in rows]
        return _build(vals, rest, torch.bool, 1 if keepdim else None, d)

    return op


def logsumexp(input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None
              ) -> ExactTensor:
    """``log(sum(exp(x)))`` along ``dim``, shifted by the row's maximum as torch does
    (a row of -inf gives -inf)."""
    if out is not None:
        raise unsupported("logsumexp with out=")
    t = as_exact(input)
    if isinstance(dim, (tuple, list)):
        if len(dim) != 1:
            raise unsupported("logsumexp over several dimensions")
        dim = dim[0]
    rows, rest, d = _rows(t, dim)
    dt = t.dtype if is_float(t.dtype) else torch.get_default_dtype()
    values: list[Any] = []
    for row in rows:
        row = [convert(x, dt) for x in row]
        uninit = next((x for x in row if isinstance(x, Uninit)), None)
        if uninit is not None:
            values.append(uninit)
            continue
        top = row[_best(row, True)]
        if isinstance(top, Special):
            values.append(top)  # nan, +inf, or every entry -inf
            continue
        total: Any = ZERO
        for x in row:
            total = total + exp_scalar(x - top)
        values.append(log_scalar(total) + top)
    return _build(values, rest, dt, 1 if keepdim else None, d)


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False,
              right: bool = False, out: Any = None) -> Any:
    """``torch.bucketize``: ``searchsorted(boundaries, input)`` with the same ``right``."""
    if out is not None:
        raise unsupported("bucketize with out=")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _in_dtype(name: str, real: Callable[..., Any], exact: Callable[..., Any]
              ) -> Callable[..., Any]:
    """``exact``, except that in dtype semantics a tensor of concrete values is reduced
    by ``real``, torch's own kernel (its order of summation, its rounding)."""
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:
        if dtype_semantics():
            out = realops.reduction(name, real, as_exact(input), *args, **kwargs)
            if out is not None:
                return out
        return exact(input, *args, **kwargs)

    fn.__name__ = name
    return fn


REDUCE: dict[str, Callable[..., Any]] = {
    "sum": _in_dtype("sum", torch.sum, sum_), "mean": _in_dtype("mean", torch.mean, mean),
    "prod": _in_dtype("prod", torch.prod, prod),
    "cumsum": _in_dtype("cumsum", torch.cumsum, _scan(operator.add)),
    "cumprod": _in_dtype("cumprod", torch.cumprod, _scan(operator.mul)),
    "max": _maxfn(True), "min": _maxfn(False), "amax": _amax(True), "amin": _amax(False),
    "argmax": _argfn(True), "argmin": _argfn(False), "sort": sort, "argsort": argsort,
    "topk": topk, "searchsorted": searchsorted,
    "softmax": _in_dtype("softmax", torch.nn.functional.softmax, _softmax(False)),
    "log_softmax": _in_dtype("log_softmax", torch.nn.functional.log_softmax, _softmax(True)),
    "any": _bool_reduce(any), "all": _bool_reduce(all), "bucketize": bucketize,
    "logsumexp": _in_dtype("logsumexp", torch.logsumexp, logsumexp),
    # torch.distributions' argument checks: a 0-d bool tensor.
    "_is_all_true": _bool_reduce(all), "_is_any_true": _bool_reduce(any),
}
