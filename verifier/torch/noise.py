"""Random elements of exact tensors: uniforms from ``torch.rand`` and exponential noise.

:class:`Unif` is ``a * g + b`` for one draw ``g`` of ``torch.rand``, on the
dtype's grid ``k / 2**K`` (0 included) or continuous; comparing it branches
through the engine's lazy uniform.  :class:`Scaled` (``c E``), :class:`LogE`
(``loc + s log E``, Gumbel noise is ``-log E``) and :class:`Race` (``w / E``)
stand for ideal Exp(1) draws; only the argmax (or argmin) of a row of
independent draws is modelled, as the categorical draw it is
(:class:`PendingRace`, drawn when first read).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from specexact.errors import UnsupportedOperation
from specexact.exact.random_source import LazyToken, LazyUniform
from specexact.numbers import ONE, ZERO
from specexact.torch.values import (
    Comparisons,
    LogR,
    Special,
    Uninit,
    current_rng,
    describe,
    unsupported,
)

__all__ = [
    "IDEALISED_FLOOR",
    "IDEALISED_NOISE_FLOOR",
    "LogE",
    "NoiseRecord",
    "Opaque",
    "PendingRace",
    "Race",
    "Scaled",
    "Unif",
    "UniformRecord",
]


#: How a floor on a continuous uniform is idealised (the verdict quotes it).
IDEALISED_FLOOR = ("clamp(u, min=c) of the continuous uniform, with 0 < c at most the "
                   "dtype grid's step, as u itself: the floor guards the grid's 0, which "
                   "the continuous uniform does not have (it moves mass c)")

#: How a floor on exponential noise is idealised (the verdict quotes it).
IDEALISED_NOISE_FLOOR = ("clamp(c E, min=f) of ideal exponential noise, with 0 < f / c at "
                         "most the dtype grid's step, as c E itself: the floor guards the "
                         "E = 0 of a grid draw (it moves mass at most f / c per entry, "
                         "added to the stated bound)")


class UniformRecord:
    """One uniform draw: the engine's lazy uniform and what the code did with it."""

    __slots__ = ("bits", "compared", "index", "lazy", "noise")

    def __init__(self, lazy: LazyUniform, bits: int | None, index: int) -> None:
        self.lazy = lazy
        self.bits = bits
        self.index = index
        self.compared = False
        self.noise = False


_SWAP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


