"""The exact tensor: a ``torch.Tensor`` subclass whose data is a numpy object array.

``isinstance(x, torch.Tensor)`` holds, shape/dtype/device are the real
metadata, and the elements are exact values (see :mod:`.values`).  Basic
slicing gives numpy views and advanced indexing copies, exactly as torch
does, so ``q[rows].exponential_()`` writes into a copy.

Importing this module imports torch and numpy; the package imports it lazily.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.exact.random_source import LazyToken
from specexact.torch.grid import GridDraw, Step
from specexact.torch.noise import PendingRace, Unif
from specexact.torch.values import (
    LogR,
    NanFlag,
    NonFiniteValue,
    Special,
    Uninit,
    describe,
    dtype_semantics,
    unsupported,
    user_location,
)

__all__ = [
    "FLOAT_FORMATS",
    "FRACTION_OPERATORS",
    "GRID_BITS",
    "ExactTensor",
    "as_exact",
    "as_int",
    "convert",
    "element_for",
    "is_float",
    "make",
    "narrows",
    "read_scalar",
    "result_dtype",
    "round_to",
    "stored",
]

#: Bits of ``torch.rand``'s grid k / 2**K per dtype (0 included).
GRID_BITS: dict[torch.dtype, int] = {torch.float32: 24, torch.float64: 53,
                                     torch.bfloat16: 8, torch.float16: 11}

_CPU = torch.device("cpu")  # made at import: under the exact mode it would be intercepted


class ExactTensor(torch.Tensor):
    """A tensor of exact elements; every torch op on it goes through the exact mode."""

    arr: np.ndarray[Any, Any]
    #: The real tensor of the values this tensor was made with (dtype semantics), and
    #: those element objects: valid while ``arr`` still holds the same objects.
    cached_real: tuple[tuple[Any, ...], torch.Tensor] | None = None

    @staticmethod
    def __new__(cls, arr: np.ndarray[Any, Any], dtype: torch.dtype) -> ExactTensor:
        t: ExactTensor = torch.Tensor._make_wrapper_subclass(
            cls, arr.shape, dtype=dtype, device=_CPU)
        t.arr = arr
        return t

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]
    __hash__ = torch.Tensor.__hash__  # kept: the operators below define __eq__

    # A Python number read out of an exact tensor (``x.item()``, in exact semantics) is a
    # Fraction, which torch's own operators refuse: ``random.random() < ratio.item()``
    # would raise where real torch compares two floats.  These operators hand such an
    # operand to the exact mode's implementation (FRACTION_OPERATORS), as a Python
    # scalar; any other operand takes torch's path.
    def __lt__(self, other: Any) -> Any:
        return _operator("__lt__", self, other)

    def __le__(self, other: Any) -> Any:
        return _operator("__le__", self, other)

    def __gt__(self, other: Any) -> Any:
        return _operator("__gt__", self, other)

    def __ge__(self, other: Any) -> Any:
        return _operator("__ge__", self, other)

    def __eq__(self, other: Any) -> Any:
        return _operator("__eq__", self, other)

    def __ne__(self, other: Any) -> Any:
        return _operator("__ne__", self, other)

    def __add__(self, other: Any) -> Any:
        return _operator("__add__", self, other)

    def __radd__(self, other: Any) -> Any:
        return _operator("__radd__", self, other)

    def __sub__(self, other: Any) -> Any:
        return _operator("__sub__", self, other)

    def __rsub__(self, other: Any) -> Any:
        return _operator("__rsub__", self, other)

    def __mul__(self, other: Any) -> Any:
        return _operator("__mul__", self, other)

    def __rmul__(self, other: Any) -> Any:
        return _operator("__rmul__", self, other)

    def __truediv__(self, other: Any) -> Any:
        return _operator("__truediv__", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _operator("__rtruediv__", self, other)

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (),  # type: ignore[override]
                           kwargs: Any = None) -> Any:
        raise unsupported(f"the torch operation {func} (reached without the exact mode)")


#: The exact mode's binary operators by dunder name, for a Fraction operand (filled
#: by :mod:`specexact.torch.mode`, which imports this module).
FRACTION_OPERATORS: dict[str, Any] = {}


def _operator(name: str, self: ExactTensor, other: Any) -> Any:
    if type(other) is Fraction:
        impl = FRACTION_OPERATORS.get(name)
        if impl is not None:
            return impl(self, other)
    return getattr(torch.Tensor, name)(self, other)


def make(arr: Any, dtype: torch.dtype) -> ExactTensor:
    a = arr if isinstance(arr, np.ndarray) and arr.dtype == object \
        else np.asarray(arr, dtype=object)
    return ExactTensor(a, dtype)


def is_float(dtype: torch.dtype) -> bool:
    return bool(dtype.is_floating_point)


def _real_to_exact(t: torch.Tensor) -> ExactTensor:
    """A real tensor's exact values (float32 widens to float64 exactly)."""
    dtype = t.dtype
    values = t.detach().cpu().tolist()
    arr = np.empty(tuple(t.shape), dtype=object)
    flat = [values] if t.dim() == 0 else _flatten(values)
    out = [element_for(v, dtype) for v in flat]
    if t.dim() == 0:
        arr[()] = out[0]
    else:
        arr.reshape(-1)[:] = out if out else []
    return make(arr, dtype)


