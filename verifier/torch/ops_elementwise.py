"""Elementwise torch ops on exact tensors: arithmetic, comparisons, exp/log, clamp, where."""

from __future__ import annotations

import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.torch import realops
from specexact.torch.kernels import (
    abs_kernel,
    add_kernel,
    compare_kernel,
    div_scalar,
    exp_scalar,
    floordiv_kernel,
    isfinite_kernel,
    isinf_kernel,
    isnan_kernel,
    log_scalar,
    logical_kernel,
    logical_not_kernel,
    maximum_scalar,
    minimum_scalar,
    mod_kernel,
    mul_kernel,
    neg_kernel,
    pow_kernel,
    reciprocal_kernel,
    sign_kernel,
    sqrt_scalar,
    sub_kernel,
)
from specexact.torch.noise import IDEALISED_FLOOR, IDEALISED_NOISE_FLOOR, Scaled, Unif
from specexact.torch.ops_shape import nonzero, write_into
from specexact.torch.tensor import (
    GRID_BITS,
    ExactTensor,
    as_exact,
    cast,
    convert,
    is_float,
    make,
    result_dtype,
    scalar_operand,
)
from specexact.torch.values import Uninit, current_session, dtype_semantics, unsupported

__all__ = ["BINARY", "UNARY", "binary", "operand_array", "unary"]


def operand_array(x: Any, dtype: torch.dtype) -> np.ndarray[Any, Any]:
    """``x`` (tensor or scalar) as an object array of ``dtype`` elements."""
    if isinstance(x, torch.Tensor):
        t = cast(as_exact(x), dtype)
        return t.arr
    return _as_array(scalar_operand(x, dtype))


def _as_array(out: Any) -> np.ndarray[Any, Any]:
    if isinstance(out, np.ndarray):
        return out.astype(object, copy=False)
    arr = np.empty((), dtype=object)
    arr[()] = out
    return arr


def _exact_operand(dt: torch.dtype) -> Callable[[Any, int], np.ndarray[Any, Any]]:
    def operand(x: Any, _: int) -> np.ndarray[Any, Any]:
        return as_exact(x).arr if isinstance(x, torch.Tensor) else operand_array(x, dt)

    return operand


def binary(fn: Callable[[Any, Any], Any], x: Any, y: Any, *,
           operand_dtype: torch.dtype | None = None,
           out_dtype: torch.dtype | None = None,
           real: Callable[[Any, Any], Any] | None = None, name: str = "") -> ExactTensor:
    """``fn`` elementwise on ``x`` and ``y``; with ``real`` (the torch op) and dtype
    semantics, a float result is what ``real`` computes (see :mod:`.realops`)."""
    dt = operand_dtype or result_dtype(x, y)
    if real is not None and dtype_semantics() and is_float(out_dtype or dt):
        computed = realops.elementwise(name, real, (x, y), fn, _exact_operand(dt))
        if computed is not None:
            return computed
    ax = operand_array(x, dt)
    ay = operand_array(y, dt)
    with np.errstate(all="ignore"):  # inf/nan arithmetic is modelled, not an error
        out = np.frompyfunc(fn, 2, 1)(ax, ay)
    return make(_as_array(out), out_dtype or dt)


def unary(fn: Callable[[Any], Any], x: Any, out_dtype: torch.dtype | None = None,
          operand_dtype: torch.dtype | None = None,
          real: Callable[[Any], Any] | None = None, name: str = "") -> ExactTensor:
    t = as_exact(x)
    if real is not None and dtype_semantics():
        computed = realops.elementwise(name, real, (t,), fn, _exact_operand(t.dtype))
        if computed is not None:
            return computed
    if operand_dtype is not None:
        t = cast(t, operand_dtype)
    with np.errstate(all="ignore"):
        out = np.frompyfunc(fn, 1, 1)(t.arr)
    return make(_as_array(out), out_dtype or t.dtype)


def _float_dtype(*xs: Any) -> torch.dtype:
    dt = result_dtype(*xs)
    return dt if is_float(dt) else torch.get_default_dtype()


# --------------------------------------------------------------------------
# Ops (torch signatures)
# --------------------------------------------------------------------------