class Unif(Comparisons):
    """``a * g + b`` for the uniform ``g`` of ``rec`` (grid ``k/2**K`` or continuous)."""

    __slots__ = ("a", "b", "rec")

    def __init__(self, rec: UniformRecord, a: Fraction = ONE, b: Fraction = ZERO) -> None:
        self.rec = rec
        self.a = a
        self.b = b

    def _const(self, other: Any, op: str) -> Fraction:
        if isinstance(other, LazyToken):
            return Fraction(other.value())
        if isinstance(other, (Fraction, int)) and not isinstance(other, bool):
            return Fraction(other)
        if isinstance(other, float) and math.isfinite(other):
            return Fraction(other)  # a Python float (``.item()`` code) is an exact dyadic
        raise unsupported(f"'{op}' between a torch.rand uniform and {describe(other)}")

    def _pass(self, other: Any) -> bool:
        return isinstance(other, Uninit)

    def floored(self, c: Fraction, grid_step: Fraction) -> bool:
        """Whether ``max(self, c)`` is idealised as ``self`` (see :data:`IDEALISED_FLOOR`)."""
        return self.rec.bits is None and (self.a, self.b) == (ONE, ZERO) \
            and 0 < c <= grid_step

    def _shift(self, other: Any, sym: str, op: Callable[[Any, Any], Any],
               special: Callable[[Special, Any], Any]) -> Any:
        """``self + other`` or ``self - other`` (``op``; ``special`` is Special's reflected
        op): the same uniform on both sides stays one affine uniform."""
        if self._pass(other):
            return other
        if isinstance(other, Special):
            return special(other, self)
        if isinstance(other, Unif) and other.rec is self.rec:
            return Unif(self.rec, op(self.a, other.a), op(self.b, other.b))
        return Unif(self.rec, self.a, op(self.b, self._const(other, sym)))

    def __add__(self, other: Any) -> Any:
        return self._shift(other, "+", operator.add, Special.__radd__)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self._shift(other, "-", operator.sub, Special.__rsub__)

    def __rsub__(self, other: Any) -> Any:
        if self._pass(other):
            return other
        return Unif(self.rec, -self.a, self._const(other, "-") - self.b)

    def __mul__(self, other: Any) -> Any:
        if self._pass(other):
            return other
        c = self._const(other, "*")
        return Unif(self.rec, self.a * c, self.b * c)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if self._pass(other):
            return other
        c = self._const(other, "/")
        if c == 0:
            raise unsupported("dividing a torch.rand uniform by zero")
        return Unif(self.rec, self.a / c, self.b / c)

    def __rtruediv__(self, other: Any) -> Any:
        raise unsupported(f"{describe(other)} / (torch.rand uniform): not affine in the draw")

    def __neg__(self) -> Unif:
        return Unif(self.rec, -self.a, -self.b)

    def __pos__(self) -> Unif:
        return self

    def __abs__(self) -> Any:
        raise unsupported("abs() of a torch.rand uniform")

    # -- comparisons: g on its grid, mapped onto the engine's continuous u ------

    def compare(self, op: str, other: Any) -> Any:
        if isinstance(other, Uninit):
            return other
        if isinstance(other, float) and not math.isfinite(other):
            other = Special.make(other, "a float constant")
        if isinstance(other, Special):
            if other.is_nan:
                return op == "!="
            return {"<": other.value > 0, "<=": other.value > 0, ">": other.value < 0,
                    ">=": other.value < 0, "==": False, "!=": True}[op]
        a, b = self.a, self.b
        if isinstance(other, Unif):
            if other.rec is not self.rec:
                raise unsupported("comparing two different torch.rand uniforms")
            a, b, t = a - other.a, b - other.b, ZERO
        else:
            t = self._const(other, op)
        rec = self.rec
        if rec.noise:
            raise unsupported("comparing a uniform that was already turned into "
                              "exponential/Gumbel noise (the two uses are dependent)")
        if a == 0:
            return {"<": b < t, "<=": b <= t, ">": b > t, ">=": b >= t, "==": b == t,
                    "!=": b != t}[op]
        rec.compared = True
        s = (t - b) / a
        if a < 0:
            op = _SWAP[op]
        return _grid_compare(rec, op, s)

    def __float__(self) -> float:
        raise unsupported("float() of a torch.rand uniform (it has no single value)")

    def what(self) -> str:
        return "a torch.rand uniform"

    def __repr__(self) -> str:
        g = f"u{self.rec.index}"
        return g if self.a == 1 and self.b == 0 else f"{self.a}*{g} + {self.b}"


def _grid_compare(rec: UniformRecord, op: str, s: Fraction) -> bool:
    """``g op s`` where g is the draw on its grid; branches through the engine."""
    u = rec.lazy
    if rec.bits is None:
        return bool({"<": lambda: u < s, "<=": lambda: u <= s, ">": lambda: u > s,
                     ">=": lambda: u >= s, "==": lambda: u == s,
                     "!=": lambda: u != s}[op]())
    scale = 1 << rec.bits
    scaled = s * scale
    if op in ("<", ">="):
        # g < s  <=>  k < ceil(s 2^K)  <=>  u < ceil(s 2^K) / 2^K
        below = bool(u < Fraction(math.ceil(scaled), scale))
        return below if op == "<" else not below
    if op in ("<=", ">"):
        at_most = bool(u < Fraction(math.floor(scaled) + 1, scale))
        return at_most if op == "<=" else not at_most
    if scaled.denominator != 1:
        return op == "!="
    m = int(scaled)
    inside = bool(u >= Fraction(m, scale)) and bool(u < Fraction(m + 1, scale))
    return inside if op == "==" else not inside


# --------------------------------------------------------------------------
# Exponential and Gumbel noise
# --------------------------------------------------------------------------