def _flatten(values: Any) -> list[Any]:
    if isinstance(values, list):
        out: list[Any] = []
        for v in values:
            out.extend(_flatten(v))
        return out
    return [values]


def element_for(value: Any, dtype: torch.dtype) -> Any:
    """A Python number (or exact element) as an element of ``dtype``."""
    if dtype == torch.bool:
        if isinstance(value, bool):
            return value
        return convert(value, dtype)
    if is_float(dtype):
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                return Special.make(value, "a float constant")
            if narrows(torch.float64, dtype):  # a Python float is a float64
                return stored(Fraction(value), dtype)
            return Fraction(value)
        if isinstance(value, bool):
            return Fraction(int(value))
        if isinstance(value, int):
            return Fraction(value)
        return convert(value, dtype)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, LazyToken)):
        return value
    return convert(value, dtype)


def convert(x: Any, dtype: torch.dtype) -> Any:
    """Convert one element to ``dtype`` the way ``Tensor.to`` does."""
    if isinstance(x, Uninit):
        return x
    if isinstance(x, NanFlag):
        x = x.value
    if isinstance(x, PendingRace):
        x = x.force()
    if dtype == torch.bool:
        if isinstance(x, bool):
            return x
        if isinstance(x, Special):
            return True  # nan and +-inf are nonzero
        if isinstance(x, (Fraction, int)):
            return x != 0
        if isinstance(x, LogR):
            return True
        if isinstance(x, LazyToken):
            return bool(x != 0)
        if isinstance(x, (Unif, GridDraw)):
            return bool(x != 0)
        raise unsupported(f"converting {describe(x)} to bool")
    if is_float(dtype):
        if isinstance(x, bool):
            return Fraction(int(x))
        if isinstance(x, LazyToken):
            return Fraction(x.value())
        if isinstance(x, int):
            return Fraction(x)
        return x  # exact values keep their exact value (no rounding is modelled)
    # integer dtypes
    if isinstance(x, (bool, int, LazyToken)):
        return int(x) if isinstance(x, bool) else x
    if isinstance(x, Fraction):
        return int(x)  # truncation toward zero, as torch
    if isinstance(x, Special):
        raise NonFiniteValue(f"{x.value} (from {x.origin}) converted to an integer dtype "
                             f"at {user_location()}: torch gives an arbitrary integer")
    if isinstance(x, (Unif, GridDraw)):
        raise unsupported("converting a torch.rand uniform to an integer (floor of a draw)")
    raise unsupported(f"converting {describe(x)} to {dtype}")


def as_exact(x: Any, like_dtype: torch.dtype | None = None) -> ExactTensor:
    """An exact tensor from an exact tensor, a real tensor, a number or a nested list."""
    if isinstance(x, ExactTensor):
        return x
    if isinstance(x, torch.Tensor):
        return _real_to_exact(x)
    return tensor_from_data(x, like_dtype)


def tensor_from_data(data: Any, dtype: torch.dtype | None) -> ExactTensor:
    """``torch.tensor(data, dtype=...)`` with exact elements."""
    if isinstance(data, ExactTensor):
        return make(data.arr.copy(), data.dtype) if dtype is None \
            else cast(make(data.arr.copy(), data.dtype), dtype)
    if _plain_numbers(data):
        real = torch.tensor(data, dtype=dtype)
        return _real_to_exact(real)
    arr = np.empty(_shape_of(data), dtype=object)
    flat = _flatten_exact(data)
    inferred = dtype or _infer_dtype(flat)
    values = [element_for(_unwrap(v), inferred) for v in flat]
    if arr.ndim == 0:
        arr[()] = values[0]
    else:
        arr.reshape(-1)[:] = values
    return make(arr, inferred)


