"""The random source handed to samplers: ``rng.random()``, ``rng.categorical``, ``rng.bernoulli``.

In exact mode nothing is drawn.  ``rng.random()`` returns a :class:`LazyUniform`
and ``rng.categorical`` a :class:`LazyToken`; the run only branches when the
code *inspects* them (a comparison, an index), and each branch carries its
exact probability.  A token that is returned untouched is never branched on:
its whole law is folded into the result, which keeps enumeration linear in
the vocabulary for the usual "fallback draw" at the end of a sampler.

:class:`SeededRandom` offers the same interface with concrete draws, for
plain runs (benchmarks, demonstrations).
"""

from __future__ import annotations

import math
import numbers
import operator
import random as _random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from specexact.errors import ForeignProtocol, InvalidArgument, UnsupportedOperation
from specexact.exact.tree import Chooser
from specexact.numbers import ONE, ZERO, cumulative_index, to_fraction
from specexact.validation import check_optional_integer

__all__ = [
    "AffineUniform",
    "ExactRandom",
    "ForeignRandomAPI",
    "LazyToken",
    "LazyUniform",
    "RowSource",
    "SeededRandom",
    "UniformRefusals",
    "ValidatedRow",
    "check_uniform_bits",
    "compare_values",
]


def _weights(weights: Any, where: str, rng: ExactRandom | None = None
             ) -> tuple[tuple[Fraction, ...], Fraction]:
    """Snapshot and validate categorical weights: nonnegative, positive sum."""
    if hasattr(weights, "tolist") and not isinstance(weights, (list, tuple)):
        weights = weights.tolist()
    try:
        ws = tuple([w if type(w) is Fraction else _exact(w, f"weights[{i}]", rng, where)
                    for i, w in enumerate(weights)])
    except TypeError:
        msg = f"{where}: weights must be a sequence of numbers, got {type(weights).__name__}"
        raise InvalidArgument(msg) from None
    total = ZERO
    for i, w in enumerate(ws):
        if w < 0:
            msg = f"{where}: weights[{i}]={w} is negative; weights must be >= 0"
            raise InvalidArgument(msg)
        total += w
    if total <= 0:
        msg = (f"{where}: weights sum to {total}; categorical needs nonnegative weights "
               f"with a positive sum (got {len(ws)} weights, all zero)")
        raise InvalidArgument(msg)
    return ws, total


