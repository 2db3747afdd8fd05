"""``triton.language`` for exact mode: the ``tl`` a ``@triton.jit`` kernel body sees.

A kernel launched under exact mode (see :mod:`.triton_launch`) runs as its Python
source once per program id, as Triton's CPU interpreter runs it, with ``tl`` bound
to :data:`LANGUAGE`.  Its values are :class:`Block` objects: a Triton scalar or block
holding an exact tensor of the mode (the dtype's numbers, lazy draws), so every
value is computed as torch's CPU kernels compute it in that dtype.  What Triton does
differently from torch is done as Triton does it:

* type promotion follows Triton's rules (a loaded ``float32`` scalar with a
  ``float64`` block is ``float64``; a Python float with a ``float16`` block stays
  ``float16``; ``int / int`` is ``float32``), and every operand is cast to the
  computation type before torch computes;
* ``//`` and ``%`` on integers truncate toward zero (C semantics), as Triton's do;
* a pointer is a tensor's memory plus an element offset: ``tl.load`` and
  ``tl.store`` read and write the tensor's storage (views see the writes), a
  masked-off lane of a load is ``other`` (memory that was never written when
  ``other`` is not given, as on the GPU), and an unmasked access outside the
  storage is a finding (:class:`KernelMemoryError`), never a silent read.

An op outside this table raises :class:`~specexact.errors.UnsupportedOperation`
naming ``tl.NAME``, the kernel's file:line and a supported spelling when there is one.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from specexact.errors import SamplerFailure
from specexact.exact.random_source import LazyToken
from specexact.torch.tensor import ExactTensor, as_exact, make, read_scalar
from specexact.torch.values import Uninit, unsupported

__all__ = [
    "LANGUAGE",
    "SPELLINGS",
    "Block",
    "KernelMemoryError",
    "Language",
    "Pointer",
    "Program",
    "program_var",
    "supported_tl_ops",
]


class KernelMemoryError(SamplerFailure):
    """A kernel read or wrote memory outside the tensor its pointer points into."""


@dataclass(frozen=True)
class Program:
    """The program instance running: its ids and the grid's size, one per axis."""

    ids: tuple[int, int, int]
    grid: tuple[int, int, int]


#: The program of the kernel launch in progress (set by the launcher per program id).
program_var: ContextVar[Program | None] = ContextVar("specexact_triton_program",
                                                     default=None)


def _program() -> Program:
    p = program_var.get()
    if p is None:
        raise unsupported("a triton.language op outside a kernel launch")
    return p


# -- values -----------------------------------------------------------------


class PointerType:
    """``ptr.dtype``: a pointer's type, with its ``element_ty`` (a torch dtype)."""

    __slots__ = ("element_ty",)

    def __init__(self, element_ty: torch.dtype) -> None:
        self.element_ty = element_ty

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty}>"


@dataclass(frozen=True, eq=False)
class Pointer:
    """A pointer into an exact tensor's storage: the storage's elements (flat, in
    memory order), the element the tensor starts at, and an offset (an int or an
    integer :class:`Block`, so ``ptr + tl.arange(0, N)`` is a block of pointers)."""

    base: np.ndarray[Any, Any]
    start: int
    element: torch.dtype
    name: str
    offset: Any = 0
    writable: bool = True

    @property
    def dtype(self) -> PointerType:
        return PointerType(self.element)

    @property
    def type(self) -> PointerType:
        return self.dtype

    def moved(self, offset: Any) -> Pointer:
        return Pointer(self.base, self.start, self.element, self.name, offset, self.writable)

    def __add__(self, other: Any) -> Pointer:
        if isinstance(other, Pointer):
            raise TypeError("adding two pointers")
        return self.moved(_add_offsets(self.offset, other))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Pointer:
        return self.moved(_add_offsets(self.offset, _negate(other)))

    def __repr__(self) -> str:
        return f"<pointer into {self.name}>"


def _negate(x: Any) -> Any:
    return -x