def _unwrap(v: Any) -> Any:
    if isinstance(v, ExactTensor):
        if v.arr.size != 1:
            raise unsupported("building a tensor from a list holding a multi-element tensor")
        return v.arr.reshape(-1)[0]
    return v


def _plain_numbers(data: Any) -> bool:
    if isinstance(data, (list, tuple)):
        return all(_plain_numbers(d) for d in data)
    return isinstance(data, (int, float, bool)) and not isinstance(data, LazyToken)


def _shape_of(data: Any) -> tuple[int, ...]:
    if isinstance(data, (list, tuple)):
        if not data:
            return (0,)
        return (len(data), *_shape_of(data[0]))
    if isinstance(data, ExactTensor):
        return tuple(data.arr.shape) if data.arr.size != 1 else ()
    return ()


def _flatten_exact(data: Any) -> list[Any]:
    if isinstance(data, (list, tuple)):
        out: list[Any] = []
        for d in data:
            out.extend(_flatten_exact(d))
        return out
    return [data]


def _infer_dtype(flat: list[Any]) -> torch.dtype:
    if all(isinstance(v, bool) for v in flat):
        return torch.bool
    if all(isinstance(v, (int, LazyToken)) for v in flat):
        return torch.int64
    if any(isinstance(v, ExactTensor) for v in flat):
        return next(v.dtype for v in flat if isinstance(v, ExactTensor))
    return torch.get_default_dtype()


#: (significand bits, least normal exponent, greatest exponent) of each float dtype.
FLOAT_FORMATS: dict[torch.dtype, tuple[int, int, int]] = {
    torch.float64: (53, -1022, 1023), torch.float32: (24, -126, 127),
    torch.float16: (11, -14, 15), torch.bfloat16: (8, -126, 127)}


def narrows(source: torch.dtype, target: torch.dtype) -> bool:
    """Whether converting ``source`` values to the float ``target`` can round:
    ``target`` does not hold every value of ``source`` (integers included)."""
    if target not in FLOAT_FORMATS:
        return False
    if source not in FLOAT_FORMATS:
        return source != torch.bool
    (sb, slo, shi), (tb, tlo, thi) = FLOAT_FORMATS[source], FLOAT_FORMATS[target]
    return tb < sb or tlo > slo or thi < shi


def round_to(x: Fraction, dtype: torch.dtype) -> Any:
    """``x`` rounded to the nearest value of the float ``dtype`` (ties to even,
    subnormals kept, overflow to +-inf), exactly as IEEE 754 rounds.

    In integers: ``|x| = n / d`` lies in ``[2^e, 2^(e+1))``; its quantum is
    ``2^shift``, the unit in the last place at ``e`` (at the least normal exponent
    for subnormals); ``k`` is ``|x| / 2^shift`` rounded half to even (6x faster than
    the same steps on Fractions, measured on 20,000 values in every dtype).
    """
    if x == 0:
        return Fraction(0)
    bits, least, greatest = FLOAT_FORMATS[dtype]
    n, d = abs(x.numerator), x.denominator
    e = n.bit_length() - d.bit_length()
    if (n << -e if e < 0 else n) < (d if e < 0 else d << e):
        e -= 1
    shift = max(e, least) - bits + 1
    num, den = (n, d << shift) if shift >= 0 else (n << -shift, d)
    k, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and k & 1):
        k += 1
    room = greatest + 1 - shift  # k * 2^shift >= 2^(greatest + 1): beyond the largest
    if room <= 0 or k >= 1 << room:
        return Special(math.copysign(math.inf, x), f"a value rounded to {dtype} at "
                       f"{user_location()} (beyond its largest finite value)")
    rounded = Fraction(k << shift) if shift >= 0 else Fraction(k, 1 << -shift)
    return rounded if x > 0 else -rounded


def stored(x: Fraction, dtype: torch.dtype) -> Any:
    """The value torch stores for the exact ``x`` in the float ``dtype``: rounded
    once, or for float16 and bfloat16 through float32 first, as torch converts."""
    if dtype in (torch.float16, torch.bfloat16):
        wide = round_to(x, torch.float32)
        return wide if isinstance(wide, Special) else round_to(wide, dtype)
    return round_to(x, dtype)


