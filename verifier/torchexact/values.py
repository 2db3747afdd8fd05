"""The elements of an exact tensor, and where they come from.

An exact tensor holds, element by element, one of:

* ``Fraction`` (float dtypes) or ``int`` / :class:`~verifier.random_source.LazyToken`
  (integer dtypes) or ``bool`` (bool dtype): exact values;
* :class:`Special`: ``inf``, ``-inf`` or ``nan`` as torch computes them
  (``1/0``, ``0/0``, ``log(0)``), remembering the op and line that made them;
* :class:`Uninit`: memory from ``torch.empty``/``empty_like``/``new_empty``
  that was never written;
* :class:`LogR`: the exact logarithm ``log(r)`` of a positive rational ``r``,
  so that ``exp(log r) = r``, ``log r1 - log r2 = log(r1/r2)``, ``m log r =
  log(r^m)``: logits of exact models stay exact;
* :class:`Unif`: ``a * g + b`` for one uniform draw ``g`` (``torch.rand``),
  on the dtype's grid ``k / 2**K`` or continuous; comparing it branches;
* noise: :class:`Scaled` (``c E`` for an Exp(1) draw ``E``), :class:`LogE`
  (``loc + s log E``: Gumbel noise is ``-log E``) and :class:`Race`
  (``w / E``).  Only their argmax (or argmin) over a row of independent
  draws is modelled: it is a categorical draw.

Python operators on these classes implement torch's float semantics on exact
values; anything that would leave the exact world raises
:class:`~verifier.errors.UnsupportedOperation` through :func:`unsupported`.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from fractions import Fraction
from typing import Any

from verifier.errors import SamplerFailure, UnsupportedOperation
from verifier.random_source import ExactRandom, LazyToken, LazyUniform

__all__ = [
    "LogR",
    "NanFlag",
    "NoiseRecord",
    "NonFiniteValue",
    "Opaque",
    "PendingRace",
    "Race",
    "Scaled",
    "Special",
    "Unif",
    "UniformRecord",
    "Uninit",
    "UninitialisedRead",
    "current_rng",
    "describe",
    "is_exact_scalar",
    "rng_var",
    "unsupported",
    "user_location",
]

_ZERO = Fraction(0)
_ONE = Fraction(1)
_HERE = os.path.dirname(os.path.abspath(__file__))
_VERIFIER = os.path.dirname(_HERE)

#: The exact random source of the execution in progress (set by the session).
rng_var: ContextVar[ExactRandom | None] = ContextVar("specexact_torch_rng", default=None)


def current_rng() -> ExactRandom | None:
    return rng_var.get()


def _torch_dir() -> str | None:
    torch = sys.modules.get("torch")
    file = getattr(torch, "__file__", None)
    return None if file is None else os.path.dirname(os.path.abspath(file))


def user_location() -> str:
    """``file:line`` of the innermost frame outside this package, torch and the engine."""
    torch_dir = _torch_dir()
    frame: Any = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        inside = name.startswith(_HERE) or (torch_dir is not None and name.startswith(torch_dir))
        if not inside and not name.startswith(os.path.dirname(contextlib_file())):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown location>"


def contextlib_file() -> str:
    import contextlib
    return os.path.abspath(contextlib.__file__)


def unsupported(what: str) -> UnsupportedOperation:
    """An UnsupportedOperation naming ``what`` and the user's line, recorded by the engine."""
    text = f"torch exact mode cannot model {what} (at {user_location()})"
    rng = current_rng()
    if rng is not None:
        return rng.unsupported(text)
    return UnsupportedOperation(f"unsupported operation: {text}")


class NonFiniteValue(SamplerFailure):
    """A NaN or infinity reached a token, a weight or a Python branch."""


class UninitialisedRead(SamplerFailure):
    """A value of ``torch.empty``-like memory that was never written was read."""


# --------------------------------------------------------------------------
# Specials and uninitialised memory
# --------------------------------------------------------------------------


def _sign(x: Any) -> int:
    """Sign of a finite exact value (Fraction, int, LogR)."""
    if isinstance(x, LogR):
        return (x.r > 1) - (x.r < 1)
    if isinstance(x, (Fraction, int)):
        return (x > 0) - (x < 0)
    raise unsupported(f"mixing a float special (inf/nan) with {describe(x)}")


_FLOAT_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: bool(a < b), "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b), ">=": lambda a, b: bool(a >= b),
    "==": lambda a, b: bool(a == b), "!=": lambda a, b: bool(a != b),
}