class NoiseRecord:
    """One Exp(1) draw; ``used`` once its row has been raced (argmax taken)."""

    __slots__ = ("index", "source", "used")

    def __init__(self, index: int, source: str) -> None:
        self.index = index
        self.source = source
        self.used = False


def _noise_misuse(what: str) -> UnsupportedOperation:
    return unsupported(f"{what} on exponential/Gumbel noise: only the argmax (or argmin) "
                       "of a row of independent draws (w / E, log w + G) is modelled exactly")


class _Noise:
    """Arithmetic not listed in a subclass is not modelled."""

    __slots__ = ()

    def what(self) -> str:
        return f"exponential/Gumbel noise ({self!r})"

    def _no(self, *_: Any) -> Any:
        raise _noise_misuse("this arithmetic")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no
    __truediv__ = __rtruediv__ = __neg__ = __abs__ = _no

    def _cmp(self, *_: Any) -> Any:
        raise _noise_misuse("a comparison")

    __lt__ = __le__ = __gt__ = __ge__ = _cmp
    __eq__ = __ne__ = _cmp
    __hash__ = object.__hash__

    def __float__(self) -> float:
        raise _noise_misuse("float()")


def _positive(x: Any) -> Fraction | None:
    if isinstance(x, (Fraction, int)) and not isinstance(x, bool) and x > 0:
        return Fraction(x)
    return None


class _Multiple(_Noise):
    """A noise entry with a rational coefficient, which multiplying or dividing by a
    positive rational rescales."""

    __slots__ = ()

    #: How a refusal names the entry, before "by".
    _NAME = ""

    def _with(self, op: Callable[[Fraction, Fraction], Fraction], k: Fraction) -> Any:
        """This entry with its coefficient ``op(coefficient, k)``."""
        raise NotImplementedError

    def _by(self, other: Any, verb: str) -> Fraction:
        k = _positive(other)
        if k is None:
            raise _noise_misuse(f"{verb} {self._NAME}by {describe(other)}")
        return k

    def __mul__(self, other: Any) -> Any:
        return self._with(operator.mul, self._by(other, "multiplying"))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        return self._with(operator.truediv, self._by(other, "dividing"))


class Scaled(_Multiple):
    """``c * E`` for the Exp(1) draw of ``rec`` (c a nonzero rational)."""

    __slots__ = ("c", "rec")

    def __init__(self, rec: NoiseRecord, c: Fraction) -> None:
        self.rec = rec
        self.c = c

    def _with(self, op: Callable[[Fraction, Fraction], Fraction], k: Fraction) -> Scaled:
        return Scaled(self.rec, op(self.c, k))

    def __rtruediv__(self, other: Any) -> Any:
        # w / (c E) = (w / c) / E
        w = other if isinstance(other, (Fraction, int)) and not isinstance(other, bool) \
            else None
        if w is None:
            raise _noise_misuse(f"{describe(other)} / E")
        return Race(self.rec, Fraction(w) / self.c)  # negative when w / c is: E > 0

    def __neg__(self) -> Scaled:
        return Scaled(self.rec, -self.c)

    def floor_mass(self, f: Fraction, grid_step: Fraction) -> Fraction | None:
        """``P(c E < f) <= f / c`` when ``max(self, f)`` is idealised as ``self`` (see
        :data:`IDEALISED_NOISE_FLOOR`), else None."""
        if self.c > 0 and f > 0 and f / self.c <= grid_step:
            return f / self.c
        return None

    def log(self) -> LogE:
        if self.c < 0:
            raise _noise_misuse("log of a negative exponential")
        return LogE(self.rec, LogR.of(self.c), 1)

    def __repr__(self) -> str:
        return f"{self.c}*E{self.rec.index}"