def cast(t: ExactTensor, dtype: torch.dtype) -> ExactTensor:
    """``t.to(dtype)``.  A cast that can round (to a narrower float, or an integer
    to a float) rounds each exact value as torch does; a value with no exact
    rational (a uniform, a logarithm) cast that way is unsupported."""
    if t.dtype == dtype:
        return t
    def one(x: Any) -> Any:
        y = convert(x, dtype)
        return _rounded(y, t.dtype, dtype) if narrows(t.dtype, dtype) else y

    if t.arr.ndim:
        return make(np.asarray(np.frompyfunc(one, 1, 1)(t.arr), dtype=object), dtype)
    out = np.empty((), dtype=object)  # a 0-d element may be a token, which refuses ufuncs
    out[()] = one(t.arr[()])
    return make(out, dtype)


def _rounded(x: Any, source: torch.dtype, target: torch.dtype) -> Any:
    if isinstance(x, Fraction):
        return stored(x, target)
    if isinstance(x, (Special, Uninit)):
        return x
    if isinstance(x, GridDraw):
        step = Step("cast", lambda a: a.to(target), (None,), 0, (), source, 0)
        return x.then(step, target)
    if isinstance(x, Unif) and x.rec.bits is None and not dtype_semantics():
        # The continuous uniform of exact semantics is the ideal real number: it has no
        # rounding to take (the dtype run casts its grid draw as torch does; a grid
        # uniform in exact semantics has no model of its rounded grid, below).
        return x
    raise unsupported(f"converting {describe(x)} from {source} to {target}, which rounds "
                      "it (its rounded value has no exact model)")


_DUMMY: dict[tuple[torch.dtype, bool], torch.Tensor] = {}


def _dummy(dtype: torch.dtype, zero_dim: bool) -> torch.Tensor:
    key = (dtype, zero_dim)
    t = _DUMMY.get(key)
    if t is None:
        t = _DUMMY[key] = torch.zeros(() if zero_dim else (1,), dtype=dtype)
    return t


def result_dtype(*operands: Any) -> torch.dtype:
    """torch's type promotion for these operands (tensors and Python scalars)."""
    stand_ins: list[Any] = []
    for x in operands:
        if isinstance(x, torch.Tensor):
            stand_ins.append(_dummy(x.dtype, x.dim() == 0))
        elif isinstance(x, bool):
            stand_ins.append(True)
        elif isinstance(x, (int, LazyToken)):
            stand_ins.append(1)
        elif isinstance(x, (float, Fraction, Special, LogR, Unif, GridDraw)):
            stand_ins.append(1.0)
        else:
            stand_ins.append(1.0)
    out = stand_ins[0] if len(stand_ins) == 1 else None
    if out is not None:
        return out.dtype if isinstance(out, torch.Tensor) else torch.get_default_dtype()
    dtype = torch.result_type(stand_ins[0], stand_ins[1])
    for s in stand_ins[2:]:
        dtype = torch.promote_types(dtype, s.dtype if isinstance(s, torch.Tensor)
                                    else torch.result_type(_dummy(dtype, False), s))
    return dtype


def scalar_operand(x: Any, dtype: torch.dtype) -> Any:
    """A Python scalar operand as an exact element of the result dtype.

    A Python float is first rounded to ``dtype`` (torch computes in the
    tensor's dtype), then taken exactly.
    """
    if isinstance(x, float) and is_float(dtype) and not (math.isnan(x) or math.isinf(x)):
        return stored(Fraction(x), dtype)
    return element_for(x, dtype)


def read_scalar(x: Any, what: str) -> Any:
    """An element read into Python (``bool``, ``item``, a weight, an output): a sink.

    NaN, infinities and uninitialised memory reaching here are findings.
    """
    if isinstance(x, PendingRace):
        return x.force()
    if isinstance(x, Uninit):
        raise x.read(f"read by {what}")
    if isinstance(x, Special):
        raise NonFiniteValue(f"{x.value} that arose from {x.origin} reached {what} "
                             f"at {user_location()}")
    if isinstance(x, NanFlag):
        raise NonFiniteValue(f"a comparison with nan (the nan arose from {x.origin}) "
                             f"reached {what} at {user_location()}")
    return x


def as_int(value: Any) -> Any:
    """``operator.index`` that also reads one-element integer exact tensors.

    Inside an op the mode is off, so Python protocols on a tensor would bypass it.
    """
    if isinstance(value, torch.Tensor):
        t = as_exact(value)
        if t.arr.size != 1 or is_float(t.dtype) or t.dtype == torch.bool:
            raise TypeError("only integer tensors of a single element can be converted "
                            "to an index")
        return operator.index(read_scalar(t.arr.reshape(-1)[0], "an index"))
    return operator.index(value)