class Special:
    """``inf``, ``-inf`` or ``nan``, with the op and line that produced it."""

    __slots__ = ("origin", "value")

    def __init__(self, value: float, origin: str) -> None:
        self.value = value
        self.origin = origin

    @staticmethod
    def make(value: float, op: str, source: Any = None) -> Any:
        if not (math.isnan(value) or math.isinf(value)):
            return Fraction(value)
        if isinstance(source, Special):
            return Special(value, source.origin)
        return Special(value, f"{op} at {user_location()}")

    def _binary(self, other: Any, op: str, fn: Callable[[float, float], float],
                reflected: bool = False) -> Any:
        if isinstance(other, Uninit):
            return other
        if isinstance(other, Special):
            o = other.value
        else:
            # A finite operand matters to inf/nan arithmetic only through its sign
            # and whether it is zero (for * and /), or not at all (for + and -).
            o = 0.0 if op in ("+", "-") else float(_sign(other))
        a, b = (o, self.value) if reflected else (self.value, o)
        if op == "/" and b == 0.0:
            value = math.copysign(math.inf, a) if a == a else math.nan
        elif op == "/" and math.isinf(b) and not math.isinf(a) and a == a:
            return _ZERO  # finite / inf
        else:
            value = fn(a, b)
        return Special.make(value, op, self)

    def __add__(self, other: Any) -> Any:
        return self._binary(other, "+", lambda a, b: a + b)

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, "+", lambda a, b: a + b, True)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, "-", lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, "-", lambda a, b: a - b, True)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, "*", lambda a, b: a * b)

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, "*", lambda a, b: a * b, True)

    def __truediv__(self, other: Any) -> Any:
        return self._binary(other, "/", lambda a, b: a / b)

    def __rtruediv__(self, other: Any) -> Any:
        return self._binary(other, "/", lambda a, b: a / b, True)

    def __neg__(self) -> Special:
        return Special(-self.value, self.origin)

    def __pos__(self) -> Special:
        return self

    def __abs__(self) -> Special:
        return Special(abs(self.value), self.origin)

    def _cmp(self, other: Any, op: str) -> Any:
        if isinstance(other, Uninit):
            return other
        if isinstance(other, Unif):
            return other.compare(_SWAP[op], self)
        if isinstance(other, Special):
            o = other.value
        elif isinstance(other, (Fraction, int, LogR)):
            o = 0.0  # any finite number compares with +-inf and nan as 0 does
        else:
            raise unsupported(f"comparing a float special with {describe(other)}")
        return _FLOAT_CMP[op](self.value, o)

    def __lt__(self, other: Any) -> Any:
        return self._cmp(other, "<")

    def __le__(self, other: Any) -> Any:
        return self._cmp(other, "<=")

    def __gt__(self, other: Any) -> Any:
        return self._cmp(other, ">")

    def __ge__(self, other: Any) -> Any:
        return self._cmp(other, ">=")

    def __eq__(self, other: Any) -> Any:
        return self._cmp(other, "==")

    def __ne__(self, other: Any) -> Any:
        return self._cmp(other, "!=")

    __hash__ = object.__hash__

    @property
    def is_nan(self) -> bool:
        return self.value != self.value

    def __repr__(self) -> str:
        return repr(self.value)


class Uninit:
    """Memory of ``torch.empty``-like factories that nothing wrote; every op keeps it."""

    __slots__ = ("origin",)

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def _keep(self, *_: Any) -> Uninit:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _keep
    __truediv__ = __rtruediv__ = __neg__ = __pos__ = __abs__ = _keep
    __lt__ = __le__ = __gt__ = __ge__ = _keep
    __eq__ = __ne__ = _keep  # type: ignore[assignment]
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<uninitialised from {self.origin}>"


# --------------------------------------------------------------------------
# Exact logarithms
# --------------------------------------------------------------------------


def _integer(x: Any) -> int | None:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, Fraction) and x.denominator == 1:
        return int(x)
    return None