def _fast_weights(weights: Any) -> tuple[tuple[Any, ...], Fraction | int] | None:
    """Weights and their total, when every weight is a nonnegative Fraction or int.

    The weights come back as integers over a common denominator (one
    normalisation instead of one per addition): cheap to sum, to hash as a
    law key and to keep, where the code's Fractions would be copied.  A
    validated row comes back as it is, with total 1.  ``None`` sends anything
    else (floats, numpy values, invalid weights) to the generic path, which
    also raises the errors.
    """
    if isinstance(weights, RowSource):
        weights = weights.resolve()
    if type(weights) is ValidatedRow and weights.untouched():
        # A row as the model (or output_distribution) gave it: validated, summing to 1.
        return weights.source, ONE
    if type(weights) is not list and type(weights) is not tuple:
        return None
    common = 1
    for w in weights:
        kind = type(w)
        if kind is Fraction:
            if w.numerator < 0:
                return None
            d = w.denominator
            if d != 1 and common % d:
                common = common // math.gcd(common, d) * d
        elif kind is not int or w < 0:
            return None
    scaled = tuple([w.numerator * (common // w.denominator) if type(w) is Fraction
                    else w * common for w in weights])
    total = sum(scaled)
    if total <= 0:
        return None
    return scaled, total


def check_uniform_bits(uniform_bits: Any) -> int:
    """Validate ``uniform_bits``: a positive int K (24 is torch.rand float32, 53 float64)."""
    bits = check_optional_integer(uniform_bits, "uniform_bits", min_value=1)
    if bits is None:
        msg = (f"uniform_bits={uniform_bits!r} must be a positive integer K "
               "(the uniform is then k / 2**K; 24 for float32, 53 for float64) or None")
        raise InvalidArgument(msg)
    return bits


def _exact(value: Any, name: str, rng: ExactRandom | None, where: str) -> Fraction:
    """``to_fraction``, except that a lazy uniform is an unsupported operation.

    A weight or probability that is itself a lazy uniform is not a number
    the code got wrong, it is a limit of the tool: no verdict, not a crash.
    (Lazy tokens convert: they are registered as ``numbers.Integral``.)
    """
    if rng is not None and isinstance(value, LazyUniform):
        raise rng.unsupported(f"a lazy uniform as {name} of {where} (not affine in one draw)")
    return to_fraction(value, name=name)


def _bernoulli_prob(prob: Any, rng: ExactRandom | None = None) -> Fraction:
    f = _exact(prob, "prob", rng, "bernoulli")
    if not 0 <= f <= 1:
        msg = f"bernoulli: prob={f} must lie in [0, 1]"
        raise InvalidArgument(msg)
    return f


class ValidatedRow(list[Fraction]):
    """A fresh list holding a validated row, remembering the tuple it was copied from.

    While its entries are still the very objects of ``source`` the row is
    known to be a distribution, and the random source can skip
    re-validating and re-summing it (``total`` is exactly 1).
    """

    __slots__ = ("source",)

    def __init__(self, source: tuple[Fraction, ...]) -> None:
        super().__init__(source)
        self.source = source

    def untouched(self) -> bool:
        source = self.source
        return len(self) == len(source) and all(map(operator.is_, self, source))


class RowSource:
    """Base of row objects that stand for a :class:`ValidatedRow` looked up on first use.

    The random source calls :meth:`resolve` before reading the weights, so a
    model can hand out rows whose context is not fixed yet (the multi-step
    layer's deferred rows) without the exact layer knowing about models.
    """

    __slots__ = ()

    def resolve(self) -> ValidatedRow:
        raise NotImplementedError


# --------------------------------------------------------------------------
# Lazy uniform
# --------------------------------------------------------------------------


class _UniformState:
    """What is known about one uniform draw: a union of disjoint intervals.

    Continuous mode: intervals of reals in [0, 1) with Fraction ends.
    Grid mode (``bits=K``): the draw is k / 2**K for an integer k in [0, 2**K);
    intervals are integer ranges of k.  Grid mode makes ``u <= t`` and
    ``u < t`` differ, as they do for torch.rand.
    """

    __slots__ = ("index", "intervals", "scale")

    def __init__(self, index: int, scale: int | None) -> None:
        self.index = index
        self.scale = scale
        self.intervals: list[tuple[Any, Any]] = [(ZERO, ONE)] if scale is None \
            else [(0, scale)]

    def measure(self, intervals: list[tuple[Any, Any]]) -> Any:
        return sum((hi - lo for lo, hi in intervals), ZERO if self.scale is None else 0)

    def cut(self, threshold: Fraction, inclusive: bool) -> int | Fraction:
        """The point splitting {u < t} (or {u <= t}) from the rest, in state units."""
        if self.scale is None:
            return threshold
        scaled = threshold * self.scale
        return math.floor(scaled) + 1 if inclusive else math.ceil(scaled)

    def split(self, cut: Any) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
        return _split_intervals(self.intervals, cut)


def _split_intervals(intervals: list[tuple[Any, Any]], cut: Any
                     ) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
    """Split a union of intervals at ``cut`` into the parts below and above it."""
    below, above = [], []
    for lo, hi in intervals:
        if hi <= cut:
            below.append((lo, hi))
        elif lo >= cut:
            above.append((lo, hi))
        else:
            below.append((lo, cut))
            above.append((cut, hi))
    return below, above


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


class UniformRefusals:
    """What a lazy uniform refuses: it has no value to convert, round or raise to a power.

    Shared by the exact :class:`LazyUniform` and the symbolic prover's uniform;
    each refusal is an :class:`~specexact.errors.UnsupportedOperation` from the
    uniform's random source (``self._rng.unsupported``), so it is recorded even
    if the code under test swallows it.
    """

    __slots__ = ()
    _rng: Any

    def __pow__(self, other: Any) -> Any:
        raise self._rng.unsupported("'**' on a uniform (only affine expressions are exact)")

    def __rpow__(self, other: Any) -> Any:
        raise self._rng.unsupported("'**' with a uniform exponent")

    def __float__(self) -> float:
        raise self._rng.unsupported(
            "float(u): a lazy uniform has no value; compare it with a number instead "
            "(u < p / q, or u * q < p)")

    def __int__(self) -> int:
        raise self._rng.unsupported("int(u): a lazy uniform has no value")

    def __index__(self) -> int:
        raise self._rng.unsupported("using a uniform as an index")

    def __bool__(self) -> bool:
        raise self._rng.unsupported("truth value of a uniform; compare it with a number")

    def __round__(self, ndigits: Any = None) -> Any:
        raise self._rng.unsupported("round(u)")

    def __floor__(self) -> Any:
        raise self._rng.unsupported("math.floor(u)")

    def __ceil__(self) -> Any:
        raise self._rng.unsupported("math.ceil(u)")

    def __abs__(self) -> Any:
        raise self._rng.unsupported("abs(u)")


class AffineUniform(UniformRefusals):
    """``a * u + b`` for one lazy uniform draw ``u``: the arithmetic every random source shares.

    ``+ - *`` with constants, division by a nonzero constant, negation, and the six
    comparisons (with a constant, or with another expression of the *same* draw);
    dividing by a uniform or combining two draws is refused.  A source's uniform says
    what a constant is (:meth:`_number`), how a new expression is made (:meth:`_new`),
    when a divisor is zero (:meth:`_check_divisor`) and how a comparison is decided
    (:meth:`_compare`): exactly (:class:`LazyUniform`) or symbolically (the prover's).
    """

    __slots__ = ("_a", "_b", "_rng", "_state")
    __array_ufunc__ = None  # make numpy scalars defer to our reflected operators

    def __init__(self, rng: Any, state: Any, a: Any, b: Any) -> None:
        self._rng = rng
        self._state = state
        self._a = a
        self._b = b

    # -- what each source decides -------------------------------------------

    def _number(self, other: Any) -> Any:
        """``other`` as a constant of this source, or None when it is not one."""
        raise NotImplementedError

    def _new(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def _check_divisor(self, c: Any) -> None:
        raise NotImplementedError

    def _compare(self, op: str, other: Any) -> bool:
        raise NotImplementedError

    # -- arithmetic --------------------------------------------------------

    def _const(self, other: Any, op: str) -> Any:
        if isinstance(other, AffineUniform):
            raise self._rng.unsupported(
                f"'{op}' between two uniform expressions is not affine in one draw")
        if isinstance(other, LazyToken):
            raise self._rng.unsupported(f"'{op}' between a uniform and a lazy token")
        c = self._number(other)
        if c is None:
            raise self._rng.unsupported(
                f"'{op}' between a uniform and {type(other).__name__} {other!r}")
        return c

    def _same_draw(self, other: Any) -> tuple[Any, Any]:
        """``(a, b)`` of ``other``, an expression of the same draw (refused otherwise)."""
        if other._state is not self._state:
            raise self._rng.unsupported(
                "comparing two different uniform draws; only one draw at a time "
                "can be compared with a number")
        return other._a, other._b

    def __add__(self, other: Any) -> Any:
        if isinstance(other, AffineUniform) and other._state is self._state:
            return self._new(self._a + other._a, self._b + other._b)
        return self._new(self._a, self._b + self._const(other, "+"))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, AffineUniform) and other._state is self._state:
            return self._new(self._a - other._a, self._b - other._b)
        return self._new(self._a, self._b - self._const(other, "-"))

    def __rsub__(self, other: Any) -> Any:
        return self._new(-self._a, self._const(other, "-") - self._b)

    def __mul__(self, other: Any) -> Any:
        c = self._const(other, "*")
        return self._new(self._a * c, self._b * c)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        c = self._const(other, "/")
        self._check_divisor(c)
        return self._new(self._a / c, self._b / c)

    def __rtruediv__(self, other: Any) -> Any:
        raise self._rng.unsupported("dividing by a uniform (1/u is not affine)")

    def __neg__(self) -> Any:
        return self._new(-self._a, -self._b)

    def __pos__(self) -> Any:
        return self

    __hash__ = object.__hash__

    # -- comparisons -------------------------------------------------------

    def __lt__(self, other: Any) -> bool:
        return self._compare("<", other)

    def __le__(self, other: Any) -> bool:
        return self._compare("<=", other)

    def __gt__(self, other: Any) -> bool:
        return self._compare(">", other)

    def __ge__(self, other: Any) -> bool:
        return self._compare(">=", other)

    def __eq__(self, other: object) -> bool:
        return self._compare("==", other)

    def __ne__(self, other: object) -> bool:
        return self._compare("!=", other)


class LazyUniform(AffineUniform):
    """``a * u + b`` for a lazy uniform ``u``; comparing it with a number branches.

    Supports ``+ - *`` with exact numbers, division by a nonzero number,
    negation, and comparisons (``< <= > >= == !=``) with numbers or with
    another expression of the *same* draw.  Converting it to a float, or
    combining two different draws, raises :class:`UnsupportedOperation`.
    """

    __slots__ = ()
    _rng: ExactRandom
    _state: _UniformState
    _a: Fraction
    _b: Fraction

    def _number(self, other: Any) -> Fraction | None:
        try:
            return to_fraction(other, name="operand")
        except InvalidArgument:
            return None

    def _new(self, a: Fraction, b: Fraction) -> LazyUniform:
        return LazyUniform(self._rng, self._state, a, b)

    def _check_divisor(self, c: Fraction) -> None:
        if c == 0:
            raise ZeroDivisionError("division of a uniform expression by zero")

    def __mul__(self, other: Any) -> LazyUniform:
        if type(other) is Fraction and self._b is ZERO:
            # u * c, the usual first half of an acceptance test: no conversions.
            a = self._a
            return LazyUniform(self._rng, self._state, other if a is ONE else a * other,
                               ZERO)
        c = self._const(other, "*")
        return self._new(self._a * c, self._b * c)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        name = f"u{self._state.index}"
        if self._a == 1 and self._b == 0:
            return f"<lazy uniform {name}>"
        return f"<lazy uniform {self._a}*{name} + {self._b}>"

    def _compare(self, op: str, other: Any) -> bool:
        a, b = self._a, self._b
        if type(other) is Fraction and b is ZERO and a.numerator > 0 and op in _ORDER_OPS:
            # a * u < t with a > 0 (every acceptance test): straight to t / a.
            rng = self._rng
            rng.chooser.tick()
            return rng.compare_uniform(self._state, op, other if a is ONE else other / a)
        if isinstance(other, AffineUniform):
            other_a, other_b = self._same_draw(other)
            a, b, other = a - other_a, b - other_b, ZERO
        else:
            other = self._const(other, op)
        rng = self._rng
        rng.chooser.tick()
        if a == 0:
            return compare_values(op, b, other)
        threshold = (other - b) / a
        if a < 0:
            op = _FLIP[op]
        return rng.compare_uniform(self._state, op, threshold)


_COMPARISONS = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}
_ORDER_OPS = frozenset(("<", "<=", ">", ">="))


