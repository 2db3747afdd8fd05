"""Symbolic numbers handed to samplers: rational functions of p and q, and lazy uniforms.

A :class:`SymbolicValue` wraps a sympy expression; arithmetic builds new
expressions, a comparison asks the case's Decider (which answers from the
case's constraints or splits the case).  A :class:`SymbolicUniform` is
``a * u + b`` for one lazy uniform draw with symbolic ``a`` and ``b``; its
comparisons are resolved by the random source (random_source.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sympy

from specexact.errors import InvalidArgument, UnsupportedOperation
from specexact.exact.random_source import AffineUniform, LazyToken
from specexact.numbers import to_fraction
from specexact.symbolic.signs import NEG, POS, ZERO

if TYPE_CHECKING:
    from specexact.symbolic.random_source import SymbolicRandom

__all__ = ["TRUTH", "SymbolicUniform", "SymbolicValue", "UniformState", "number"]

TRUTH = {
    "<": frozenset((NEG,)), "<=": frozenset((NEG, ZERO)), ">": frozenset((POS,)),
    ">=": frozenset((ZERO, POS)), "==": frozenset((ZERO,)), "!=": frozenset((NEG, POS)),
}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NONNEG = frozenset((ZERO, POS))
_NONZERO = frozenset((NEG, POS))


def number(value: Any) -> Any:
    """A plain number as a sympy Rational, or None."""
    if isinstance(value, (SymbolicValue, SymbolicUniform, LazyToken)):
        return None
    try:
        f = to_fraction(value, name="operand")
    except (InvalidArgument, TypeError, ValueError):
        return None
    return sympy.Rational(f.numerator, f.denominator)


class SymbolicValue:
    """A rational function of the symbolic p and q; comparisons decide or split the case."""

    __slots__ = ("_rng", "expr")
    __array_ufunc__ = None

    def __init__(self, expr: Any, rng: SymbolicRandom) -> None:
        self.expr = expr
        self._rng = rng

    def _other(self, other: Any) -> Any:
        if isinstance(other, SymbolicValue):
            return other.expr
        if isinstance(other, LazyToken):
            return sympy.Integer(other.value())
        return number(other)

    def _new(self, expr: Any) -> SymbolicValue:
        self._rng.tick()
        return SymbolicValue(expr, self._rng)

    def _nonzero(self, expr: Any, what: str) -> None:
        if not self._rng.decider.decide(expr, _NONZERO, what):
            msg = f"division by zero: {sympy.sstr(expr)} is 0 in this case"
            raise ZeroDivisionError(msg)

    def __add__(self, other: Any) -> Any:
        o = self._other(other)
        return NotImplemented if o is None else self._new(self.expr + o)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        o = self._other(other)
        return NotImplemented if o is None else self._new(self.expr - o)

    def __rsub__(self, other: Any) -> Any:
        o = self._other(other)
        return NotImplemented if o is None else self._new(o - self.expr)

    def __mul__(self, other: Any) -> Any:
        o = self._other(other)
        return NotImplemented if o is None else self._new(self.expr * o)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        o = self._other(other)
        if o is None:
            return NotImplemented
        self._nonzero(o, f"division by {sympy.sstr(o)}")
        return self._new(self.expr / o)

    def __rtruediv__(self, other: Any) -> Any:
        o = self._other(other)
        if o is None:
            return NotImplemented
        self._nonzero(self.expr, f"division by {sympy.sstr(self.expr)}")
        return self._new(o / self.expr)

    def __pow__(self, other: Any) -> Any:
        o = self._other(other)
        if o is None or not o.is_Integer:
            raise self._rng.unsupported(
                f"'**' with exponent {other!r} on a symbolic probability: only integer "
                "powers keep it a rational function")
        if o < 0:
            self._nonzero(self.expr, f"division by {sympy.sstr(self.expr)}")
        return self._new(self.expr ** o)

    def __rpow__(self, other: Any) -> Any:
        raise self._rng.unsupported("a symbolic probability as an exponent (not polynomial)")

    def __neg__(self) -> SymbolicValue:
        return self._new(-self.expr)

    def __pos__(self) -> SymbolicValue:
        return self

    def __abs__(self) -> SymbolicValue:
        nonneg = self._rng.decider.decide(self.expr, _NONNEG, "abs()")
        return self if nonneg else self._new(-self.expr)

    def _compare(self, op: str, other: Any) -> Any:
        if isinstance(other, SymbolicUniform):
            return NotImplemented
        o = self._other(other)
        if o is None:
            if op in ("==", "!="):
                return NotImplemented
            raise self._rng.unsupported(
                f"comparing a symbolic probability with {type(other).__name__} {other!r}")
        self._rng.tick()
        return self._rng.decider.decide(self.expr - o, TRUTH[op], f"comparison '{op}'")

    def __lt__(self, other: Any) -> Any:
        return self._compare("<", other)

    def __le__(self, other: Any) -> Any:
        return self._compare("<=", other)

    def __gt__(self, other: Any) -> Any:
        return self._compare(">", other)

    def __ge__(self, other: Any) -> Any:
        return self._compare(">=", other)

    def __eq__(self, other: object) -> Any:
        return self._compare("==", other)

    def __ne__(self, other: object) -> Any:
        return self._compare("!=", other)

    def __bool__(self) -> bool:
        return self._rng.decider.decide(self.expr, _NONZERO, f"truth value of {self.expr}")

    def _no_value(self, what: str) -> UnsupportedOperation:
        return self._rng.unsupported(
            f"{what} of the symbolic probability {sympy.sstr(self.expr)}: it has no "
            "numeric value; non-polynomial functions (exp, log, sqrt, rounding, float "
            "arithmetic) cannot be proved symbolically")

    def __float__(self) -> float:
        raise self._no_value("float()")

    def __int__(self) -> int:
        raise self._no_value("int()")

    def __index__(self) -> int:
        raise self._no_value("using as an index")

    def __complex__(self) -> complex:
        raise self._no_value("complex()")

    def __round__(self, ndigits: Any = None) -> Any:
        raise self._no_value("round()")

    def __floor__(self) -> Any:
        raise self._no_value("math.floor()")

    def __ceil__(self) -> Any:
        raise self._no_value("math.ceil()")

    def __trunc__(self) -> Any:
        raise self._no_value("math.trunc()")

    def __floordiv__(self, other: Any) -> Any:
        raise self._no_value("'//'")

    def __mod__(self, other: Any) -> Any:
        raise self._no_value("'%'")

    def __hash__(self) -> int:
        raise self._no_value("hash()")

    def __repr__(self) -> str:
        return f"<symbolic {sympy.sstr(self.expr)}>"

    __str__ = __repr__


class UniformState:
    """The interval a lazy uniform is known to lie in, and whether each end belongs to it.

    The ends matter on a grid only: ``u = lo`` has probability 0 for a
    continuous uniform but 2^-K for a K-bit one when ``lo`` is a grid point
    (0 always is).
    """

    __slots__ = ("hi", "hi_closed", "index", "lo", "lo_closed")

    def __init__(self, index: int) -> None:
        self.index = index
        self.lo: Any = sympy.Integer(0)
        self.hi: Any = sympy.Integer(1)
        self.lo_closed = True  # u = 0 is a value of every grid
        self.hi_closed = False


class SymbolicUniform(AffineUniform):
    """``a * u + b`` for one lazy uniform u on [0, 1), with symbolic a and b."""

    __slots__ = ()
    _rng: SymbolicRandom
    _state: UniformState

    def _number(self, other: Any) -> Any:
        return other.expr if isinstance(other, SymbolicValue) else number(other)

    def _new(self, a: Any, b: Any) -> SymbolicUniform:
        self._rng.tick()
        return SymbolicUniform(self._rng, self._state, a, b)

    def _check_divisor(self, c: Any) -> None:
        if not self._rng.decider.decide(c, _NONZERO, f"division by {sympy.sstr(c)}"):
            msg = f"division by zero: {sympy.sstr(c)} is 0 in this case"
            raise ZeroDivisionError(msg)

    def __repr__(self) -> str:
        return f"<lazy uniform ({sympy.sstr(self._a)})*u{self._state.index} + ({self._b})>"

    def _compare(self, op: str, other: Any) -> bool:
        a, b = self._a, self._b
        if isinstance(other, AffineUniform):
            other_a, other_b = self._same_draw(other)
            a, b, c = a - other_a, b - other_b, sympy.Integer(0)
        else:
            c = self._const(other, op)
        rng = self._rng
        rng.tick()
        sign = rng.decider.sign(a, f"the coefficient of u{self._state.index}")
        if sign == ZERO:
            return rng.decider.decide(b - c, TRUTH[op], f"comparison '{op}'")
        if sign == NEG:
            op = _FLIP[op]
        return rng.compare_uniform(self._state, op, (c - b) / a)