class LogE(_Noise):
    """``loc + s log E``; ``-log E`` is Gumbel noise, ``loc`` a log-domain value."""

    __slots__ = ("loc", "rec", "s")

    def __init__(self, rec: NoiseRecord, loc: Any, s: int) -> None:
        self.rec = rec
        self.loc = loc
        self.s = s

    def _shift(self, other: Any) -> Any:
        if isinstance(other, Special) and other.value == -math.inf:
            return other
        if isinstance(other, (LogR, Fraction, int)) and not isinstance(other, bool):
            return LogE(self.rec, self.loc + other, self.s)
        raise _noise_misuse(f"adding {describe(other)}")

    def __add__(self, other: Any) -> Any:
        return self._shift(other)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, (LogR, Fraction, int)) and not isinstance(other, bool):
            return LogE(self.rec, self.loc - other, self.s)
        raise _noise_misuse(f"subtracting {describe(other)}")

    def __rsub__(self, other: Any) -> Any:
        return (-self)._shift(other)

    def __neg__(self) -> LogE:
        return LogE(self.rec, -self.loc, -self.s)

    def __mul__(self, other: Any) -> Any:
        k = _positive(other)
        if k != 1:
            raise _noise_misuse(f"multiplying by {describe(other)}")
        return self

    def exp(self) -> Any:
        # exp(log r - log E) = r / E
        r = LogR.ratio(self.loc)
        if self.s != -1 or r is None:
            raise _noise_misuse("exp")
        return Race(self.rec, r)

    def race_weight(self) -> Fraction:
        """The categorical weight of this entry in an argmax race."""
        r = LogR.ratio(self.loc)
        if self.s != -1 or r is None:
            raise _noise_misuse(f"an argmax over {self!r} (its weight exp(loc) is not rational)")
        return r

    def __repr__(self) -> str:
        sign = "+" if self.s > 0 else "-"
        return f"{self.loc} {sign} log E{self.rec.index}"


class Race(_Multiple):
    """``w / E``: in an argmax over a row of independent E, index i wins w.p. w_i / sum w.

    ``w`` may be negative (an unclamped residual): such an entry is negative, so it
    never wins against a positive one.
    """

    __slots__ = ("rec", "w")

    def __init__(self, rec: NoiseRecord, w: Fraction) -> None:
        self.rec = rec
        self.w = w

    _NAME = "a race entry "

    def _with(self, op: Callable[[Fraction, Fraction], Fraction], k: Fraction) -> Race:
        return Race(self.rec, op(self.w, k))

    def log(self) -> Any:
        if self.w == 0:
            return Special.make(-math.inf, "log")
        if self.w < 0:
            return Special.make(math.nan, "log of a negative race entry")
        return LogE(self.rec, LogR.of(self.w), -1)

    def __repr__(self) -> str:
        return f"{self.w}/E{self.rec.index}"


class Opaque(_Noise):
    """The value of a noise race's winner: drawn, but not modelled (any use is refused)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<value of a noise race (not modelled)>"


class PendingRace:
    """The winner of a noise race, drawn only when something reads it.

    Engines compute a recovered token for every position with one row of
    exponentials and use at most one of them; the races share their noise, so
    reading two of them would be dependent draws (refused), reading one is a
    plain categorical draw.
    """

    __slots__ = ("_token", "recs", "weights")

    def __init__(self, recs: list[NoiseRecord], weights: list[Fraction]) -> None:
        self.recs = recs
        self.weights = weights
        self._token: Any = None

    def force(self) -> Any:
        if self._token is None:
            if any(r.used for r in self.recs):
                raise unsupported("reading the winners of two races over the same "
                                  "exponential/Gumbel noise (they are dependent draws)")
            for r in self.recs:
                r.used = True
            rng = current_rng()
            if rng is None:
                raise unsupported("a noise race read outside an exact session")
            self._token = rng.categorical(self.weights)
        return self._token

    def __repr__(self) -> str:
        return "<winner of a noise race>" if self._token is None else repr(self._token)


def _forced(name: str) -> Any:
    def method(self: PendingRace, *args: Any) -> Any:
        args = tuple(a.force() if isinstance(a, PendingRace) else a for a in args)
        return getattr(self.force(), name)(*args)

    method.__name__ = name
    return method


for _dunder in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__index__",
                "__int__", "__float__", "__bool__", "__add__", "__radd__", "__sub__",
                "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
                "__floordiv__", "__mod__", "__neg__", "__abs__", "__hash__", "__and__",
                "__or__", "__xor__", "__invert__"):
    setattr(PendingRace, _dunder, _forced(_dunder))
del _dunder