def compare_values(op: str, x: Any, y: Any) -> bool:
    """``x op y`` for one of ``< <= > >= == !=``."""
    result: bool = _COMPARISONS[op](x, y)
    return result


# --------------------------------------------------------------------------
# Lazy token
# --------------------------------------------------------------------------


class LazyToken:
    """A token drawn by ``rng.categorical`` whose value is not fixed until inspected.

    Returning it (alone or inside a tuple) folds its whole law into the result
    without branching.  Inspecting it branches: ``==``/``!=``/``<``... with an
    integer split the candidates in two; indexing, hashing, ``int()``,
    arithmetic and formatting fix the value.

    ``weights`` are the draw's weights up to a common factor (integers over a
    common denominator when the code gave Fractions or ints) and ``total``
    their sum.
    """

    __slots__ = ("_rng", "_support", "_value", "candidates", "draw", "total", "weights")
    __array_ufunc__ = None

    def __init__(self, rng: ExactRandom, draw: int, weights: tuple[Any, ...],
                 total: Fraction | int) -> None:
        self._rng = rng
        #: Which categorical draw of the run this token came from (0, 1, ...).
        self.draw = draw
        self.weights = weights
        self.total = total
        #: ``None`` (every positive-weight id) or a tuple of the ids still possible.
        self.candidates: tuple[int, ...] | None = None
        self._value: int | None = None
        self._support: tuple[int, ...] | None = None

    def possible_ids(self) -> tuple[int, ...]:
        """The ids the token can still take, without branching."""
        if self._value is not None:
            return (self._value,)
        if self.candidates is not None:
            return self.candidates
        if self._support is None:
            self._support = tuple([i for i, w in enumerate(self.weights) if w])
        return self._support

    def _ids(self) -> tuple[int, ...]:
        if self.candidates is None:
            self.candidates = tuple([i for i, w in enumerate(self.weights) if w])
        return self.candidates

    def law(self) -> list[tuple[int, Fraction]]:
        """The exact conditional law of the token given what was inspected so far."""
        if self._value is not None:
            return [(self._value, ONE)]
        if self.candidates is None:
            return _law(self.weights, self.total, None)
        return _law(self.weights, None, self.candidates)

    @staticmethod
    def law_of_key(key: tuple[Any, ...]) -> list[tuple[int, Fraction]]:
        """The law of an unfixed token whose :meth:`law_key` is ``key`` (no token needed)."""
        return _law(key[0], None, key[1])

    def law_key(self) -> tuple[Any, ...]:
        """A hashable key equal for tokens with equal conditional laws."""
        return (self.weights, self.candidates)

    @property
    def is_fixed(self) -> bool:
        return self._value is not None

    def value(self) -> int:
        """Fix the token's value, branching over its possible ids."""
        if self._value is None:
            self._value = self._rng.fix_token(self)
        return self._value

    def _split(self, op: str, other: Any) -> bool:
        if self._value is not None:
            return compare_values(op, self._value, other)
        if isinstance(other, LazyToken):
            return compare_values(op, self.value(), other.value())
        if isinstance(other, bool) or not isinstance(other, int):
            try:
                other = operator.index(other)
            except TypeError:
                return compare_values(op, self.value(), other)
        return self._rng.split_token(self, op, other)

    def narrow(self, ids: tuple[int, ...]) -> None:
        self.candidates = ids
        if len(ids) == 1:
            self._value = ids[0]

    def __eq__(self, other: Any) -> bool:
        return self._split("==", other)

    def __ne__(self, other: Any) -> bool:
        return self._split("!=", other)

    def __lt__(self, other: Any) -> bool:
        return self._split("<", other)

    def __le__(self, other: Any) -> bool:
        return self._split("<=", other)

    def __gt__(self, other: Any) -> bool:
        return self._split(">", other)

    def __ge__(self, other: Any) -> bool:
        return self._split(">=", other)

    def __bool__(self) -> bool:
        return self._split("!=", 0)

    def __hash__(self) -> int:
        return hash(self.value())

    def __index__(self) -> int:
        return self.value()

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.value())

    def __complex__(self) -> complex:
        return complex(self.value())

    # The rest of the int protocol, so code written for ints (``divmod``,
    # ``round``, ``Fraction(x)``, ``x.bit_length()``) does not crash on the
    # proxy: a crash there would be the tool's, not the sampler's.
    def __divmod__(self, other: Any) -> Any:
        return divmod(self.value(), other.value() if isinstance(other, LazyToken) else other)

    def __rdivmod__(self, other: Any) -> Any:
        return divmod(other, self.value())

    def __round__(self, ndigits: Any = None) -> Any:
        return round(self.value()) if ndigits is None else round(self.value(), ndigits)

    def __trunc__(self) -> int:
        return self.value()

    def __floor__(self) -> int:
        return self.value()

    def __ceil__(self) -> int:
        return self.value()

    @property
    def numerator(self) -> int:
        return self.value()

    @property
    def denominator(self) -> int:
        return 1

    @property
    def real(self) -> int:
        return self.value()

    @property
    def imag(self) -> int:
        return 0

    def conjugate(self) -> int:
        return self.value()

    def bit_length(self) -> int:
        return self.value().bit_length()

    def __str__(self) -> str:
        return str(self.value())

    def __format__(self, spec: str) -> str:
        return format(self.value(), spec)

    def __repr__(self) -> str:
        if self._value is not None:
            return repr(self._value)
        return f"<lazy token from categorical draw #{self.draw}>"


