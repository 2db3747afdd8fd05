"""Functions of a ``torch.rand`` draw evaluated as the dtype evaluates them.

In ``semantics="dtype"`` a draw ``g = k / 2**K`` of ``torch.rand`` (0 included)
stays lazy, and what the code computes from it is a :class:`GridDraw`: the
draw followed by the torch ops applied to it (``log``, ``exp``, scaling,
division, clamps, casts), each a monotone function of ``g``.  Comparing it
with a concrete value evaluates that chain *with real torch* (same op, same
shape, same position of the element) at grid points and bisects over the
``2**K`` points for the split, so every grid point keeps its probability
``2**-K`` and the law of the float program stays exact.

An argmax (argmin) over a row of such draws, a noise race, is decided by
:func:`race`: which tokens can win at all in the dtype is exact (each entry's
range is its values at the two ends of the grid, and independent draws reach
every combination); a concrete entry's winning mass is exact (a product of
grid counts); the mass left to the draws is split as the ideal continuous race
of their exact-semantics values (``w / E``, ``log w + G``) splits it, restricted
to the tokens that can win, and the session records that idealisation with a
certified bound on its error (:func:`_error_bound`: bucket each draw's grid,
monotonicity bounds each bucket's share).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import torch

from specexact.numbers import ONE, ZERO
from specexact.torch.noise import PendingRace, UniformRecord
from specexact.torch.values import (
    Comparisons,
    Special,
    Uninit,
    current_session,
    describe,
    unsupported,
)

__all__ = ["IDEALISED_RACE", "GridDraw", "Step", "race"]

#: How a noise race over draws is idealised (the verdict quotes it).
IDEALISED_RACE = ("the split of a noise race among its drawn entries, as continuous "
                  "exponentials split it (which tokens can win, and the mass of its fixed "
                  "entries, are exact)")


_CMP: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


class Step:
    """One torch op applied to a draw: ``fn(*args)`` with the draw's tensor in ``slot``.

    ``args`` are the op's real operands (the draw's own tensor is rebuilt at each
    evaluation, filled with the value being evaluated); the draw's element is read
    back at ``out_flat`` of the result, so the kernel path (vectorised or not) is
    the one the code's tensor takes.  ``name`` and ``const`` (the other operand's
    value at that element) say what the op is, for :func:`ideal`.
    """
    __slots__ = ("args", "const", "fn", "in_dtype", "in_shape", "name", "out_flat",
                 "point_args", "slot")

    def __init__(self, name: str, fn: Callable[..., Any], args: Sequence[Any], slot: int,
                 in_shape: tuple[int, ...], in_dtype: torch.dtype, out_flat: int,
                 const: float | None = None, point_args: Sequence[Any] | None = None) -> None:
        self.name = name
        self.fn = fn
        self.args = tuple(args)
        self.slot = slot
        self.in_shape = in_shape
        self.in_dtype = in_dtype
        self.out_flat = out_flat
        self.const = const
        #: The op's operands at this element only (one-element tensors, Python scalars
        #: as given): for evaluating many grid points at once (:meth:`batch`).
        self.point_args = tuple(point_args) if point_args is not None else self.args

    def __call__(self, value: float) -> float:
        args = list(self.args)
        args[self.slot] = torch.full(self.in_shape, value, dtype=self.in_dtype)
        with torch._C.DisableTorchFunction():
            out = self.fn(*args)
        return float(out.reshape(-1)[self.out_flat].item())

    def key(self) -> tuple[Any, ...] | None:
        """What determines :meth:`batch`'s values: the op, the draw's slot and dtype, and
        every other operand's exact value (None when one has no exact key)."""
        return self._key(self.point_args, self.slot, self.in_dtype)

    def full_key(self) -> tuple[Any, ...] | None:
        """What determines :meth:`__call__`'s values: the op, the draw's slot, dtype and
        shape, the element read back, and every other operand's exact value and shape (the
        whole tensors, so the kernel path is the same); None when one has no exact key."""
        return self._key(self.args, self.slot, self.in_dtype, self.in_shape, self.out_flat)

    def _key(self, args: Sequence[Any], *given: Any) -> tuple[Any, ...] | None:
        """The op's key, ``given``, then each operand of ``args`` but the draw's."""
        fn = _fn_key(self.fn)
        if fn is None:
            return None
        parts: list[Any] = [fn, *given]
        for i, arg in enumerate(args):
            if i == self.slot:
                continue
            part = _operand_key(arg)
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    def batch(self, values: torch.Tensor) -> torch.Tensor:
        """The op at many values of the draw at once (a 1-D tensor in, one out).

        The element's position in the code's tensor is not kept: this serves the
        race bounds, which rely on torch's CPU kernels giving an element the same
        value in a vectorised body and in a scalar tail (a test checks it here).
        """
        args = list(self.point_args)
        args[self.slot] = values.to(self.in_dtype)
        with torch._C.DisableTorchFunction():
            out: torch.Tensor = self.fn(*args)
        return out.reshape(values.shape[0], -1)[:, 0]


