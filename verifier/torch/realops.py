"""Float ops on concrete values as the dtype computes them: real torch, read back exactly.

In ``semantics="dtype"`` every concrete float element is a value of its
tensor's dtype, so ``float()`` of it is exact and a real tensor holds it
exactly.  An op on concrete operands therefore runs as torch's own CPU kernel
on a real tensor of the same shape and dtype (same vectorisation, same
reduction order, same rounding), and ``Fraction(float)`` reads each result
back exactly.  Elements that are not concrete (draws of ``torch.rand``,
ideal noise, uninitialised memory, drawn tokens) take the element's own path:
a draw gains the op as a :class:`~specexact.torch.grid.Step` (evaluated later
at grid points, at the same position of a tensor of the same shape); the
others go through the exact kernel, as in ``semantics="exact"``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.torch.grid import GridDraw, Step
from specexact.torch.tensor import ExactTensor, as_exact, make
from specexact.torch.values import Special, user_location

__all__ = ["elementwise", "from_real", "is_concrete", "reduction", "to_real"]


def is_concrete(x: Any) -> bool:
    """A value with one number: a float dtype's value, an int, a bool, inf or nan."""
    kind = type(x)
    return kind is Fraction or kind is int or kind is bool or kind is Special


def _number(x: Any) -> float | int | bool:
    if type(x) is Special:
        return float(x.value)
    if type(x) is Fraction:
        return float(x)  # exact: x is a value of a float dtype
    return x  # type: ignore[no-any-return]


def to_real(t: ExactTensor) -> tuple[torch.Tensor, list[int]]:
    """A real tensor holding ``t``'s concrete values (0 where an element is not
    concrete) and the flat positions of those elements."""
    flat = t.arr.reshape(-1)
    cached = t.cached_real
    if cached is not None and len(cached[0]) == flat.size \
            and all(map(operator.is_, cached[0], flat)):
        return cached[1], []  # the elements are immutable: same objects, same values
    odd = [i for i, x in enumerate(flat) if not is_concrete(x)]
    if odd:
        skip = set(odd)
        values = [0 if i in skip else _number(x) for i, x in enumerate(flat)]
    else:
        values = [_number(x) for x in flat]
    if t.dtype.is_floating_point:
        real = torch.tensor(values, dtype=torch.float64).to(t.dtype)
    else:
        real = torch.tensor(values, dtype=t.dtype)
    return real.reshape(tuple(t.arr.shape)), odd


#: Fraction(v) of the floats results hold: the enumerator re-runs the code once per
#: path, so the same values come back again and again (a Fraction is immutable).
_EXACT: dict[float, Fraction] = {}


def _exact(v: float) -> Fraction:
    x = _EXACT.get(v)
    if x is None:
        if len(_EXACT) > 1 << 20:
            _EXACT.clear()
        x = _EXACT[v] = Fraction(v)
    return x


def from_real(out: torch.Tensor, name: str, sources: Sequence[Any] = ()) -> ExactTensor:
    """The exact tensor of a real result; inf and nan remember ``name`` (or the
    special of an operand they came from)."""
    values = out.reshape(-1).tolist()
    floating = out.dtype.is_floating_point
    origin: str | None = None
    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        if floating:
            if v - v == 0:  # finite
                arr[i] = _exact(v)
                continue
            if origin is None:
                origin = next((s.origin for s in sources if type(s) is Special),
                              f"{name} at {user_location()}")
            arr[i] = Special(v, origin)
        else:
            arr[i] = v
    result = make(arr.reshape(tuple(out.shape)), out.dtype)
    result.cached_real = (tuple(arr), out)
    return result


def _specials(arr: np.ndarray[Any, Any]) -> list[Special]:
    return [x for x in arr.reshape(-1) if type(x) is Special][:1]


def elementwise(name: str, real: Callable[..., Any], operands: Sequence[Any],
                kernel: Callable[..., Any],
                exact_operand: Callable[[Any, int], Any]) -> ExactTensor | None:
    """``real(*operands)`` as torch computes it, element by element where needed.

    ``operands`` are exact tensors and Python scalars (passed to torch as they
    are, so torch's own scalar handling applies).  ``kernel`` and
    ``exact_operand(x, i)`` (operand ``x`` as an exact array of the op's dtype)
    serve the elements that are not concrete.  None when an operand cannot be a
    real torch operand (a drawn token used as a Python number).
    """
    reals: list[Any] = []
    odd: list[list[int]] = []
    sources: list[Any] = []
    for x in operands:
        if isinstance(x, torch.Tensor):
            t = as_exact(x)
            r, bad = to_real(t)
            reals.append(r)
            odd.append(bad)
            sources.extend(_specials(t.arr))
        elif type(x) in (bool, int, float):
            reals.append(x)
            odd.append([])
        elif type(x) is Fraction:
            reals.append(float(x))
            odd.append([])
        else:
            return None
    with torch._C.DisableTorchFunction():
        out = real(*reals)
    result = from_real(out, name, sources)
    if not any(odd):
        return result
    return _mixed(name, real, operands, reals, result, kernel, exact_operand)


def _mixed(name: str, real: Callable[..., Any], operands: Sequence[Any], reals: list[Any],
           result: ExactTensor, kernel: Callable[..., Any],
           exact_operand: Callable[[Any, int], Any]) -> ExactTensor:
    """Fill in the result's elements computed from non-concrete operand elements."""
    shape = tuple(result.arr.shape)
    arrays = [np.broadcast_to(exact_operand(x, j), shape) for j, x in enumerate(operands)]
    out = result.arr.reshape(-1)
    for flat, pos in enumerate(np.ndindex(*shape) if shape else [()]):
        values = [a[pos] for a in arrays]
        if all(is_concrete(v) for v in values):
            continue
        draws = [j for j, v in enumerate(values) if isinstance(v, GridDraw)]
        others = [v for j, v in enumerate(values) if j not in draws]
        if len(draws) == 1 and all(is_concrete(v) for v in others):
            j = draws[0]
            draw: GridDraw = values[j]
            operand = operands[j]
            const = float(_number(others[0])) if len(others) == 1 else None
            point = [_point(x, v) for x, v in zip(operands, values, strict=True)]
            step = Step(name, real, reals, j, tuple(operand.shape), operand.dtype, flat, const,
                        point)
            out[flat] = draw.then(step, result.dtype)
        else:
            out[flat] = kernel(*values)
    return result


def _point(operand: Any, value: Any) -> Any:
    """An operand at one element: a one-element tensor of its dtype (a Python scalar
    stays as it is, for torch's own scalar handling)."""
    if not isinstance(operand, torch.Tensor):
        return float(operand) if type(operand) is Fraction else operand
    if not is_concrete(value):
        return None  # the draw's own slot
    return torch.tensor([_number(value)], dtype=torch.float64).to(operand.dtype) \
        if operand.dtype.is_floating_point else torch.tensor([_number(value)],
                                                             dtype=operand.dtype)


def reduction(name: str, real: Callable[..., Any], t: ExactTensor, *args: Any,
              **kwargs: Any) -> Any:
    """``real(t, *args, **kwargs)`` as torch computes it, when every element of ``t``
    is concrete (None otherwise); tensors in the result are read back exactly."""
    r, odd = to_real(t)
    if odd:
        return None
    sources = _specials(t.arr)
    with torch._C.DisableTorchFunction():
        out = real(r, *args, **kwargs)
    if isinstance(out, torch.Tensor):
        return from_real(out, name, sources)
    parts = [from_real(o, name, sources) if isinstance(o, torch.Tensor) else o for o in out]
    return type(out)(parts)