def _law(weights: tuple[Any, ...], total: Any, ids: tuple[int, ...] | None
         ) -> list[tuple[int, Fraction]]:
    """weights[i] / total over ``ids`` (every positive weight when None)."""
    if ids is None:
        if total is None:
            total = sum(weights)
        if type(total) is int:  # integer weights (see _fast_weights)
            return [(i, Fraction(w, total)) for i, w in enumerate(weights) if w]
        return [(i, w / total) for i, w in enumerate(weights) if w]
    total = sum((weights[i] for i in ids), ZERO)
    return [(i, weights[i] / total) for i in ids]


def _forward(name: str) -> Any:
    op = getattr(operator, name)

    def method(self: LazyToken, *args: Any) -> Any:
        args = tuple(a.value() if isinstance(a, LazyToken) else a for a in args)
        return op(self.value(), *args)

    method.__name__ = f"__{name.strip('_')}__"
    return method


def _rforward(name: str) -> Any:
    op = getattr(operator, name)

    def method(self: LazyToken, other: Any) -> Any:
        return op(other, self.value())

    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift",
              "rshift", "and_", "or_", "xor"):
    _dunder = _name.rstrip("_")
    setattr(LazyToken, f"__{_dunder}__", _forward(_name))
    setattr(LazyToken, f"__r{_dunder}__", _rforward(_name))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(LazyToken, f"__{_name}__", _forward(_name))