def _add_offsets(a: Any, b: Any) -> Any:
    if isinstance(b, Block) and (is_float_dtype(b.dtype) or b.dtype == torch.bool):
        raise TypeError(f"a pointer offset must be an integer, not {b.dtype}")
    if isinstance(b, float):
        raise TypeError("a pointer offset must be an integer, not a float")
    if isinstance(a, int) and not isinstance(b, Block):
        return a + operator.index(b)
    return _binary(a, b, "add")


def is_float_dtype(dtype: torch.dtype) -> bool:
    return bool(dtype.is_floating_point)


class Block:
    """A Triton value: a scalar (0-d) or a block, holding an exact tensor."""

    __slots__ = ("t",)

    def __init__(self, t: torch.Tensor) -> None:
        self.t = as_exact(t)

    # metadata
    @property
    def dtype(self) -> torch.dtype:
        return self.t.dtype

    @property
    def type(self) -> torch.dtype:
        return self.t.dtype

    @property
    def shape(self) -> list[int]:
        return list(self.t.shape)

    @property
    def numel(self) -> int:
        return int(self.t.numel())

    def __repr__(self) -> str:
        return f"Block({self.t!r})"

    # conversions to Python (a branch, a range bound, an index)
    def __bool__(self) -> bool:
        return bool(self.t)

    def __index__(self) -> int:
        return operator.index(self.t)

    def __int__(self) -> int:
        return int(self.t)

    def __float__(self) -> float:
        return float(self.t)

    def __iter__(self) -> Any:
        raise TypeError("a Triton block is not iterable")

    __hash__ = None  # type: ignore[assignment]

    # methods
    def to(self, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Block:
        if bitcast:
            raise unsupported("tl.Block.to(bitcast=True) (a reinterpretation of the bits)")
        return Block(cast(self.t, _dtype(dtype)))

    def __getitem__(self, idx: Any) -> Block:
        parts = idx if isinstance(idx, tuple) else (idx,)
        if any(p is not None and p != slice(None) and p is not Ellipsis for p in parts):
            raise unsupported("indexing a Triton block with anything but None and ':' "
                              "(use tl.where, tl.sum or tl.reshape)")
        return Block(self.t[idx])

    def reshape(self, *shape: Any, can_reorder: bool = False) -> Block:
        return reshape(self, *shape)

    def view(self, *shape: Any) -> Block:
        return reshape(self, *shape)

    def broadcast_to(self, *shape: Any) -> Block:
        return broadcast_to(self, *shape)

    def expand_dims(self, axis: Any) -> Block:
        return expand_dims(self, axis)

    def sum(self, axis: Any = None, keep_dims: bool = False) -> Block:
        return sum_(self, axis, keep_dims)

    def max(self, axis: Any = None, return_indices: bool = False,
            keep_dims: bool = False) -> Any:
        return max_(self, axis, return_indices, keep_dims=keep_dims)

    def min(self, axis: Any = None, return_indices: bool = False,
            keep_dims: bool = False) -> Any:
        return min_(self, axis, return_indices, keep_dims=keep_dims)

    def argmax(self, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> Block:
        return argmax(self, axis, tie_break_left, keep_dims)

    def argmin(self, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> Block:
        return argmin(self, axis, tie_break_left, keep_dims)

    # operators
    def __add__(self, o: Any) -> Any:
        return o.__radd__(self) if isinstance(o, Pointer) else _binary(self, o, "add")

    def __radd__(self, o: Any) -> Block:
        return _binary(o, self, "add")

    def __sub__(self, o: Any) -> Block:
        return _binary(self, o, "sub")

    def __rsub__(self, o: Any) -> Block:
        return _binary(o, self, "sub")

    def __mul__(self, o: Any) -> Block:
        return _binary(self, o, "mul")

    def __rmul__(self, o: Any) -> Block:
        return _binary(o, self, "mul")

    def __truediv__(self, o: Any) -> Block:
        return _binary(self, o, "truediv")

    def __rtruediv__(self, o: Any) -> Block:
        return _binary(o, self, "truediv")

    def __floordiv__(self, o: Any) -> Block:
        return _binary(self, o, "floordiv")

    def __rfloordiv__(self, o: Any) -> Block:
        return _binary(o, self, "floordiv")

    def __mod__(self, o: Any) -> Block:
        return _binary(self, o, "mod")

    def __rmod__(self, o: Any) -> Block:
        return _binary(o, self, "mod")

    def __and__(self, o: Any) -> Block:
        return _binary(self, o, "and")

    def __rand__(self, o: Any) -> Block:
        return _binary(o, self, "and")

    def __or__(self, o: Any) -> Block:
        return _binary(self, o, "or")

    def __ror__(self, o: Any) -> Block:
        return _binary(o, self, "or")

    def __xor__(self, o: Any) -> Block:
        return _binary(self, o, "xor")

    def __rxor__(self, o: Any) -> Block:
        return _binary(o, self, "xor")

    def __lt__(self, o: Any) -> Block:
        return _binary(self, o, "lt")

    def __le__(self, o: Any) -> Block:
        return _binary(self, o, "le")

    def __gt__(self, o: Any) -> Block:
        return _binary(self, o, "gt")

    def __ge__(self, o: Any) -> Block:
        return _binary(self, o, "ge")

    def __eq__(self, o: Any) -> Block:  # type: ignore[override]
        return _binary(self, o, "eq")

    def __ne__(self, o: Any) -> Block:  # type: ignore[override]
        return _binary(self, o, "ne")

    def __neg__(self) -> Block:
        return Block(-self.t)

    def __pos__(self) -> Block:
        return self

    def __invert__(self) -> Block:
        return Block(~self.t)

    def __abs__(self) -> Block:
        return Block(torch.abs(self.t))


# -- Triton's type promotion --------------------------------------------------


_TORCH: dict[str, torch.dtype] = {
    "int1": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
    "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
    "fp64": torch.float64,
}


def _dtype(d: Any) -> torch.dtype:
    """A dtype as a kernel spells it (``tl.float32``, real Triton's, a torch dtype)."""
    if isinstance(d, torch.dtype):
        return d
    name = getattr(d, "name", None) or str(d)
    found = _TORCH.get(str(name).replace("tl.", ""))
    if found is None:
        raise unsupported(f"the Triton dtype {d!r} (supported: {sorted(_TORCH)})")
    return found


def _kind(x: Any) -> Any:
    if isinstance(x, Block):
        return x.dtype
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, (int, LazyToken)):
        return "int"
    if isinstance(x, float):
        return "float"
    raise TypeError(f"a Triton operand must be a block or a Python number, not "
                    f"{type(x).__name__}")


def _weak(typed: torch.dtype, weak: str) -> torch.dtype:
    if weak == "float":
        return typed if is_float_dtype(typed) else torch.float32
    if typed == torch.bool and weak == "int":
        return torch.int32
    return typed


def computation_type(a: Any, b: Any) -> torch.dtype:
    """The dtype Triton computes ``a op b`` in (Python numbers are weakly typed)."""
    ka: Any = _kind(a)
    kb: Any = _kind(b)
    if isinstance(ka, str) and isinstance(kb, str):
        order = ("bool", "int", "float")
        widest = max(ka, kb, key=order.index)
        return {"bool": torch.bool, "int": torch.int32, "float": torch.float32}[widest]
    if isinstance(ka, str):
        return _weak(kb, ka)
    if isinstance(kb, str):
        return _weak(ka, kb)
    fa, fb = is_float_dtype(ka), is_float_dtype(kb)
    if fa and fb:
        if torch.float64 in (ka, kb):
            return torch.float64
        if torch.float32 in (ka, kb) or ka != kb:
            return torch.float32  # float16 with bfloat16 meet in float32, as in Triton
        return ka  # type: ignore[no-any-return]
    if fa or fb:
        return ka if fa else kb  # type: ignore[no-any-return]
    return torch.promote_types(ka, kb)


def _operand(x: Any, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(x, Block):
        return cast(x.t, dtype)
    return torch.tensor(x, dtype=dtype) if not isinstance(x, LazyToken) \
        else make(np.asarray(x, dtype=object), dtype)


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "eq": torch.eq,
    "ne": torch.ne}


def _binary(a: Any, b: Any, op: str) -> Block:
    dtype = computation_type(a, b)
    if op == "truediv" and not is_float_dtype(dtype):
        dtype = torch.float32  # Triton's int / int is float32
    x, y = _operand(a, dtype), _operand(b, dtype)
    if op in _COMPARE:
        return Block(_COMPARE[op](x, y))
    if op in ("and", "or", "xor"):
        if is_float_dtype(dtype):
            raise TypeError(f"bitwise {op} on {dtype} operands")
        fn = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}[op]
        return Block(fn(x, y))
    if op in ("floordiv", "mod"):
        if is_float_dtype(dtype):
            if op == "mod":
                raise unsupported("% on float operands in a Triton kernel (Triton's frem); "
                                  "write x - y * (x / y).to(tl.int32) for positive operands")
            raise TypeError("floordiv on float operands (Triton has // for integers only)")
        return Block(_truncating(x, y, op))
    fn2: Any = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "truediv": torch.div}[op]
    out = fn2(x, y)
    return Block(out if out.dtype == dtype else out.to(dtype))


