"""The elements of an exact tensor, and where they come from.

An exact tensor holds, element by element, one of:

* ``Fraction`` (float dtypes) or ``int`` / :class:`~specexact.exact.random_source.LazyToken`
  (integer dtypes) or ``bool`` (bool dtype): exact values;
* :class:`Special`: ``inf``, ``-inf`` or ``nan`` as torch computes them
  (``1/0``, ``0/0``, ``log(0)``), remembering the op and line that made them;
* :class:`Uninit`: memory from ``torch.empty``/``empty_like``/``new_empty``
  that was never written;
* :class:`LogR`: the exact logarithm ``log(r)`` of a positive rational ``r``,
  so that ``exp(log r) = r``, ``log r1 - log r2 = log(r1/r2)``, ``m log r =
  log(r^m)``: logits of exact models stay exact;
* random elements: uniforms and exponential/Gumbel noise, in :mod:`.noise`.

Python operators on these classes implement torch's float semantics on exact
values; anything that would leave the exact world raises
:class:`~specexact.errors.UnsupportedOperation` through :func:`unsupported`.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from specexact.errors import SamplerFailure, UnsupportedOperation, package_dirs
from specexact.exact.random_source import ExactRandom, LazyToken
from specexact.numbers import ONE, ZERO

if TYPE_CHECKING:
    from specexact.torch.session import Session

__all__ = [
    "Comparisons",
    "ExpLinear",
    "FixedRandomness",
    "LogLinear",
    "LogR",
    "NanFlag",
    "NonFiniteValue",
    "Semantics",
    "Special",
    "Uninit",
    "UninitialisedRead",
    "current_rng",
    "current_session",
    "describe",
    "dtype_semantics",
    "is_exact_scalar",
    "rng_var",
    "semantics_var",
    "session_var",
    "unsupported",
    "user_location",
]

_HERE = os.path.dirname(os.path.abspath(__file__))


#: specexact's packages: a frame there is not the code under test's; the bundled
#: catalogue's rules are code under test, wherever the catalogue is installed.
_OURS = package_dirs("specexact", "specexact.properties")
_CATALOGUE = package_dirs("specexact.counterexamples")

#: The exact random source of the execution in progress (set by the session).
rng_var: ContextVar[ExactRandom | None] = ContextVar("specexact_torch_rng", default=None)


def current_rng() -> ExactRandom | None:
    return rng_var.get()


#: The execution in progress (set by :func:`specexact.torch.mode.session`): the ops,
#: the grid and the kernels reach its streams and records through it, never by an
#: import of the session's own module.
session_var: ContextVar[Session | None] = ContextVar("specexact_torch_session", default=None)


def current_session() -> Session:
    s = session_var.get()
    if s is None:
        raise RuntimeError("no exact torch session is active")
    return s


#: How values are computed: ``"dtype"``, the number torch's CPU kernel returns in the
#: tensor's dtype (the default of the entry points), or ``"exact"``, exact rationals.
Semantics = Literal["dtype", "exact"]

#: The semantics of the execution in progress (set by the session).
semantics_var: ContextVar[Semantics] = ContextVar("specexact_torch_semantics",
                                                  default="exact")


def dtype_semantics() -> bool:
    """Whether the execution in progress computes values as its dtype does."""
    return semantics_var.get() == "dtype"


def _torch_dir() -> str | None:
    torch = sys.modules.get("torch")
    file = getattr(torch, "__file__", None)
    return None if file is None else os.path.dirname(os.path.abspath(file))


#: What each code file is to :func:`user_location`: skipped (this package, torch,
#: contextlib), specexact's own (outside the catalogue), or the user's.  Keyed by
#: ``co_filename``; the answer for a file never changes (torch's place is fixed once
#: it is imported, and a file is only classified while torch runs).
_SKIPPED, _SPECEXACT, _USER = 0, 1, 2
_FILE_KINDS: dict[str, int] = {}


def _file_kind(filename: str) -> int:
    kind = _FILE_KINDS.get(filename)
    if kind is None:
        torch_dir = _torch_dir()
        name = os.path.abspath(filename)
        if name.startswith(_HERE) or (torch_dir is not None and name.startswith(torch_dir)) \
                or name.startswith(os.path.dirname(contextlib_file())):
            kind = _SKIPPED
        elif name.startswith(_OURS) and not name.startswith(_CATALOGUE):
            kind = _SPECEXACT
        else:
            kind = _USER
        if torch_dir is not None:
            _FILE_KINDS[filename] = kind
    return kind


def user_location() -> str:
    """``file:line`` of the innermost frame outside this package, torch and the engine.

    When that frame is specexact's own (it reads what the code returned, after
    the code's frames are gone), the location is the code's return value.
    """
    frame: Any = sys._getframe(1)
    while frame is not None:
        kind = _file_kind(frame.f_code.co_filename)
        if kind == _SPECEXACT:
            return "the value the code returned"
        if kind == _USER:
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


class FixedRandomness(SamplerFailure):
    """A draw from a generator the code seeded itself with a fixed seed during the call:
    every call draws the same numbers, so the output is a fixed function of the inputs."""


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


class Comparisons:
    """The six comparison operators of an element, each ``self.compare(op, other)``."""

    __slots__ = ()

    def compare(self, op: str, other: Any) -> Any:
        raise NotImplementedError

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


class Special(Comparisons):
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
        elif op in ("+", "-"):
            # A finite operand does not matter to inf/nan in + and -.
            o = 0.0
        elif op in ("*", "/") and math.isnan(self.value):
            # nan * x and nan / x (either side) are nan whatever x is: noise included.
            o = 1.0
        else:
            # A finite operand matters to inf/nan in * and / only through its sign
            # and whether it is zero.
            o = float(_sign(other))
        a, b = (o, self.value) if reflected else (self.value, o)
        if op == "/" and b == 0.0:
            value = math.copysign(math.inf, a) if a == a else math.nan
        elif op == "/" and math.isinf(b) and not math.isinf(a) and a == a:
            return ZERO  # finite / inf
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

    def compare(self, op: str, other: Any) -> Any:
        if isinstance(other, Uninit):
            return other
        if isinstance(other, Special):
            o = other.value
        elif isinstance(other, (Fraction, int, LogR)):
            o = 0.0  # any finite number compares with +-inf and nan as 0 does
        else:
            return NotImplemented  # a uniform decides (noise refuses)
        return _FLOAT_CMP[op](self.value, o)


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

    def read(self, use: str) -> UninitialisedRead:
        """The finding of code reading this memory (``use``: how, e.g. ``"read by item"``)."""
        return UninitialisedRead(f"value read from {self.origin} was never written "
                                 f"({use} at {user_location()})")

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
        return ZERO if r == 1 else LogR(r)

    @staticmethod
    def ratio(x: Any) -> Fraction | None:
        """The r of a log-domain value (``0`` is ``log 1``), else None."""
        if isinstance(x, LogR):
            return x.r
        if isinstance(x, (Fraction, int)) and not isinstance(x, bool) and x == 0:
            return ONE
        return None

    def _log_operand(self, other: Any, op: str) -> Fraction:
        r = LogR.ratio(other)
        if r is None:
            raise unsupported(f"'{op}' between an exact log log({self.r}) and "
                              f"{describe(other)} (the result is not the log of a rational)")
        return r

    def __add__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__radd__(self)
        if not isinstance(other, (LogR, Fraction, int)):
            return NotImplemented  # a uniform or noise decides
        if LogR.ratio(other) is None:
            return LogLinear.of(self) + other
        return LogR.of(self.r * self._log_operand(other, "+"))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__rsub__(self)
        if not isinstance(other, (LogR, Fraction, int)):
            return NotImplemented
        if LogR.ratio(other) is None:
            return LogLinear.of(self) - other
        return LogR.of(self.r / self._log_operand(other, "-"))

    def __rsub__(self, other: Any) -> Any:
        if LogR.ratio(other) is None:
            return other - LogLinear.of(self)
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
            if isinstance(other, Fraction):
                return LogLinear.of(self) * other  # a rational multiple: exact, not a log
            raise unsupported(f"log({self.r}) * {describe(other)}: only rational multiples "
                              "of an exact log stay exact")
        return ZERO if m == 0 else LogR.of(self.r ** m)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__rtruediv__(self)
        if isinstance(other, (Fraction, int)) and not isinstance(other, bool) and other != 0:
            inv = 1 / Fraction(other)
            if inv.denominator == 1:
                return self * int(inv)
            return LogLinear.of(self) * inv
        if isinstance(other, (Fraction, int)) and other == 0:
            return Special.make(math.inf if self.r > 1 else -math.inf, "division by zero")
        raise unsupported(f"log({self.r}) / {describe(other)}: dividing an exact log is "
                          "exact only by 1/m for an integer m (temperature 1/m)")

    def __rtruediv__(self, other: Any) -> Any:
        raise unsupported(f"{describe(other)} / log({self.r}) (not exact)")

    def _cmp_value(self, other: Any, op: str) -> tuple[Fraction, Fraction] | None:
        if isinstance(other, (Special, Uninit, LogLinear, ExpLinear)):
            return None
        r = LogR.ratio(other)
        if r is None:
            if isinstance(other, (Fraction, int)) and not isinstance(other, bool):
                # log r against a rational c: the sign of log r - c, decided exactly
                return Fraction(LogLinear.of(self).sign_minus(other)), ZERO
            raise unsupported(f"comparing log({self.r}) with {describe(other)} "
                              "(only logs of rationals, rationals and +-inf compare exactly)")
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
        if isinstance(other, (LogLinear, ExpLinear)):
            return other == self
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
# Rational combinations of exact logs (entropies), and e to them
# --------------------------------------------------------------------------

#: Precisions (bits) tried in turn when deciding the sign of a combination of logs.
_SIGN_PRECISIONS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
#: The largest exact power product tried for an equality (bits of its numbers).
_MAX_POWER_BITS = 1 << 16


def _rational(x: Any) -> bool:
    return isinstance(x, (Fraction, int)) and not isinstance(x, bool)


def _log_sign(c0: Fraction, terms: tuple[tuple[Fraction, Fraction], ...]) -> int:
    """The sign of ``c0 + sum(c log r)`` for rationals ``c0``, ``c`` and ``r > 0``, decided
    exactly.

    Zero is decided by algebra: with ``c0 != 0`` the value is never 0 (``sum c log r``
    is the log of an algebraic number, and ``e**c0`` is transcendental for a rational
    ``c0 != 0``: Lindemann-Weierstrass); with ``c0 = 0`` it is 0 iff
    ``prod r**(N c) = 1`` for the common denominator ``N`` of the ``c``, an exact
    rational product.  A nonzero value's sign comes from interval arithmetic
    (``mpmath.iv``, outward-rounded), refined until the interval excludes 0.
    """
    if not terms:
        return (c0 > 0) - (c0 < 0)
    if c0 == 0:
        n = math.lcm(*(c.denominator for _, c in terms))
        size = sum(abs(c * n) * (r.numerator.bit_length() + r.denominator.bit_length())
                   for r, c in terms)
        if size > _MAX_POWER_BITS:
            raise unsupported(f"deciding whether {_show(c0, terms)} is 0 (its exact power "
                              "product is too large)")
        product = ONE
        for r, c in terms:
            product *= r ** int(c * n)
        if product == 1:
            return 0
    from mpmath import iv  # type: ignore[import-untyped]

    for bits in _SIGN_PRECISIONS:
        iv.prec = bits
        total = iv.mpf(c0.numerator) / c0.denominator
        for r, c in terms:
            total += (iv.mpf(c.numerator) / c.denominator) * iv.log(
                iv.mpf(r.numerator) / r.denominator)
        if total.a > 0:
            return 1
        if total.b < 0:
            return -1
    raise unsupported(f"the sign of {_show(c0, terms)} (not decided at {bits} bits)")


def _show(c0: Fraction, terms: tuple[tuple[Fraction, Fraction], ...]) -> str:
    parts = [f"{c} log({r})" for r, c in terms]
    if c0 or not parts:
        parts.insert(0, str(c0))
    return " + ".join(parts)


class LogLinear:
    """``c0 + sum(c log r)``: a rational combination of logs of positive rationals (an
    entropy ``-sum p log(p + eps)``, a log compared with a rational).  Sums, rational
    multiples and comparisons are exact; ``exp`` of it is an :class:`ExpLinear`."""

    __slots__ = ("c0", "terms")

    def __init__(self, c0: Fraction, terms: dict[Fraction, Fraction]) -> None:
        self.c0 = Fraction(c0)
        self.terms = tuple(sorted((r, c) for r, c in terms.items() if c != 0 and r != 1))

    @staticmethod
    def of(x: Any) -> LogLinear:
        if isinstance(x, LogLinear):
            return x
        if isinstance(x, LogR):
            return LogLinear(ZERO, {x.r: ONE})
        if _rational(x):
            return LogLinear(Fraction(x), {})
        raise unsupported(f"{describe(x)} in a combination of exact logs")

    def simplified(self) -> Any:
        """A rational or :class:`LogR` where the combination is one."""
        if not self.terms:
            return self.c0
        if self.c0 == 0 and len(self.terms) == 1 and self.terms[0][1] == 1:
            return LogR(self.terms[0][0])
        return self

    def _combine(self, other: Any, sign: int) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__radd__(self) if sign > 0 else other.__rsub__(self)
        if not isinstance(other, (LogLinear, LogR, Fraction, int)) or isinstance(other, bool):
            return NotImplemented
        o = LogLinear.of(other)
        terms = dict(self.terms)
        for r, c in o.terms:
            terms[r] = terms.get(r, ZERO) + sign * c
        return LogLinear(self.c0 + sign * o.c0, terms).simplified()

    def __add__(self, other: Any) -> Any:
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self._combine(other, -1)

    def __rsub__(self, other: Any) -> Any:
        return (-self)._combine(other, 1)

    def __neg__(self) -> Any:
        return LogLinear(-self.c0, {r: -c for r, c in self.terms}).simplified()

    def __pos__(self) -> LogLinear:
        return self

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__rmul__(self)
        if not _rational(other):
            raise unsupported(f"({_show(self.c0, self.terms)}) * {describe(other)}: only "
                              "rational multiples of a combination of logs stay exact")
        k = Fraction(other)
        return LogLinear(self.c0 * k, {r: c * k for r, c in self.terms}).simplified()

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if _rational(other) and other != 0:
            return self * (1 / Fraction(other))
        raise unsupported(f"({_show(self.c0, self.terms)}) / {describe(other)}")

    def exp(self) -> Any:
        if self.c0 == 0 and all(c.denominator == 1 for _, c in self.terms):
            product = ONE
            for r, c in self.terms:
                product *= r ** int(c)
            return product
        return ExpLinear(self)

    def sign_minus(self, other: Any) -> int:
        """The sign of ``self - other`` (exact)."""
        diff = self._combine(other, -1)
        if isinstance(diff, LogLinear):
            return _log_sign(diff.c0, diff.terms)
        return _log_sign(ZERO, ((diff.r, ONE),)) if isinstance(diff, LogR) \
            else (diff > 0) - (diff < 0)

    def _against(self, other: Any) -> int | None:
        if isinstance(other, (Special, Uninit, ExpLinear)):
            return None
        if isinstance(other, (LogLinear, LogR)) or _rational(other):
            return self.sign_minus(other)
        raise unsupported(f"comparing {_show(self.c0, self.terms)} with {describe(other)}")

    def _cmp(self, other: Any, test: Callable[[int], bool], reflected: str) -> Any:
        sign = self._against(other)
        if sign is None:
            return getattr(other, reflected)(self)
        return test(sign)

    def __lt__(self, other: Any) -> Any:
        return self._cmp(other, lambda s: s < 0, "__gt__")

    def __le__(self, other: Any) -> Any:
        return self._cmp(other, lambda s: s <= 0, "__ge__")

    def __gt__(self, other: Any) -> Any:
        return self._cmp(other, lambda s: s > 0, "__lt__")

    def __ge__(self, other: Any) -> Any:
        return self._cmp(other, lambda s: s >= 0, "__le__")

    def __eq__(self, other: Any) -> Any:
        return self._cmp(other, lambda s: s == 0, "__eq__")

    def __ne__(self, other: Any) -> Any:
        result = self.__eq__(other)
        return result if isinstance(result, Uninit) else not result

    __hash__ = object.__hash__

    def __float__(self) -> float:
        return float(self.c0) + sum(float(c) * math.log(r) for r, c in self.terms)

    def what(self) -> str:
        return f"the exact combination of logs {_show(self.c0, self.terms)}"

    def __repr__(self) -> str:
        return _show(self.c0, self.terms)


class ExpLinear:
    """``e ** L`` for a :class:`LogLinear` ``L`` that is not the log of a rational
    (``exp(-entropy)``): positive; rational multiples and comparisons are exact."""

    __slots__ = ("log",)

    def __init__(self, log: LogLinear) -> None:
        self.log = log

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, (Special, Uninit)):
            return other.__rmul__(self)
        if _rational(other):
            if other == 0:
                return ZERO
            if other > 0:
                return LogLinear.of(self.log + LogR.of(Fraction(other))).exp()
        raise unsupported(f"{self!r} * {describe(other)}: only positive rational multiples "
                          "of e to a combination of logs stay exact")

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if _rational(other) and other > 0:
            return self * (1 / Fraction(other))
        raise unsupported(f"{self!r} / {describe(other)}")

    def _against(self, other: Any) -> int | None:
        if isinstance(other, (Special, Uninit)):
            return None
        if isinstance(other, ExpLinear):
            return self.log.sign_minus(other.log)
        if _rational(other):
            if other <= 0:
                return 1
            return self.log.sign_minus(LogR.of(Fraction(other)))
        raise unsupported(f"comparing {self!r} with {describe(other)}")

    __lt__ = LogLinear.__lt__
    __le__ = LogLinear.__le__
    __gt__ = LogLinear.__gt__
    __ge__ = LogLinear.__ge__
    __eq__ = LogLinear.__eq__
    __ne__ = LogLinear.__ne__
    _cmp = LogLinear._cmp
    __hash__ = object.__hash__

    def __float__(self) -> float:
        return math.exp(float(self.log))

    def what(self) -> str:
        return f"the exact value {self!r}"

    def __repr__(self) -> str:
        return f"exp({self.log!r})"


def is_exact_scalar(x: Any) -> bool:
    return isinstance(x, (Fraction, int))


def describe(x: Any) -> str:
    """A short phrase for ``x`` in error messages."""
    what = getattr(x, "what", None)
    if callable(what):
        return str(what())
    if isinstance(x, LazyToken):
        return "a drawn token"
    if isinstance(x, (Fraction, int)):
        return f"the rational {x}"
    return f"{type(x).__name__} {x!r}"


class NanFlag:
    """The bool of a comparison with NaN: usable as torch's False (or True for !=),
    but reading it into a Python branch is a finding."""

    __slots__ = ("origin", "value")

    def __init__(self, value: bool, origin: str) -> None:
        self.value = value
        self.origin = origin

    def __repr__(self) -> str:
        return f"{self.value} (comparison with nan from {self.origin})"