class LogR:
    """``log(r)`` for a positive rational ``r != 1`` (``log 1`` is the Fraction 0)."""

    __slots__ = ("r",)

    def __init__(self, r: Fraction) -> None:
        self.r = r

    @staticmethod
    def of(r: Fraction) -> Any:
        return _ZERO if r == 1 else LogR(r)

    @staticmethod
    def ratio(x: Any) -> Fraction | None:
        """The r of a log-domain value (``0`` is ``log 1``), else None."""
        if isinstance(x, LogR):
            return x.r
        if isinstance(x, (Fraction, int)) and not isinstance(x, bool) and x == 0:
            return _ONE
        return None

    def _log_operand(self, other: Any, op: str) -> Fraction:
        r = LogR.ratio(other)
        if r is None:
            raise unsupported(f"'{op}' between an exact log log({self.r}) and "
                              f"{describe(other)} (the result is not the log of a rational)")
        return r

    def __add__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit, Unif, LogE)):
            return other.__radd__(self)
        return LogR.of(self.r * self._log_operand(other, "+"))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit, Unif, LogE)):
            return other.__rsub__(self)
        return LogR.of(self.r / self._log_operand(other, "-"))

    def __rsub__(self, other: Any) -> Any:
        return LogR.of(self._log_operand(other, "-") / self.r)

    def __neg__(self) -> Any:
        return LogR.of(1 / self.r)

    def __pos__(self) -> LogR:
        return self

    def __abs__(self) -> Any:
        return self if self.r > 1 else -self

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__rmul__(self)
        m = _integer(other)
        if m is None:
            raise unsupported(f"log({self.r}) * {describe(other)}: only integer multiples "
                              "of an exact log stay exact (temperature 1/m)")
        return _ZERO if m == 0 else LogR.of(self.r ** m)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__rtruediv__(self)
        if isinstance(other, (Fraction, int)) and not isinstance(other, bool) and other != 0:
            inv = 1 / Fraction(other)
            if inv.denominator == 1:
                return self * int(inv)
        if isinstance(other, (Fraction, int)) and other == 0:
            return Special.make(math.inf if self.r > 1 else -math.inf, "division by zero")
        raise unsupported(f"log({self.r}) / {describe(other)}: dividing an exact log is "
                          "exact only by 1/m for an integer m (temperature 1/m)")

    def __rtruediv__(self, other: Any) -> Any:
        raise unsupported(f"{describe(other)} / log({self.r}) (not exact)")

    def _cmp_value(self, other: Any, op: str) -> tuple[Fraction, Fraction] | None:
        if isinstance(other, (Special, Uninit)):
            return None
        r = LogR.ratio(other)
        if r is None:
            raise unsupported(f"comparing log({self.r}) with {describe(other)} "
                              "(only logs of rationals, 0 and +-inf compare exactly)")
        return self.r, r

    def _cmp(self, other: Any, op: str, fn: Callable[[Fraction, Fraction], bool],
             reflected: str) -> Any:
        pair = self._cmp_value(other, op)
        if pair is None:
            return getattr(other, reflected)(self)
        return fn(*pair)

    def __lt__(self, other: Any) -> Any:
        return self._cmp(other, "<", lambda a, b: a < b, "__gt__")

    def __le__(self, other: Any) -> Any:
        return self._cmp(other, "<=", lambda a, b: a <= b, "__ge__")

    def __gt__(self, other: Any) -> Any:
        return self._cmp(other, ">", lambda a, b: a > b, "__lt__")

    def __ge__(self, other: Any) -> Any:
        return self._cmp(other, ">=", lambda a, b: a >= b, "__le__")

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, (Fraction, int)) and LogR.ratio(other) is None:
            return False  # log r is transcendental for rational r != 1
        return self._cmp(other, "==", lambda a, b: a == b, "__eq__")

    def __ne__(self, other: Any) -> Any:
        result = self.__eq__(other)
        return result if isinstance(result, Uninit) else not result

    __hash__ = object.__hash__

    def __float__(self) -> float:
        return math.log(self.r)

    def __repr__(self) -> str:
        return f"log({self.r})"


# --------------------------------------------------------------------------
# Uniform draws
# --------------------------------------------------------------------------


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


