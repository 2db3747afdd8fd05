"""The code's own small constants, and (p, q) pairs that sit on them.

A guard such as ``if residual.sum() < 1e-3: sample from p`` is wrong only on
pairs whose total variation is below 1e-3, which random rows with small
denominators never produce, whatever the seed.  Hypothesis draws literals
from the code under test for the same reason.  Here the float literals of the
sampler (its nested functions, the helpers and module constants it names,
the functions a wrapper closes over, a partial's arguments and defaults) give
hand-picked pairs at each threshold: a total variation of half of it and of
all of it, a q entry and a p entry of half of it.  They are edge cases, so
every seed tries them.
"""

from __future__ import annotations

import dis
import functools
import inspect
import math
import types
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any

__all__ = ["code_constants", "constant_pairs", "constants_family"]

Probs = tuple[Fraction, ...]

#: Modules whose own constants are not the code under test's (their closures are
#: still followed: a wrapper of ours holds the user's function).
_FOREIGN = ("specexact", "torch", "numpy", "sympy", "hypothesis", "scipy",
            "fractions", "math", "random", "builtins", "functools")

#: Thresholds read from ``torch.finfo(...)`` / ``np.finfo(...)`` attributes: float32's.
_FINFO = {"eps": Fraction(1, 2**23), "tiny": Fraction(1, 2**126),
          "smallest_normal": Fraction(1, 2**126)}

#: Default tolerances of the closeness tests a code may call: math.isclose's rel_tol,
#: numpy's and torch's isclose/allclose rtol and atol.
_DEFAULT_TOLERANCES = {"isclose": (Fraction(1, 10**9), Fraction(1, 10**5), Fraction(1, 10**8)),
                       "allclose": (Fraction(1, 10**5), Fraction(1, 10**8))}

#: Where a code rounds to a lower precision (``.half()``, ``torch.bfloat16``,
#: ``np.float32``): values closer than half a unit in the last place near 1/2 and 1
#: round together, so pairs that close are tried.
_DTYPE_NAMES = {"half": Fraction(1, 2**12), "float16": Fraction(1, 2**12),
                "bfloat16": Fraction(1, 2**9), "float32": Fraction(1, 2**25)}

_MAX_DEPTH = 4


def code_constants(fn: Any, *, limit: int = 6) -> tuple[Fraction, ...]:
    """The ``limit`` smallest thresholds in ``fn``'s code, as exact rationals in (0, 1/2].

    A literal ``c`` in (0, 1/2] stands for itself, one in (1/2, 1) for ``1 - c``
    (``ratio > 0.999``); negative literals count by their size.  Decimal
    literals keep their decimal value (``1e-3`` is 1/1000, not its binary
    double).  Reading ``finfo(...).eps`` or ``.tiny`` counts as float32's, and
    calling ``isclose`` or ``allclose`` as their default tolerances.
    """
    found: set[Fraction] = set()
    for value in _numbers(fn):
        size = abs(value)
        if 0 < size < 1:
            exact = Fraction(repr(size)) if isinstance(size, float) else Fraction(size)
            found.add(exact if exact <= Fraction(1, 2) else 1 - exact)
    return tuple(sorted(found)[:limit])


def _walk(start: Any, depth: int, seen: set[int],
          visit: Callable[[Any, int, list[tuple[Any, int]]], Iterator[Any]]) -> Iterator[Any]:
    """The numbers reachable from ``start``: each object once, at most ``_MAX_DEPTH`` deep.

    ``visit(obj, depth, stack)`` handles an object that is not a number: it yields the
    numbers it names and pushes ``(object, depth)`` for what it reaches.
    """
    stack: list[tuple[Any, int]] = [(start, depth)]
    while stack:
        obj, d = stack.pop()
        if id(obj) in seen or d > _MAX_DEPTH:
            continue
        seen.add(id(obj))
        if _is_number(obj):
            yield obj
            continue
        yield from visit(obj, d, stack)