del _name, _dunder
# ``isinstance(x, numbers.Integral)`` holds for a drawn token, as it does for an int.
numbers.Integral.register(LazyToken)


# --------------------------------------------------------------------------
# The exact random source
# --------------------------------------------------------------------------


class ForeignRandomAPI(ForeignProtocol):
    """The code used ``rng`` as another library's generator (numpy, random, torch)."""


#: Methods of other random APIs a sampler may have been written against.
_OTHER_APIS: dict[str, str] = {
    **dict.fromkeys(("choice", "integers", "uniform", "exponential", "gumbel",
                     "multinomial", "standard_normal", "normal", "permutation", "shuffle",
                     "binomial", "geometric"), "numpy.random.Generator's API"),
    **dict.fromkeys(("randint", "randrange", "sample", "choices", "getrandbits",
                     "gauss"), "Python random's API"),
    **dict.fromkeys(("manual_seed", "initial_seed", "get_state", "set_state", "seed"),
                    "torch.Generator's API"),
}
_OTHER_API_HINT: dict[str, str] = {
    "numpy.random.Generator's API": "audit numpy Generator code exactly with --numpy "
                                    "(specexact.numpy_output_distribution), or with "
                                    "--statistical",
    "Python random's API": "rewrite the draws with rng.random() / rng.categorical, or "
                           "audit the code with --statistical",
    "torch.Generator's API": "audit torch code exactly with --torch "
                             "(specexact.check_torch_sampler)",
}