class Unif:
    """``a * g + b`` for the uniform ``g`` of ``rec`` (grid ``k/2**K`` or continuous)."""

    __slots__ = ("a", "b", "rec")

    def __init__(self, rec: UniformRecord, a: Fraction = _ONE, b: Fraction = _ZERO) -> None:
        self.rec = rec
        self.a = a
        self.b = b

    def _const(self, other: Any, op: str) -> Fraction:
        if isinstance(other, LazyToken):
            return Fraction(other.value())
        if isinstance(other, (Fraction, int)) and not isinstance(other, bool):
            return Fraction(other)
        raise unsupported(f"'{op}' between a torch.rand uniform and {describe(other)}")

    def _pass(self, other: Any) -> bool:
        return isinstance(other, Uninit)

    def __add__(self, other: Any) -> Any:
        if self._pass(other):
            return other
        if isinstance(other, Unif) and other.rec is self.rec:
            return Unif(self.rec, self.a + other.a, self.b + other.b)
        return Unif(self.rec, self.a, self.b + self._const(other, "+"))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if self._pass(other):
            return other
        if isinstance(other, Unif) and other.rec is self.rec:
            return Unif(self.rec, self.a - other.a, self.b - other.b)
        return Unif(self.rec, self.a, self.b - self._const(other, "-"))

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
        if isinstance(other, Special):
            if other.is_nan:
                return op == "!="
            return {"<": other.value > 0, "<=": other.value > 0, ">": other.value < 0,
                    ">=": other.value < 0, "==": False, "!=": True}[op]
        a, b = self.a, self.b
        if isinstance(other, Unif):
            if other.rec is not self.rec:
                raise unsupported("comparing two different torch.rand uniforms")
            a, b, t = a - other.a, b - other.b, _ZERO
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

    def __lt__(self, other: Any) -> Any:
        return self.compare("<", other)

    def __le__(self, other: Any) -> Any:
        return self.compare("<=", other)

    def __gt__(self, other: Any) -> Any:
        return self.compare(">", other)

    def __ge__(self, other: Any) -> Any:
        return self.compare(">=", other)

    def __eq__(self, other: Any) -> Any:
        return self.compare("==", other)

    def __ne__(self, other: Any) -> Any:
        return self.compare("!=", other)

    __hash__ = object.__hash__

    def __float__(self) -> float:
        raise unsupported("float() of a torch.rand uniform (it has no single value)")

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


class Scaled(_Noise):
    """``c * E`` for the Exp(1) draw of ``rec`` (c a nonzero rational)."""

    __slots__ = ("c", "rec")

    def __init__(self, rec: NoiseRecord, c: Fraction) -> None:
        self.rec = rec
        self.c = c

    def __mul__(self, other: Any) -> Any:
        k = _positive(other)
        if k is None:
            raise _noise_misuse(f"multiplying by {describe(other)}")
        return Scaled(self.rec, self.c * k)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        k = _positive(other)
        if k is None:
            raise _noise_misuse(f"dividing by {describe(other)}")
        return Scaled(self.rec, self.c / k)

    def __rtruediv__(self, other: Any) -> Any:
        # w / (c E) = (w / c) / E
        w = other if isinstance(other, (Fraction, int)) and not isinstance(other, bool) \
            else None
        if w is None or w < 0 or self.c < 0:
            raise _noise_misuse(f"{describe(other)} / E")
        return Race(self.rec, Fraction(w) / self.c)

    def __neg__(self) -> Scaled:
        return Scaled(self.rec, -self.c)

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


class Race(_Noise):
    """``w / E``: in an argmax over a row of independent E, index i wins w.p. w_i / sum w."""

    __slots__ = ("rec", "w")

    def __init__(self, rec: NoiseRecord, w: Fraction) -> None:
        self.rec = rec
        self.w = w

    def __mul__(self, other: Any) -> Any:
        k = _positive(other)
        if k is None:
            raise _noise_misuse(f"multiplying a race entry by {describe(other)}")
        return Race(self.rec, self.w * k)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        k = _positive(other)
        if k is None:
            raise _noise_misuse(f"dividing a race entry by {describe(other)}")
        return Race(self.rec, self.w / k)

    def log(self) -> Any:
        if self.w == 0:
            return Special.make(-math.inf, "log")
        return LogE(self.rec, LogR.of(self.w), -1)

    def __repr__(self) -> str:
        return f"{self.w}/E{self.rec.index}"


def is_exact_scalar(x: Any) -> bool:
    return isinstance(x, (Fraction, int))


def describe(x: Any) -> str:
    if isinstance(x, Unif):
        return "a torch.rand uniform"
    if isinstance(x, (Scaled, LogE, Race)):
        return f"exponential/Gumbel noise ({x!r})"
    if isinstance(x, LazyToken):
        return "a drawn token"
    if isinstance(x, (Fraction, int)):
        return f"the rational {x}"
    return f"{type(x).__name__} {x!r}"


class Opaque(_Noise):
    """The value of a noise race's winner: drawn, but not modelled (any use is refused)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<value of a noise race (not modelled)>"


class NanFlag:
    """The bool of a comparison with NaN: usable as torch's False (or True for !=),
    but reading it into a Python branch is a finding."""

    __slots__ = ("origin", "value")

    def __init__(self, value: bool, origin: str) -> None:
        self.value = value
        self.origin = origin

    def __repr__(self) -> str:
        return f"{self.value} (comparison with nan from {self.origin})"


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