def _alpha(other: Any, alpha: Any) -> Any:
    if alpha == 1:
        return other
    return binary(mul_kernel, other, alpha, real=operator.mul, name="mul")


def _fused(op: Callable[..., Any], alpha: Any) -> Callable[[Any, Any], Any]:
    """torch's ``add``/``sub`` with ``alpha``: one fused kernel, one rounding."""
    def real(a: Any, b: Any) -> Any:
        if not isinstance(a, torch.Tensor):
            a = torch.tensor(a)
        return op(a, b, alpha=alpha)

    return real


def add(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> ExactTensor:
    if alpha != 1 and dtype_semantics():
        return binary(add_kernel, input, other, real=_fused(torch.add, alpha), name="add")
    return binary(add_kernel, input, _alpha(other, alpha), real=operator.add, name="add")


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> ExactTensor:
    if alpha != 1 and dtype_semantics():
        return binary(sub_kernel, input, other, real=_fused(torch.sub, alpha), name="sub")
    return binary(sub_kernel, input, _alpha(other, alpha), real=operator.sub, name="sub")


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> ExactTensor:
    return binary(sub_kernel, other, _alpha(input, alpha), real=operator.sub, name="sub")


def mul(input: Any, other: Any, *, out: Any = None) -> ExactTensor:
    return binary(mul_kernel, input, other, real=operator.mul, name="mul")


def div(input: Any, other: Any, *, rounding_mode: str | None = None,
        out: Any = None) -> ExactTensor:
    if rounding_mode is not None:
        if rounding_mode == "floor":
            return binary(floordiv_kernel, input, other)
        raise unsupported(f"div with rounding_mode={rounding_mode!r}")
    return binary(div_scalar, input, other, operand_dtype=_float_dtype(input, other),
                  real=operator.truediv, name="div")


def rdiv(input: Any, other: Any) -> ExactTensor:
    return div(other, input)


def _binary_op(kernel: Callable[[Any, Any], Any], *, swapped: bool = False,
               real: Callable[[Any, Any], Any] | None = None,
               name: str = "") -> Callable[..., ExactTensor]:
    """The op ``kernel`` applied elementwise (``swapped``: the reflected ``__rop__``);
    ``real`` is the torch op that computes it in dtype semantics (see :func:`binary`)."""
    if swapped:
        return lambda input, other: binary(kernel, other, input, real=real, name=name)
    return lambda input, other: binary(kernel, input, other, real=real, name=name)


floor_divide = _binary_op(floordiv_kernel)
remainder = _binary_op(mod_kernel)
pow_ = _binary_op(pow_kernel, real=operator.pow, name="pow")
rpow = _binary_op(pow_kernel, swapped=True, real=operator.pow, name="pow")
maximum = _binary_op(maximum_scalar, real=torch.maximum, name="maximum")
minimum = _binary_op(minimum_scalar, real=torch.minimum, name="minimum")


def compare(op: Callable[[Any, Any], Any]) -> Callable[..., ExactTensor]:
    kernel = compare_kernel(op)

    def fn(input: Any, other: Any, *, out: Any = None) -> ExactTensor:
        return binary(kernel, input, other, out_dtype=torch.bool)

    return fn


def logical(op: Callable[[bool, bool], bool]) -> Callable[..., ExactTensor]:
    kernel = logical_kernel(op)

    def fn(input: Any, other: Any) -> ExactTensor:
        return binary(kernel, input, other, out_dtype=torch.bool)

    return fn


def bitwise(op: Callable[[Any, Any], Any]) -> Callable[..., ExactTensor]:
    def fn(input: Any, other: Any) -> ExactTensor:
        dt = result_dtype(input, other)
        if dt == torch.bool:
            return logical(op)(input, other)
        if is_float(dt):
            raise unsupported("bitwise operation on a float tensor (torch raises)")
        return binary(op, input, other)

    return fn


def bitwise_not(input: Any) -> ExactTensor:
    t = as_exact(input)
    if t.dtype == torch.bool:
        return unary(logical_not_kernel, t)
    if is_float(t.dtype):
        raise unsupported("~ on a float tensor (torch raises)")
    return unary(operator.invert, t)


def logical_not(input: Any) -> ExactTensor:
    return unary(logical_not_kernel, input, out_dtype=torch.bool)


def neg(input: Any) -> ExactTensor:
    return unary(neg_kernel, input)


def pos(input: Any) -> ExactTensor:
    return as_exact(input)


def abs_(input: Any) -> ExactTensor:
    return unary(abs_kernel, input)


def _float_unary(kernel: Callable[[Any], Any], real: Callable[[Any], Any]
                 ) -> Callable[..., ExactTensor]:
    def fn(input: Any, *, out: Any = None) -> ExactTensor:
        t = as_exact(input)
        dt = t.dtype if is_float(t.dtype) else torch.get_default_dtype()
        return unary(kernel, t, out_dtype=dt, operand_dtype=dt, real=real,
                     name=real.__name__)

    return fn


exp = _float_unary(exp_scalar, torch.exp)
log = _float_unary(log_scalar, torch.log)
sqrt = _float_unary(sqrt_scalar, torch.sqrt)
reciprocal = _float_unary(reciprocal_kernel, torch.reciprocal)


def sign(input: Any) -> ExactTensor:
    return unary(sign_kernel, input)


def isnan(input: Any) -> ExactTensor:
    return unary(isnan_kernel, input, out_dtype=torch.bool)


def isinf(input: Any) -> ExactTensor:
    return unary(isinf_kernel, input, out_dtype=torch.bool)


def isfinite(input: Any) -> ExactTensor:
    return unary(isfinite_kernel, input, out_dtype=torch.bool)


def _floor_kernel(dtype: torch.dtype) -> Callable[[Any, Any], Any]:
    """``maximum`` for a clamp's ``min``: a floor below the grid's step on a continuous
    uniform is idealised away (see :data:`~specexact.torch.noise.IDEALISED_FLOOR`)."""
    step = Fraction(1, 2 ** GRID_BITS.get(dtype, 0))

    def kernel(a: Any, b: Any) -> Any:
        if isinstance(a, Unif) and isinstance(b, Fraction) and a.floored(b, step):
            current_session().idealised.add(IDEALISED_FLOOR)
            return a
        if isinstance(a, Scaled) and isinstance(b, Fraction):
            moved = a.floor_mass(b, step)
            if moved is not None:
                session = current_session()
                session.idealised.add(IDEALISED_NOISE_FLOOR)
                session.mass_error += moved
                return a
        return maximum_scalar(a, b)

    return kernel


def relu(input: Any, inplace: bool = False) -> ExactTensor:
    """``torch.relu`` / ``F.relu``: ``clamp(input, min=0)`` (nan stays nan)."""
    out = clamp(input, min=0)
    return write_into(as_exact(input), out) if inplace else out


def clamp(input: Any, min: Any = None, max: Any = None, *, out: Any = None) -> ExactTensor:
    t = as_exact(input)
    dt = result_dtype(t, *(v for v in (min, max) if v is not None))
    out_t = cast(t, dt)
    if min is not None:
        out_t = binary(_floor_kernel(dt), out_t, min, operand_dtype=dt, real=torch.clamp_min,
                       name="clamp_min")
    if max is not None:
        out_t = binary(minimum_scalar, out_t, max, operand_dtype=dt, real=torch.clamp_max,
                       name="clamp_max")
    return out_t


def clamp_min(input: Any, min: Any) -> ExactTensor:
    return clamp(input, min=min)


def clamp_max(input: Any, max: Any) -> ExactTensor:
    return clamp(input, max=max)


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    cond = as_exact(condition)
    dt = result_dtype(input, other)
    a = operand_array(input, dt)
    b = operand_array(other, dt)

    def pick(c: Any, x: Any, y: Any) -> Any:
        if isinstance(c, Uninit):
            return c
        return x if bool(convert(c, torch.bool)) else y

    out = np.frompyfunc(pick, 3, 1)(cond.arr, a, b)
    return make(_as_array(out), dt)


def masked_fill(input: Any, mask: Any, value: Any) -> ExactTensor:
    """``input`` with ``value`` where ``mask`` holds; keeps ``input``'s dtype, as torch."""
    t = as_exact(input)
    if isinstance(value, torch.Tensor):
        v = as_exact(value)
        if v.arr.size != 1:
            raise unsupported("masked_fill with a multi-element value tensor")
        val = convert(v.arr.reshape(-1)[0], t.dtype)
    else:
        val = scalar_operand(value, t.dtype)
    fill = np.empty((), dtype=object)
    fill[()] = val

    def pick(c: Any, x: Any, y: Any) -> Any:
        if isinstance(c, Uninit):
            return c
        return x if bool(convert(c, torch.bool)) else y

    out = np.frompyfunc(pick, 3, 1)(as_exact(mask).arr, fill, t.arr)
    return make(_as_array(out), t.dtype)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> ExactTensor:
    """Whether each element equals one of ``test_elements`` (scalars allowed on either side)."""
    t = as_exact(elements, torch.get_default_dtype() if isinstance(elements, float) else None)
    tests = list(as_exact(test_elements).arr.reshape(-1)) \
        if isinstance(test_elements, torch.Tensor) else [test_elements]
    dt = result_dtype(elements, test_elements)

    def member(x: Any) -> Any:
        if isinstance(x, Uninit):
            return x
        a = convert(x, dt)
        found = any(bool(a == convert(y, dt)) for y in tests)
        return found != invert

    with np.errstate(all="ignore"):
        out = np.frompyfunc(member, 1, 1)(t.arr)
    return make(_as_array(out), torch.bool)


UNARY: dict[str, Callable[..., Any]] = {
    "neg": neg, "negative": neg, "__neg__": neg, "__pos__": pos, "positive": pos,
    "abs": abs_, "__abs__": abs_, "exp": exp, "log": log, "sqrt": sqrt,
    "reciprocal": reciprocal, "sign": sign, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "logical_not": logical_not, "bitwise_not": bitwise_not,
    "__invert__": bitwise_not,
}

BINARY: dict[str, Callable[..., Any]] = {
    "add": add, "__add__": add, "__radd__": add, "sub": sub, "subtract": sub,
    "__sub__": sub, "__rsub__": rsub, "rsub": rsub, "mul": mul, "multiply": mul,
    "__mul__": mul, "__rmul__": mul, "div": div, "divide": div, "true_divide": div,
    "__truediv__": div, "__div__": div, "__rtruediv__": rdiv, "__rdiv__": rdiv,
    "floor_divide": floor_divide, "__floordiv__": floor_divide,
    "__rfloordiv__": _binary_op(floordiv_kernel, swapped=True), "remainder": remainder,
    "__mod__": remainder, "pow": pow_, "__pow__": pow_, "__rpow__": rpow,
    "maximum": maximum, "minimum": minimum, "fmax": maximum, "fmin": minimum,
    "lt": compare(operator.lt), "less": compare(operator.lt), "__lt__": compare(operator.lt),
    "le": compare(operator.le), "less_equal": compare(operator.le),
    "__le__": compare(operator.le), "gt": compare(operator.gt),
    "greater": compare(operator.gt), "__gt__": compare(operator.gt),
    "ge": compare(operator.ge), "greater_equal": compare(operator.ge),
    "__ge__": compare(operator.ge), "eq": compare(operator.eq), "__eq__": compare(operator.eq),
    "ne": compare(operator.ne), "not_equal": compare(operator.ne),
    "__ne__": compare(operator.ne),
    "logical_and": logical(operator.and_), "logical_or": logical(operator.or_),
    "logical_xor": logical(operator.xor),
    "bitwise_and": bitwise(operator.and_), "__and__": bitwise(operator.and_),
    "__rand__": bitwise(operator.and_), "bitwise_or": bitwise(operator.or_),
    "__or__": bitwise(operator.or_), "__ror__": bitwise(operator.or_),
    "bitwise_xor": bitwise(operator.xor), "__xor__": bitwise(operator.xor),
    "__rxor__": bitwise(operator.xor),
    "relu": relu, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "where": where, "masked_fill": masked_fill, "isin": isin,
}