_PLAIN = (bool, int, float, Fraction, type(None), torch.dtype, str)


def _operand_key(arg: Any) -> Any:
    """An operand by its exact value (a tensor: dtype, shape, layout and values)."""
    if isinstance(arg, torch.Tensor):
        if arg.is_complex():
            return None
        with torch._C.DisableTorchFunction():
            values = arg.detach().reshape(-1).tolist()
            shape, stride = tuple(arg.shape), tuple(arg.stride())
        if arg.is_floating_point():  # by bits: -0.0 and 0.0 divide differently
            values = [float(v).hex() for v in values]
        return (arg.dtype, shape, stride, tuple(values))
    if isinstance(arg, float):
        return (float, arg.hex())
    if isinstance(arg, (bool, int, type(None), torch.dtype)):
        return (type(arg), arg)
    return None


def _fn_key(fn: Any) -> Any:
    """A function by what it computes: a closure made afresh at each execution (a
    cast, a scaling) by its code and the plain values it captured; anything else by
    itself; None for a closure over values with no exact key."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return fn
    cells = tuple(c.cell_contents for c in (fn.__closure__ or ()))
    defaults = tuple(fn.__defaults__ or ())
    if not all(isinstance(v, _PLAIN) for v in (*cells, *defaults)):
        return None
    return (code, tuple((type(v), v) for v in cells), tuple((type(v), v) for v in defaults))


class GridDraw(Comparisons):
    """``f(g)`` for the grid draw ``g`` of ``rec``: ``f`` is ``steps`` applied in turn."""

    __slots__ = ("dtype", "rec", "span", "steps")

    def __init__(self, rec: UniformRecord, dtype: torch.dtype,
                 steps: tuple[Step, ...] = (), span: tuple[int, int] | None = None) -> None:
        if rec.bits is None:
            raise unsupported("a dtype-semantics draw on the continuous uniform")
        self.rec = rec
        self.dtype = dtype
        self.steps = steps
        #: The grid indices ``[lo, hi)`` the draw is known to lie in (a race splits its
        #: non-finite ends off: see :func:`race`); the whole grid unless restricted.
        self.span = (0, 1 << rec.bits) if span is None else span

    def then(self, step: Step, dtype: torch.dtype) -> GridDraw:
        return GridDraw(self.rec, dtype, (*self.steps, step), self.span)

    def within(self, lo: int, hi: int) -> GridDraw:
        """The same draw known to lie in grid indices ``[lo, hi)``."""
        return GridDraw(self.rec, self.dtype, self.steps, (lo, hi))

    @property
    def size(self) -> int:
        assert self.rec.bits is not None
        return 1 << self.rec.bits

    @property
    def points(self) -> int:
        """How many grid points the draw can take (its span's length)."""
        return self.span[1] - self.span[0]

    def at(self, k: int) -> float:
        """``f(k / 2**K)`` as torch computes it."""
        value = k / self.size  # exact: a dyadic with at most K bits
        for step in self.steps:
            value = step(value)
        return value

    def at_many(self, ks: torch.Tensor) -> torch.Tensor:
        """``f`` at the grid points ``ks`` (int64), as float64 (see :meth:`Step.batch`)."""
        values = ks.to(torch.float64) / self.size
        for step in self.steps:
            values = step.batch(values)
        return values.to(torch.float64)

    def ends(self) -> tuple[float, float]:
        """``f`` at the first and last grid points (its range: ``f`` is monotone)."""
        lo, hi = self.at(self.span[0]), self.at(self.span[1] - 1)
        if math.isnan(lo) or math.isnan(hi):
            raise unsupported("a function of a torch.rand draw that is nan at an end of "
                              "the grid (its comparisons are not monotone in the draw)")
        return lo, hi

    def ideal(self) -> tuple[str, float]:
        """The same computation on an ideal continuous uniform, as an ideal noise entry:
        ``("w/E", w)`` or ``("c*E", c)``; see :func:`ideal`."""
        return ideal(self)

    # -- comparisons ------------------------------------------------------------

    def count(self, op: str, t: float) -> tuple[int, int]:
        """The grid points ``[a, b)`` where ``f(k) op t`` (an interval: f is monotone).

        A function of the steps' operands, so it is remembered by them (a kernel compares
        the same function of a draw with the same threshold at every execution)."""
        keys = tuple(step.full_key() for step in self.steps)
        if any(key is None for key in keys):
            return self._count(op, t)
        key = (self.rec.bits, self.span, keys, op, t)
        found = _COUNT_CACHE.get(key)
        if found is None:
            found = self._count(op, t)
            if len(_COUNT_CACHE) >= _COUNT_CACHE_SIZE:
                _COUNT_CACHE.clear()
            _COUNT_CACHE[key] = found
        return found

    def _count(self, op: str, t: float) -> tuple[int, int]:
        start, n = self.span
        lo, hi = self.ends()
        if op == "!=":
            raise AssertionError("!= is the complement of ==")
        if op == "==":
            lt, le = self.count("<", t), self.count("<=", t)
            # lt within le, both prefixes (f increasing) or suffixes (decreasing).
            if lt[0] >= lt[1]:
                return le
            if lt[0] == start and le[0] == start:
                return lt[1], le[1]
            return le[0], lt[0]
        test = _CMP[op]
        first, last = test(lo, t), test(hi, t)
        if first == last:
            return (start, n) if first else (start, start)
        # One change along the grid: the smallest k whose truth differs from k = start.
        below, above = start, n - 1
        while above - below > 1:
            mid = (below + above) // 2
            if test(self.at(mid), t) == first:
                below = mid
            else:
                above = mid
        return (start, above) if first else (above, n)

    def compare(self, op: str, other: Any) -> Any:
        if isinstance(other, Uninit):
            return other
        t = _threshold(other, op)
        if isinstance(t, bool):
            return t
        rec = self.rec
        if rec.noise:
            raise unsupported("comparing a torch.rand draw that was already raced as "
                              "noise (the two uses are dependent)")
        a, b = self.count("==" if op == "!=" else op, t)
        if self.span != (0, self.size):
            raise unsupported("comparing a torch.rand draw that was raced")
        inside = _in_interval(rec, a, b, self.size)
        return (not inside) if op == "!=" else inside

    def _no(self, *_: Any) -> Any:
        raise unsupported("this arithmetic on a torch.rand draw outside a torch op (read "
                          "into Python); dtype semantics evaluates draws only through ops")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no
    __truediv__ = __rtruediv__ = __abs__ = _no

    def __neg__(self) -> GridDraw:
        return self.then(Step("neg", torch.neg, (None,), 0, (), self.dtype, 0), self.dtype)

    def __float__(self) -> float:
        raise unsupported("float() of a torch.rand draw (it has no single value)")

    def what(self) -> str:
        return "a function of a torch.rand draw"

    def __repr__(self) -> str:
        names = "".join(f"{s.name}(" for s in reversed(self.steps))
        return f"{names}u{self.rec.index}{')' * len(self.steps)}"


def _threshold(other: Any, op: str) -> float | bool:
    """A concrete comparand as a float (exact: it is a value of a float dtype)."""
    if isinstance(other, Special):
        if other.is_nan:
            return op == "!="
        return other.value
    if isinstance(other, bool):
        return float(other)
    if isinstance(other, (Fraction, int, float)):
        return float(other)
    raise unsupported(f"'{op}' between a function of a torch.rand draw and {describe(other)}")


def _in_interval(rec: UniformRecord, a: int, b: int, n: int) -> bool:
    """Whether the draw's grid index lies in ``[a, b)``: branches through the engine."""
    if a >= b:
        return False
    if a == 0 and b == n:
        return True
    rec.compared = True
    u = rec.lazy
    if a > 0 and not bool(u >= Fraction(a, n)):
        return False
    return b == n or bool(u < Fraction(b, n))


# --------------------------------------------------------------------------
# Races over draws
# --------------------------------------------------------------------------


def _range(x: Any) -> tuple[float, float]:
    if isinstance(x, GridDraw):
        lo, hi = x.ends()
        return (lo, hi) if lo <= hi else (hi, lo)
    if isinstance(x, Special):
        return x.value, x.value
    if isinstance(x, (Fraction, int)) and not isinstance(x, bool):
        return float(x), float(x)
    raise unsupported(f"an argmax over a row mixing torch.rand draws with {describe(x)}")


def _beats(a: float, b: float, earlier: bool, largest: bool) -> bool:
    """Whether value ``a`` wins over ``b`` (``b`` at an earlier index when ``earlier``):
    torch's argmax takes the first maximum."""
    if not largest:
        a, b = -a, -b
    return a > b if earlier else a >= b


def _below(x: Any, t: float, strict: bool, largest: bool) -> Fraction:
    """P(entry x loses to, or ties behind, the value t)."""
    if not isinstance(x, GridDraw):
        v = _range(x)[0]
        return ONE if _beats(t, v, strict, largest) else ZERO
    op = ("<" if strict else "<=") if largest else (">" if strict else ">=")
    a, b = x.count(op, t)
    return Fraction(b - a, x.points)


def _split_ends(x: Any, largest: bool) -> tuple[Fraction, Fraction, Any]:
    """``(P(nan), P(top), the rest)`` of a race entry: the grid points at its ends where
    it is nan (``0 / E`` with ``E = 0``) or the top value (``w / E = inf`` for an
    argmax, ``-inf`` for an argmin), split off exactly, and the entry restricted to the
    other points."""
    if not isinstance(x, GridDraw):
        return ZERO, ZERO, x
    lo, hi = x.span
    total = hi - lo
    if all(math.isnan(x.at(k)) for k in (lo, (lo + hi) // 2, hi - 1)):
        # nan inside and at both ends: an operand of the chain is nan (0/0 of a row
        # that is then divided by noise), so the entry is nan at every point
        return ONE, ZERO, x
    nans = 0
    for end in (lo, hi - 1):
        if hi - lo > 1 and math.isnan(x.at(end)):
            nans += 1
            lo, hi = (lo + 1, hi) if end == lo else (lo, hi - 1)
    x = x.within(lo, hi)
    top = math.inf if largest else -math.inf
    a, b = x.count("==", top)
    if not 0 < b - a < hi - lo:
        return Fraction(nans, total), ZERO, x
    rest = x.within(b, hi) if a == lo else x.within(lo, a)
    return Fraction(nans, total), Fraction(b - a, total), rest


def race(row: list[Any], largest: bool) -> Any:
    """The index an argmax (argmin) of ``row`` returns, as a lazy categorical draw.

    See the module docstring for what is exact and what is idealised.  The grid
    points where an entry is nan or infinite (an exponential's ``E = 0`` from
    ``u = 0``) are split off first: torch's argmax returns the first nan, else the
    first maximum, so the mass of those points is exact, and the rest of the race
    is decided on the entries restricted to their finite points.
    """
    for i, x in enumerate(row):
        if isinstance(x, Special) and x.is_nan:
            return i  # torch returns the first nan
    draws_of = [x.rec for x in row if isinstance(x, GridDraw)]
    if len({id(r) for r in draws_of}) != len(draws_of):
        raise unsupported("an argmax over a row holding one torch.rand draw twice "
                          "(its entries are dependent)")
    split = [_split_ends(x, largest) for x in row]
    if not any(nan or top for nan, top, _ in split):
        return _finite_race(row, largest)
    masses = [ZERO] * len(row)
    clear = ONE  # P(no nan so far), then P(no nan and no top so far)
    for i, (nan, _, _) in enumerate(split):
        masses[i] += clear * nan
        clear *= 1 - nan
    for i, (nan, top, _) in enumerate(split):
        share = top / (1 - nan) if nan != 1 else ZERO
        masses[i] += clear * share
        clear *= 1 - share
    if clear == 0:
        for x in row:
            if isinstance(x, GridDraw):
                x.rec.noise = True
        return PendingRace([], masses)
    inner = _finite_race([x for _, _, x in split], largest)
    if not isinstance(inner, PendingRace):
        inner = PendingRace([], [ONE if j == inner else ZERO for j in range(len(row))])
    for i, w in enumerate(inner.weights):
        masses[i] += clear * w
    return PendingRace(inner.recs, masses)


def _finite_race(row: list[Any], largest: bool) -> Any:
    ranges = [_range(x) for x in row]
    n = len(row)
    best = [ranges[i][1] if largest else ranges[i][0] for i in range(n)]
    worst = [ranges[i][0] if largest else ranges[i][1] for i in range(n)]
    can_win = [all(_beats(best[i], worst[j], j < i, largest) for j in range(n) if j != i)
               for i in range(n)]
    fixed = [not isinstance(x, GridDraw) or ranges[i][0] == ranges[i][1]
             for i, x in enumerate(row)]
    masses: list[Fraction] = [ZERO] * n
    for i in range(n):
        if fixed[i] and can_win[i]:
            mass = ONE
            for j in range(n):
                if j != i and mass:
                    mass *= _below(row[j], best[i], j < i, largest)
            masses[i] = mass
    rest = ONE - sum(masses, ZERO)
    draws = [i for i in range(n) if not fixed[i] and can_win[i]]
    recs: list[Any] = []
    if rest and draws:
        weights = {i: _ideal_weight(row[i], largest, recs) for i in draws}
        total = sum(weights.values(), ZERO)
        if total <= 0:
            raise unsupported("a noise race whose drawn entries have no positive weight")
        for i in draws:
            masses[i] = rest * weights[i] / total
        session = current_session()
        session.idealised.add(IDEALISED_RACE)
        session.mass_error += _error_bound(row, largest, fixed, draws, masses)
    elif rest:
        raise unsupported("a noise race whose winner the dtype leaves undetermined")
    for x in row:
        if isinstance(x, GridDraw):
            if x.rec.compared:
                raise unsupported("an argmax over a torch.rand draw that was also compared "
                                  "(the two uses are dependent)")
            x.rec.noise = True
    return PendingRace(recs, masses)


# --------------------------------------------------------------------------
# Certified bounds on a race's masses
# --------------------------------------------------------------------------

#: Buckets of each drawn entry's grid for the bounds (fewer for long rows).
_BUCKETS_SHORT, _BUCKETS_LONG, _LONG_ROW = 1 << 14, 1 << 10, 8

#: Relative slack covering float64 rounding in the bound's products and sums.
_SLACK = 2.0 ** -40


Buckets = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]

#: The buckets of a drawn entry, by what determines them (:func:`_bucket_key`): a loop
#: races the same noise function of the same rows at every execution of its tree.
_BUCKET_CACHE: dict[tuple[Any, ...], Buckets] = {}
_COUNT_CACHE: dict[tuple[Any, ...], tuple[int, int]] = {}
_COUNT_CACHE_SIZE = 4096
_BUCKET_CACHE_SIZE = 512


def _bucket_key(x: GridDraw, sign: float, count: int) -> tuple[Any, ...] | None:
    keys = []
    for step in x.steps:
        key = step.key()
        if key is None:
            return None
        keys.append(key)
    return (x.rec.bits, x.dtype, x.span, sign, count, tuple(keys))


def _buckets(x: Any, fixed: bool, sign: float, count: int) -> Buckets:
    """Each bucket's smallest and largest value (ordered for the race: negated for an
    argmin) and its probability, for an entry monotone in its draw."""
    if fixed or not isinstance(x, GridDraw):
        v = np.array([sign * _range(x)[0]])
        return v, v, np.array([1.0])
    key = _bucket_key(x, sign, count)
    if key is not None:
        try:
            cached = _BUCKET_CACHE.get(key)
        except TypeError:  # an operand that does not hash: no caching
            key, cached = None, None
        if cached is not None:
            return cached
    parts = _computed_buckets(x, sign, count)
    for array in parts:
        array.flags.writeable = False  # shared by every race that reads the cache
    if key is not None:
        if len(_BUCKET_CACHE) >= _BUCKET_CACHE_SIZE:
            _BUCKET_CACHE.clear()
        _BUCKET_CACHE[key] = parts
    return parts


def _computed_buckets(x: GridDraw, sign: float, count: int) -> Buckets:
    start, stop = x.span
    n = stop - start
    count = min(count, n)
    edges = torch.tensor([start + n * m // count for m in range(count + 1)], dtype=torch.int64)
    first = sign * x.at_many(edges[:-1]).numpy()
    last = sign * x.at_many(edges[1:] - 1).numpy()
    if np.isnan(first).any() or np.isnan(last).any():
        raise unsupported(f"a noise race over {x!r}, which is nan on part of the grid")
    weight = np.diff(edges.numpy()).astype(np.float64) / n  # exact: powers of two
    return np.minimum(first, last), np.maximum(first, last), weight


def _cdf_bounds(lo: np.ndarray[Any, Any], hi: np.ndarray[Any, Any], w: np.ndarray[Any, Any],
                t: np.ndarray[Any, Any], strict: bool) -> tuple[np.ndarray[Any, Any],
                                                          np.ndarray[Any, Any]]:
    """Bounds on ``P(entry < t)`` (``<=`` unless ``strict``) at each threshold ``t``."""
    side: Literal["left", "right"] = "left" if strict else "right"
    order_hi, order_lo = np.argsort(hi, kind="stable"), np.argsort(lo, kind="stable")
    cum_hi = np.concatenate([[0.0], np.cumsum(w[order_hi])])
    cum_lo = np.concatenate([[0.0], np.cumsum(w[order_lo])])
    low = cum_hi[np.searchsorted(hi[order_hi], t, side=side)]
    high = cum_lo[np.searchsorted(lo[order_lo], t, side=side)]
    return low, high


def _error_bound(row: list[Any], largest: bool, fixed: list[bool], draws: list[int],
                 masses: list[Fraction]) -> Fraction:
    """A certified bound on the TV between the race's law in the dtype and ``masses``
    (exact at fixed entries, idealised at ``draws``).

    Each drawn entry's grid is cut into buckets; over a bucket the entry's value lies
    between the values at its two ends, and ``P(every other entry loses to t)`` is
    monotone in ``t``, so the bucket's share of the entry's winning mass lies between
    the products at those ends, the factors bounded the same way from the other
    entries' buckets.  Float64 sums and products carry a relative slack of 2**-40.
    """
    sign = 1.0 if largest else -1.0
    count = _BUCKETS_SHORT if len(row) <= _LONG_ROW else _BUCKETS_LONG
    key = _bound_key(row, fixed, sign, count, draws, masses)
    cached = None if key is None else _BOUND_CACHE.get(key)
    if cached is not None:
        return cached
    error = _computed_bound(row, fixed, sign, count, draws, masses)
    if key is not None:
        if len(_BOUND_CACHE) >= _BUCKET_CACHE_SIZE:
            _BOUND_CACHE.clear()
        _BOUND_CACHE[key] = error
    return error


#: Race bounds already computed, by what determines them (:func:`_bound_key`).
_BOUND_CACHE: dict[tuple[Any, ...], Fraction] = {}


def _bound_key(row: list[Any], fixed: list[bool], sign: float, count: int,
               draws: list[int], masses: list[Fraction]) -> tuple[Any, ...] | None:
    entries: list[Any] = []
    for i, x in enumerate(row):
        if fixed[i] or not isinstance(x, GridDraw):
            entries.append(("fixed", _range(x)[0]))
            continue
        key = _bucket_key(x, sign, count)
        if key is None:
            return None
        entries.append(key)
    try:
        out = (tuple(entries), tuple(fixed), sign, count, tuple(draws), tuple(masses))
        hash(out)
    except TypeError:
        return None
    return out


def _computed_bound(row: list[Any], fixed: list[bool], sign: float, count: int,
                    draws: list[int], masses: list[Fraction]) -> Fraction:
    parts = [_buckets(x, fixed[i], sign, count) for i, x in enumerate(row)]
    error = ZERO
    for i in draws:
        lo, hi, w = parts[i]
        low, high = w.copy(), w.copy()
        for j, (lo_j, hi_j, w_j) in enumerate(parts):
            if j != i:
                low *= _cdf_bounds(lo_j, hi_j, w_j, lo, j < i)[0]
                high *= _cdf_bounds(lo_j, hi_j, w_j, hi, j < i)[1]
        lower = Fraction(float(low.sum() * (1 - _SLACK)))
        upper = Fraction(float(high.sum() * (1 + _SLACK)))
        error += max(upper - masses[i], masses[i] - lower, ZERO)
    return error / 2


def _ideal_weight(x: GridDraw, largest: bool, recs: list[Any]) -> Fraction:
    kind, value = ideal(x)
    if kind == "w/E" and largest:
        weight = value
    elif kind == "c*E" and not largest and value > 0:
        weight = 1 / value
    else:
        raise unsupported(f"an {'argmax' if largest else 'argmin'} over {x!r}: only rows "
                          "of w / E, log w + G or E / w entries are modelled")
    recs.append(current_session().noise_for(x.rec))
    return Fraction(max(weight, 0.0))


#: Clamps that only move the grid's zero (``clamp(u, min=tiny)``) leave the ideal
#: uniform as it is: the continuous uniform has no zero to guard against.
def ideal(x: GridDraw) -> tuple[str, float]:
    """What ``x`` is on an ideal continuous uniform: ``("w/E", w)`` (``w / E``, or
    ``log w + G`` with Gumbel ``G = -log E``: the same race entry) or ``("c*E", c)``,
    for an ideal ``E ~ Exp(1)``.  Weights are the dtype's values (floats, exact as
    fractions); ``log w`` is undone with ``exp`` in float64."""
    first_positive = 1 / x.size
    state: tuple[str, float, float] = ("u", 1.0, 0.0)  # a * u + b
    for step in x.steps:
        state = _ideal_step(state, step, first_positive)
    kind, a, b = state
    if kind == "R":
        return "w/E", a
    if kind == "G" and b == -1:
        return "w/E", math.exp(a)
    if kind == "S":
        return "c*E", a
    raise unsupported(f"a noise race over {x!r}: its entries are not of the form w / E, "
                      "log w + G or c E of an exponential made from the draw")


def _ideal_step(state: tuple[str, float, float], step: Step, first_positive: float
                ) -> tuple[str, float, float]:
    kind, a, b = state
    name, c = step.name, step.const
    if name in ("cast", "clone"):
        return state
    if name == "exponential_" and kind == "u" and (a, b) == (1.0, 0.0) and c is not None:
        return "S", c, 0.0  # torch's E / rate from the draw
    if name == "neg":
        return (kind, -a, -b) if kind in ("u", "G") else (kind, -a, b)
    if kind == "u" and name == "log" and (a, b) in ((1.0, 0.0), (-1.0, 1.0)):
        return "S", -1.0, 0.0  # log u and log(1 - u) are -E
    if kind == "u" and name in ("maximum", "clamp_min") and c is not None \
            and (a, b) == (1.0, 0.0) and 0 < c <= first_positive:
        return state
    if kind == "S" and name in ("maximum", "clamp_min") and c is not None and a > 0 \
            and 0 < c / a <= first_positive:
        return state  # a floor guarding E = 0: the certified bound covers the grid's values
    if c is not None and name == "add":
        if kind == "u":
            return "u", a, b + c
        if kind == "G":
            return "G", a + c, b
    if c is not None and name == "sub":
        if kind == "u":
            return ("u", a, b - c) if step.slot == 0 else ("u", -a, c - b)
        if kind == "G":
            return ("G", a - c, b) if step.slot == 0 else ("G", c - a, -b)
    if c is not None and c > 0 and name == "mul" and kind in ("u", "S", "R"):
        return (kind, a * c, b * c) if kind == "u" else (kind, a * c, b)
    if c is not None and c > 0 and name == "div":
        if step.slot == 0 and kind in ("S", "R"):
            return kind, a / c, b
        if step.slot == 1 and kind == "S":
            return "R", c / a, 0.0  # c / (a E) = (c / a) / E
    if name == "log":
        if kind == "S" and a > 0:
            return "G", math.log(a), 1.0  # log(a E) = log a + log E
        if kind == "R" and a > 0:
            return "G", math.log(a), -1.0  # log(w / E) = log w - log E
    if name == "exp" and kind == "G" and b == -1.0:
        return "R", math.exp(a), 0.0
    raise unsupported(f"a noise race over a draw to which {name} was applied "
                      "(not of the form w / E, log w + G or c E)")