def _truncating(x: torch.Tensor, y: torch.Tensor, op: str) -> ExactTensor:
    """Integer ``//`` and ``%`` as C (and Triton) compute them: toward zero."""
    ex, ey = as_exact(x), as_exact(y)
    xs, ys = np.broadcast_arrays(ex.arr, ey.arr)

    def one(a: Any, b: Any) -> int:
        n = operator.index(read_scalar(a, "an integer division"))
        d = operator.index(read_scalar(b, "an integer division"))
        if d == 0:
            raise ZeroDivisionError("integer division by zero in a Triton kernel")
        q = abs(n) // abs(d) * (1 if (n >= 0) == (d >= 0) else -1)
        return q if op == "floordiv" else n - q * d

    out = np.empty(xs.shape, dtype=object)
    for i in np.ndindex(xs.shape):
        out[i] = one(xs[i], ys[i])
    return make(out, ex.dtype)


def cast(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` in ``dtype`` as Triton casts it.  Between integer dtypes the elements are
    kept (a drawn token or a race's winner stays undrawn until something reads it;
    a plain integer that does not fit wraps as torch's cast wraps it)."""
    if t.dtype == dtype:
        return t
    ints = not is_float_dtype(t.dtype) and not is_float_dtype(dtype) \
        and torch.bool not in (t.dtype, dtype)
    if ints:
        arr = as_exact(t).arr
        info = torch.iinfo(dtype)
        if all(not isinstance(x, int) or info.min <= x <= info.max for x in arr.flat):
            return make(arr.copy(), dtype)
    return t.to(dtype)


def _block(x: Any, like: Any = None) -> Block:
    if isinstance(x, Block):
        return x
    dtype = computation_type(x, like) if like is not None else computation_type(x, x)
    return Block(_operand(x, dtype))


# -- creation and program ids ------------------------------------------------


def program_id(axis: Any) -> Block:
    return Block(torch.tensor(_program().ids[_axis(axis)], dtype=torch.int32))


def num_programs(axis: Any) -> Block:
    return Block(torch.tensor(_program().grid[_axis(axis)], dtype=torch.int32))


def _axis(axis: Any) -> int:
    a = operator.index(axis)
    if a not in (0, 1, 2):
        raise ValueError(f"program axis must be 0, 1 or 2, got {a}")
    return a


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (list, tuple)):
        return tuple(operator.index(s) for s in shape)
    return (operator.index(shape),)


def arange(start: Any, end: Any) -> Block:
    return Block(torch.arange(operator.index(start), operator.index(end), dtype=torch.int32))


def full(shape: Any, value: Any, dtype: Any) -> Block:
    d = _dtype(dtype)
    return Block(torch.full(_shape(shape), value, dtype=d))


def zeros(shape: Any, dtype: Any) -> Block:
    return full(shape, 0, dtype)


def zeros_like(x: Any) -> Block:
    b = _block(x)
    return Block(torch.zeros_like(b.t))


def full_like(x: Any, value: Any) -> Block:
    b = _block(x)
    return Block(torch.full_like(b.t, value))


def cdiv(x: Any, div: Any) -> Any:
    if not isinstance(x, Block) and not isinstance(div, Block):
        return (operator.index(x) + operator.index(div) - 1) // operator.index(div)
    return (x + div - 1) // div


# -- memory -------------------------------------------------------------------


def _lanes(ptr: Any, what: str) -> tuple[Pointer, np.ndarray[Any, Any], tuple[int, ...]]:
    if not isinstance(ptr, Pointer):
        raise TypeError(f"{what} needs a pointer (a tensor argument plus offsets), "
                        f"got {type(ptr).__name__}")
    off = ptr.offset
    if isinstance(off, Block):
        arr = off.t.arr
        shape = tuple(arr.shape)
    else:
        arr = np.asarray(off, dtype=object)
        shape = ()
    return ptr, arr, shape


def _mask_lanes(mask: Any, shape: tuple[int, ...]) -> np.ndarray[Any, Any] | None:
    if mask is None:
        return None
    m = _block(mask)
    if m.dtype != torch.bool:
        m = Block(m.t != 0)
    out: np.ndarray[Any, Any] = np.broadcast_to(m.t.arr, shape)
    return out


def _address(ptr: Pointer, lane: Any, what: str) -> int:
    k = operator.index(read_scalar(lane, f"the address of a {what}"))
    at = ptr.start + k
    if not 0 <= at < ptr.base.size:
        raise KernelMemoryError(
            f"{what} at element {k} of {ptr.name}, outside its storage of "
            f"{ptr.base.size} elements (starting at element {ptr.start}), with no mask "
            f"covering that lane, at {_where()}: on the GPU this reads or writes memory "
            f"the tensor does not own")
    return at


def _where() -> str:
    from specexact.torch.values import user_location
    return user_location()


def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (),
         padding_option: Any = "", cache_modifier: Any = "", eviction_policy: Any = "",
         volatile: bool = False) -> Block:
    """``tl.load``: the elements at the pointers; masked-off lanes are ``other``."""
    ptr, lanes, shape = _lanes(pointer, "tl.load")
    if boundary_check or padding_option:
        raise unsupported("tl.load with boundary_check/padding_option (block pointers); "
                          "use pointer offsets with mask= and other=")
    m = _mask_lanes(mask, shape)
    fill = None if other is None \
        else np.broadcast_to(as_exact(_operand(other, ptr.element)).arr, shape)
    out = np.empty(shape, dtype=object)
    for i in np.ndindex(shape):
        if m is not None and not bool(m[i]):
            out[i] = Uninit(f"a masked-off lane of tl.load with no other= at {_where()}") \
                if fill is None else fill[i]
            continue
        out[i] = ptr.base[_address(ptr, lanes[i], "tl.load")]
    return Block(make(out, ptr.element))


def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (),
          cache_modifier: Any = "", eviction_policy: Any = "") -> None:
    """``tl.store``: ``value``, cast to the pointer's element type, at the pointers."""
    ptr, lanes, shape = _lanes(pointer, "tl.store")
    if boundary_check:
        raise unsupported("tl.store with boundary_check (block pointers); use mask=")
    if not ptr.writable:
        raise unsupported(f"tl.store into {ptr.name}, a tensor made outside exact mode "
                          "(the write would be lost)")
    m = _mask_lanes(mask, shape)
    v = _block(value)
    values = as_exact(cast(v.t, ptr.element)).arr
    try:
        values = np.broadcast_to(values, shape)
    except ValueError:
        raise TypeError(f"tl.store of a value of shape {list(v.t.shape)} through "
                        f"pointers of shape {list(shape)}") from None
    for i in np.ndindex(shape):
        if m is not None and not bool(m[i]):
            continue
        ptr.base[_address(ptr, lanes[i], "tl.store")] = values[i]


# -- elementwise --------------------------------------------------------------


def where(condition: Any, x: Any, y: Any) -> Block:
    c = _block(condition)
    if c.dtype != torch.bool:
        c = Block(c.t != 0)
    dtype = computation_type(x, y)
    return Block(torch.where(c.t, _operand(x, dtype), _operand(y, dtype)))


class PropagateNan(enum.Enum):
    """``tl.PropagateNan``: whether ``tl.maximum``/``tl.minimum`` return a NaN operand."""

    NONE = 0
    ALL = 0xFFFF


def _extremum(x: Any, y: Any, propagate_nan: Any, largest: bool) -> Block:
    """``tl.maximum``/``tl.minimum``: on floats, by default the non-NaN operand wins
    (``fmax``, as Triton's ``maxnumf``); with ``PropagateNan.ALL`` a NaN wins."""
    dtype = computation_type(x, y)
    a, b = _operand(x, dtype), _operand(y, dtype)
    propagate = getattr(propagate_nan, "name", propagate_nan) == "ALL"
    both = torch.maximum(a, b) if largest else torch.minimum(a, b)
    if is_float_dtype(dtype) and not propagate:
        return Block(torch.where(torch.isnan(a), b, torch.where(torch.isnan(b), a, both)))
    return Block(both)


def maximum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> Block:
    return _extremum(x, y, propagate_nan, True)


def minimum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> Block:
    return _extremum(x, y, propagate_nan, False)


def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = PropagateNan.NONE) -> Block:
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


def _float_unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Block]:
    def op(x: Any, *_: Any, **__: Any) -> Block:
        b = _block(x)
        if not is_float_dtype(b.dtype):
            b = b.to(torch.float32)
        return Block(fn(b.t))
    op.__name__ = fn.__name__
    return op


exp = _float_unary(torch.exp)
log = _float_unary(torch.log)
sqrt = _float_unary(torch.sqrt)


def abs_(x: Any) -> Block:
    return Block(torch.abs(_block(x).t))


def fdiv(x: Any, y: Any, ieee_rounding: bool = False) -> Block:
    return _binary(x, y, "truediv")


def div_rn(x: Any, y: Any) -> Block:
    return _binary(x, y, "truediv")


# -- shape --------------------------------------------------------------------


def reshape(x: Any, *shape: Any, can_reorder: bool = False) -> Block:
    dims = _shape(shape[0]) if len(shape) == 1 else _shape(shape)
    return Block(_block(x).t.reshape(dims))


def broadcast_to(x: Any, *shape: Any) -> Block:
    dims = _shape(shape[0]) if len(shape) == 1 else _shape(shape)
    return Block(_block(x).t.expand(dims).clone())


def expand_dims(x: Any, axis: Any) -> Block:
    t: torch.Tensor = _block(x).t
    axes = [axis] if not isinstance(axis, (list, tuple)) else list(axis)
    for a in sorted(operator.index(a) for a in axes):
        t = t.unsqueeze(a)
    return Block(t)


def broadcast(x: Any, y: Any) -> tuple[Block, Block]:
    bx, by = _block(x), _block(y)
    shape = tuple(np.broadcast_shapes(tuple(bx.shape), tuple(by.shape)))
    return broadcast_to(bx, shape), broadcast_to(by, shape)


# -- reductions ---------------------------------------------------------------


def _reduced(x: Any, axis: Any, keep_dims: bool) -> tuple[torch.Tensor, int | None]:
    t = _block(x).t
    if axis is None:
        return t.reshape(-1), None
    a = operator.index(axis)
    return t, a


def _finish(t: torch.Tensor, axis: int | None, keep_dims: bool, ndim: int) -> torch.Tensor:
    if keep_dims:
        if axis is None:
            return t.reshape((1,) * ndim)
        return t.unsqueeze(axis)
    return t


def _sum_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype == torch.bool or (not is_float_dtype(dtype) and dtype.itemsize < 4):
        return torch.int32  # Triton widens small integers to int32 before summing
    return dtype


def sum_(x: Any, axis: Any = None, keep_dims: bool = False, dtype: Any = None) -> Block:
    b = _block(x)
    t, a = _reduced(b, axis, keep_dims)
    out_dtype = _dtype(dtype) if dtype is not None else _sum_dtype(b.dtype)
    t = t.to(out_dtype) if t.dtype != out_dtype else t
    s = torch.sum(t) if a is None else torch.sum(t, dim=a)
    s = s.to(out_dtype) if s.dtype != out_dtype else s
    return Block(_finish(s, a, keep_dims, len(b.shape)))


def _extreme(x: Any, axis: Any, return_indices: bool, keep_dims: bool,
             which: str) -> Any:
    b = _block(x)
    t, a = _reduced(b, axis, keep_dims)
    pick = torch.amax if which == "max" else torch.amin
    value = pick(t) if a is None else pick(t, dim=a)
    if not return_indices:
        return Block(_finish(value, a, keep_dims, len(b.shape)))
    index = _arg(b, axis, keep_dims, which)
    return Block(_finish(value, a, keep_dims, len(b.shape))), index


def max_(x: Any, axis: Any = None, return_indices: bool = False,
         return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    return _extreme(x, axis, return_indices, keep_dims, "max")


def min_(x: Any, axis: Any = None, return_indices: bool = False,
         return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    return _extreme(x, axis, return_indices, keep_dims, "min")


def _arg(x: Any, axis: Any, keep_dims: bool, which: str) -> Block:
    b = _block(x)
    t, a = _reduced(b, axis, keep_dims)
    pick = torch.argmax if which == "max" else torch.argmin
    index = pick(t) if a is None else pick(t, dim=a)
    return Block(_finish(cast(index, torch.int32), a, keep_dims, len(b.shape)))


def argmax(x: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> Block:
    """``tl.argmax``: the first index of the largest value (torch's tie rule, which is
    Triton's default ``tie_break_left=True``)."""
    if not tie_break_left:
        raise unsupported("tl.argmax(tie_break_left=False) (ties go to an unspecified "
                          "index); use the default tie_break_left=True")
    return _arg(x, axis, keep_dims, "max")


def argmin(x: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> Block:
    if not tie_break_left:
        raise unsupported("tl.argmin(tie_break_left=False); use tie_break_left=True")
    return _arg(x, axis, keep_dims, "min")


def cumsum(x: Any, axis: Any = 0, reverse: bool = False, dtype: Any = None) -> Block:
    b = _block(x)
    if reverse:
        raise unsupported("tl.cumsum(reverse=True); write tl.sum(x) - tl.cumsum(x) + x")
    out_dtype = _dtype(dtype) if dtype is not None else _sum_dtype(b.dtype)
    t = b.t.to(out_dtype) if b.dtype != out_dtype else b.t
    s = torch.cumsum(t, dim=operator.index(axis))
    return Block(s.to(out_dtype) if s.dtype != out_dtype else s)


# -- compile-time helpers and no-ops -----------------------------------------


class Constexpr:
    """``tl.constexpr``: an annotation, and ``tl.constexpr(v)`` is ``v`` at run time."""

    def __new__(cls, value: Any = None) -> Any:
        return getattr(value, "value", value)


def static_assert(cond: Any, msg: str = "") -> None:
    if not cond:
        raise AssertionError(f"tl.static_assert failed: {msg}")


def device_assert(cond: Any, msg: str = "", mask: Any = None) -> None:
    c = _block(cond)
    for i in np.ndindex(tuple(c.shape)):
        if not bool(read_scalar(c.t.arr[i], "tl.device_assert")):
            raise AssertionError(f"tl.device_assert failed at {_where()}: {msg}")


def _same(x: Any, *_: Any, **__: Any) -> Any:
    return x


def _nothing(*_: Any, **__: Any) -> None:
    return None


def static_range(*args: Any, **_: Any) -> range:
    return range(*(operator.index(a) for a in args))


def static_print(*args: Any, **_: Any) -> None:
    return None


#: A supported way to write a ``tl`` op outside the table, by its name.
SPELLINGS: dict[str, str] = {
    "rand": "u = torch.rand(n) on the host, passed in and read with tl.load (Philox "
            "streams are a fixed function of seed and offset, which exact mode does not "
            "enumerate)",
    "randn": "torch.randn on the host, passed in and read with tl.load",
    "randint": "torch.randint on the host, passed in and read with tl.load",
    "exp2": "tl.exp(x * 0.6931471805599453)",
    "log2": "tl.log(x) / 0.6931471805599453",
    "sigmoid": "1 / (1 + tl.exp(-x))",
    "softmax": "e = tl.exp(x - tl.max(x, 0)); e / tl.sum(e, 0)",
    "atomic_add": "a tl.store from the one program that owns the element",
    "make_block_ptr": "ptr + offsets with mask= (pointer arithmetic)",
    "dot": "tl.sum(a[:, :, None] * b[None, :, :], 1)",
    "umulhi": "integer arithmetic in int64",
    "sort": "tl.argmax / tl.max over the block",
    "interleave": "tl.reshape and tl.where",
    "join": "tl.where over a wider block",
    "ravel": "tl.reshape(x, (n,))",
    "fma": "x * y + z",
    "erf": "(not modelled)",
}


class Language:
    """The ``tl`` namespace a kernel body sees under exact mode."""

    def __init__(self, table: dict[str, Any]) -> None:
        self.__dict__.update(table)
        self.math = self
        self.extra = self
        self.libdevice = self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        spelling = SPELLINGS.get(name)
        hint = f"; write it as {spelling}" if spelling else \
            "; see supported_tl_ops() for what is modelled"
        raise unsupported(f"the Triton op tl.{name} (not in the exact table of "
                          f"specexact.torch.triton_language{hint})")


_TABLE: dict[str, Any] = {
    "program_id": program_id, "num_programs": num_programs, "arange": arange, "full": full,
    "zeros": zeros, "zeros_like": zeros_like, "full_like": full_like, "cdiv": cdiv,
    "load": load, "store": store, "where": where, "maximum": maximum, "minimum": minimum,
    "clamp": clamp, "exp": exp, "log": log, "sqrt": sqrt, "abs": abs_, "fdiv": fdiv,
    "div_rn": div_rn, "reshape": reshape, "view": reshape, "broadcast_to": broadcast_to,
    "expand_dims": expand_dims, "broadcast": broadcast, "sum": sum_, "max": max_,
    "min": min_, "argmax": argmax, "argmin": argmin, "cumsum": cumsum,
    "constexpr": Constexpr, "static_assert": static_assert, "device_assert": device_assert,
    "static_range": static_range, "range": static_range, "static_print": static_print,
    "device_print": static_print, "multiple_of": _same, "max_contiguous": _same,
    "max_constancy": _same, "debug_barrier": _nothing, "tensor": Block,
    **{name: dtype for name, dtype in _TORCH.items()
       if name not in ("fp16", "bf16", "fp32", "fp64")},
    "pointer_type": PointerType, "dtype": torch.dtype, "PropagateNan": PropagateNan,
}

#: The ``tl`` of kernels run under exact mode.
LANGUAGE = Language(_TABLE)


def supported_tl_ops() -> list[str]:
    """Sorted names of the ``tl`` ops and dtypes exact mode runs."""
    return sorted(n for n in _TABLE if not n.startswith("_"))