class ExactRandom:
    """The random source of one exact execution (see the module docstring).

    ``uniform_bits=None`` models ``random()`` as a continuous uniform on
    [0, 1); ``uniform_bits=K`` as the grid {k / 2**K}, 0 included (K = 24
    is torch.rand in float32, K = 53 is float64).
    """

    __slots__ = ("_draws", "_scale", "_uniforms", "active", "chooser")

    def __init__(self, chooser: Chooser, uniform_bits: int | None = None) -> None:
        self.chooser = chooser
        self._uniforms = 0
        self._draws = 0
        self._scale = None if uniform_bits is None else 1 << check_uniform_bits(uniform_bits)
        #: Cleared when the execution ends; lazy values then refuse to branch.
        self.active = True

    # -- the sampler-facing API ---------------------------------------------

    def random(self) -> LazyUniform:
        """A uniform on [0, 1), lazily: compare it with numbers to branch."""
        self._check_active()
        self.chooser.tick()
        self._uniforms += 1
        return LazyUniform(self, _UniformState(self._uniforms, self._scale), ONE, ZERO)

    def categorical(self, weights: Sequence[Any]) -> LazyToken:
        """Index i with probability weights[i] / sum(weights), lazily."""
        self._check_active()
        self.chooser.tick()
        self._draws += 1
        fast = _fast_weights(weights)
        if fast is not None:
            self.chooser.charge(len(fast[0]))
            return LazyToken(self, self._draws, fast[0], fast[1])
        ws, total = _weights(weights, f"categorical draw #{self._draws}", self)
        self.chooser.charge(len(ws))
        return LazyToken(self, self._draws, ws, total)

    def bernoulli(self, prob: Any) -> bool:
        """True with probability ``prob``."""
        self._check_active()
        self.chooser.tick()
        f = _bernoulli_prob(prob, self)
        if f == 0 or f == 1:
            return f == 1
        result: bool = self.chooser.choose(
            ("bernoulli", f), lambda: ((True, f), (False, 1 - f)),
            f"bernoulli({f})")
        return result

    # -- branching, used by the lazy values ------------------------------------

    def _check_active(self) -> None:
        if not self.active:
            raise self.unsupported(
                "a lazy random value was used after the run that drew it had returned; "
                "keep random values inside the sampler call")

    def __getattr__(self, name: str) -> Any:
        # Only reached for names ExactRandom does not have: code written for
        # another random API gets the mode that fits, not a crash of its own.
        other = _OTHER_APIS.get(name)
        if other is None:
            raise AttributeError(name)
        # An AttributeError too, so hasattr(rng, "integers") stays False for code
        # that supports both APIs; a call that escapes the code is "no verdict".
        raise ForeignRandomAPI(
            f"the code called rng.{name}(), which is {other}, not specexact's rng "
            "(random, categorical, bernoulli); " + _OTHER_API_HINT[other])

    def unsupported(self, what: str) -> UnsupportedOperation:
        error = UnsupportedOperation(f"unsupported operation on a lazy random value: {what}")
        # Remember it even if the code under test swallows the exception.
        self.chooser.record_error(error)
        return error

    def compare_uniform(self, state: _UniformState, op: str, threshold: Fraction) -> bool:
        self._check_active()
        intervals = state.intervals
        if state.scale is None and len(intervals) == 1 and op in _ORDER_OPS:
            return self._compare_in_interval(state, op, threshold)
        if op in ("==", "!="):
            if state.scale is None:
                # A continuous uniform hits a single point with probability 0.
                return op == "!="
            scaled = threshold * state.scale
            if scaled.denominator != 1:
                return op == "!="
            k = int(scaled)
            low, rest = state.split(k)
            point, high = _split_intervals(rest, k + 1)
            inside, outside = point, low + high
            truth_if_inside = op == "=="
            return self._branch(state, inside, outside, truth_if_inside, op, threshold)
        inclusive = op in ("<=", ">")
        cut = state.cut(threshold, inclusive)
        below, above = state.split(cut)
        return self._branch(state, below, above, op in ("<", "<="), op, threshold)

    def _compare_in_interval(self, state: _UniformState, op: str, threshold: Fraction
                             ) -> bool:
        # A continuous uniform still known to lie in one interval [lo, hi),
        # compared with <, <=, > or >= (every acceptance test): no interval lists.
        lo, hi = state.intervals[0]
        truth_below = op in ("<", "<=")
        if threshold <= lo:
            return not truth_below
        if threshold >= hi:
            return truth_below
        below: bool = self.chooser.choose(
            ("u", state.index, op, threshold),
            lambda: _split_odds(lo, hi, threshold),
            # The choice is whether u < threshold, whatever the operator asked.
            f"u{state.index} < {threshold}")
        state.intervals = [(lo, threshold)] if below else [(threshold, hi)]
        return truth_below if below else not truth_below

    def _branch(self, state: _UniformState, first: list[tuple[Any, Any]],
                second: list[tuple[Any, Any]], truth_first: bool, op: str,
                threshold: Fraction) -> bool:
        m_first = state.measure(first)
        if not m_first:
            state.intervals = second
            return not truth_first
        m_second = state.measure(second)
        if not m_second:
            state.intervals = first
            return truth_first
        p_first = Fraction(m_first) / (m_first + m_second)
        name = f"u{state.index}"
        took_first: bool = self.chooser.choose(
            ("u", state.index, op, threshold, p_first),
            lambda: ((True, p_first), (False, 1 - p_first)),
            f"{name} {op} {threshold}" if truth_first else f"not ({name} {op} {threshold})")
        state.intervals = first if took_first else second
        return truth_first if took_first else not truth_first

    def fix_token(self, token: LazyToken) -> int:
        self._check_active()
        self.chooser.tick()
        ids = token._ids()
        if len(ids) == 1:
            return ids[0]
        draw = token.draw
        # The law is only built when the choice point is first explored; a
        # replay needs nothing but the recorded choice.
        value: int = self.chooser.choose(
            ("token", draw, len(token.weights), len(ids)), token.law,
            f"token of categorical draw #{draw}")
        token.narrow((value,))
        return value

    def split_token(self, token: LazyToken, op: str, other: int) -> bool:
        self._check_active()
        self.chooser.tick()
        ids = token._ids()
        yes = tuple(i for i in ids if compare_values(op, i, other))
        if len(yes) == len(ids):
            return True
        if not yes:
            return False
        ws = token.weights
        total = sum((ws[i] for i in ids), ZERO)
        p_yes = sum((ws[i] for i in yes), ZERO) / total
        truth: bool = self.chooser.choose(
            ("split", token.draw, op, other, p_yes),
            lambda: ((True, p_yes), (False, 1 - p_yes)),
            f"token #{token.draw} {op} {other}")
        token.narrow(yes if truth else tuple(i for i in ids if i not in set(yes)))
        return truth


def _split_odds(lo: Fraction, hi: Fraction, cut: Fraction) -> tuple[tuple[bool, Fraction], ...]:
    below = (cut - lo) / (hi - lo)
    return ((True, below), (False, 1 - below))


# --------------------------------------------------------------------------
# A concrete source for plain runs
# --------------------------------------------------------------------------


class SeededRandom:
    """The same interface with real draws from a seeded ``random.Random``.

    Draws are exact given the underlying uniform: ``categorical`` walks the
    exact cumulative weights.  Used for plain runs and as the benchmarks'
    reference cost.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._random = _random.Random(seed)

    def random(self) -> float:
        return self._random.random()

    def categorical(self, weights: Sequence[Any]) -> int:
        ws, total = _weights(weights, "categorical")
        return cumulative_index(ws, Fraction(self._random.random()) * total)

    def bernoulli(self, prob: Any) -> bool:
        return Fraction(self._random.random()) < _bernoulli_prob(prob)