def _numbers(fn: Any) -> Iterator[Any]:
    """Numbers the code can read: its literals, and the numbers held by the objects it
    reaches (closures, defaults, globals it names, the attributes it names of modules
    and objects, instance and class attributes of a callable object, dict values)."""
    seen: set[int] = set()
    names: set[str] = set()  # attribute names the code reads, for modules it reaches
    modules: list[tuple[types.ModuleType, int]] = []

    def visit(obj: Any, depth: int, stack: list[tuple[Any, int]]) -> Iterator[Any]:
        if isinstance(obj, functools.partial):
            stack.append((obj.func, depth + 1))
            stack.extend((a, depth + 1) for a in (*obj.args, *obj.keywords.values()))
            return
        if isinstance(obj, types.MethodType):
            stack.append((obj.__self__, depth + 1))
            obj = obj.__func__
        if isinstance(obj, types.ModuleType):
            if not _foreign(obj, obj.__name__):
                modules.append((obj, depth))
            return
        if not isinstance(obj, types.FunctionType):
            stack.extend((value, depth + 1) for value in _held(obj))
            call = vars(type(obj)).get("__call__")  # a callable object's method
            if isinstance(call, types.FunctionType) and not _foreign(call):
                stack.append((call, depth + 1))
            return
        inner = getattr(obj, "__wrapped__", None)
        if inner is not None:
            stack.append((inner, depth + 1))
        cells = [c.cell_contents for c in (obj.__closure__ or ()) if _filled(c)]
        stack.extend((c, depth + 1) for c in cells if callable(c))
        if _foreign(obj):
            return
        stack.extend((c, depth + 1) for c in cells if not callable(c))
        stack.extend((d, depth + 1) for d in (*(obj.__defaults__ or ()),
                                              *(obj.__kwdefaults__ or {}).values()))
        for code in _codes(obj.__code__):
            yield from (c for c in code.co_consts if _is_number(c))
            for instruction in dis.get_instructions(code):
                name = instruction.argval
                if not isinstance(name, str):
                    continue
                if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL") \
                        and name in _DEFAULT_TOLERANCES:
                    yield from _DEFAULT_TOLERANCES[name]
                    continue
                if name in _DTYPE_NAMES and instruction.opname in (
                        "LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL", "LOAD_CONST"):
                    yield _DTYPE_NAMES[name]
                if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                    names.add(name)
                    if name in _FINFO:
                        yield _FINFO[name]
                elif instruction.opname == "LOAD_GLOBAL" and name in obj.__globals__:
                    stack.append((obj.__globals__[name], depth + 1))

    yield from _walk(fn, 0, seen, visit)
    # Modules the code reaches: the attributes it reads of them (``cfg.EPS``).
    for module, depth in modules:
        for name in sorted(names):
            value = getattr(module, name, None)
            if value is not None:
                yield from _walk(value, depth + 1, seen, _data)


def _data(obj: Any, depth: int, stack: list[tuple[Any, int]]) -> Iterator[Any]:
    """A data object's values (not its functions'), for :func:`_walk`."""
    if not callable(obj):
        stack.extend((value, depth + 1) for value in _held(obj))
    return iter(())


#: How many values of one container or object are read.
_MAX_HELD = 64


def _held(obj: Any) -> list[Any]:
    """The values a data object holds: a dict's values, a sequence's items, an
    instance's attributes and its class's (for our classes, not library ones)."""
    if isinstance(obj, type):
        return [] if _foreign(obj) else [v for k, v in vars(obj).items()
                                         if not k.startswith("__")][:_MAX_HELD]
    if isinstance(obj, (str, bytes, types.ModuleType)):
        return []
    if isinstance(obj, dict):
        return list(obj.values())[:_MAX_HELD]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)[:_MAX_HELD]
    if _foreign(type(obj)):
        return []
    values = list(getattr(obj, "__dict__", {}).values())
    for klass in type(obj).__mro__[:-1]:
        if not _foreign(klass):
            values += [v for k, v in vars(klass).items() if not k.startswith("__")]
    return values[:_MAX_HELD]


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return (isinstance(value, float) and math.isfinite(value)) or isinstance(value, Fraction)


def _foreign(obj: Any, module: str | None = None) -> bool:
    name = module if module is not None else (getattr(obj, "__module__", None) or "")
    return not isinstance(name, str) or name.split(".")[0] in _FOREIGN


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 -- an empty cell raises
    except ValueError:
        return False
    return True


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    stack = [code]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(c for c in current.co_consts if inspect.iscode(c))


def constant_pairs(constants: Sequence[Fraction], low: int, high: int
                   ) -> list[tuple[Probs, Probs]]:
    """Pairs on each threshold ``c``: with ``d = c / 2``, at two tokens a total
    variation of ``d`` and of ``c``; token 0 below the threshold in q only, in p
    only, and in both (p(0), q(0)) = (0, d), (d/2, d), (d, d/2); at three tokens a
    total variation of ``d`` and a q with two entries ``d``."""
    half = Fraction(1, 2)
    third = Fraction(1, 3)
    pairs: list[tuple[Probs, Probs]] = []
    for c in constants:
        d = c / 2
        if low <= 2 <= high:
            pairs += [((half, half), (half + d, half - d)),
                      ((half, half), (d, 1 - d)),
                      ((d, 1 - d), (half, half)),
                      ((Fraction(0), Fraction(1)), (d, 1 - d)),
                      ((d / 2, 1 - d / 2), (d, 1 - d)),
                      ((d, 1 - d), (d / 2, 1 - d / 2))]
            if c < half:
                pairs.append(((half, half), (half + c, half - c)))
        if low <= 3 <= high:
            pairs += [((third, third, third), (third + d, third - d, third)),
                      ((third, third, third), (1 - 2 * d, d, d))]
    return list(dict.fromkeys(pairs))


def constants_family(constants: Sequence[Fraction]) -> str:
    """The edge-case family name for the coverage sentence."""
    shown = ", ".join(_show(c) for c in constants)
    return f"pairs at the code's constants ({shown})"


def _show(c: Fraction) -> str:
    if c.denominator & (c.denominator - 1) == 0 and c.denominator > 2**10:
        return f"2^-{c.denominator.bit_length() - 1}" if c.numerator == 1 else str(c)
    text = f"{float(c):g}"
    return text if Fraction(text) == c else str(c)
