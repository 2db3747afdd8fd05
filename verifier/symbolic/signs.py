"""Deciding the sign of a symbolic quantity inside one case, or splitting the case.

A *case* (cell) is a conjunction of linear constraints on (p, q) that holds
for the whole enumeration of the sampler.  Inside one execution, branches
taken with a probability that may vanish on part of the case add *local*
constraints ("this probability is positive"), valid only below that branch.

``Decider.decide(expr, truth)`` answers "is sign(expr) in truth?" when the
case plus the local constraints settle it; otherwise it raises
:class:`NeedSplit`, and the prover re-runs the sampler once per side.
A rational expression is split into the linear and nonlinear factors of its
numerator and denominator.  The LP decides linear signs; a nonlinear factor's
sign is known only from an explicit case constraint on it, so the case is
split on it (the prover then needs witnesses to tell such cases apart).
Anything that is not a rational function of p and q is an
UnsupportedOperation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy

from specexact.errors import UnsupportedOperation
from specexact.symbolic.region import Constraint, Lin, Space

__all__ = [
    "Decider",
    "NeedSplit",
    "SignSet",
    "check_nonlinear_local",
    "factorise",
    "poly_signs",
    "side",
]

SignSet = frozenset[int]
NEG, ZERO, POS = -1, 0, 1
ALL: SignSet = frozenset((NEG, ZERO, POS))
_SINGLE = {s: frozenset((s,)) for s in (NEG, ZERO, POS)}


class NeedSplit(BaseException):
    """The case must be split; one constraint per side.  A BaseException so that
    a sampler's ``except Exception`` cannot swallow it."""

    def __init__(self, sides: Sequence[Constraint]) -> None:
        super().__init__(", ".join(str(s) for s in sides))
        self.sides = tuple(sides)


class _Factor:
    """One factor of a numerator or denominator: linear (``lin``) or a polynomial.

    A nonlinear factor equals ``orient * c * poly`` with ``c > 0`` and
    ``poly`` normalised (primitive, positive leading coefficient).
    """

    __slots__ = ("lin", "multiplicity", "orient", "poly", "shown")

    def __init__(self, lin: Lin | None, multiplicity: int, shown: Any,
                 poly: Any = None, orient: int = 1) -> None:
        self.lin = lin
        self.multiplicity = multiplicity
        self.shown = shown
        self.poly = poly
        self.orient = orient

    def constraint(self, space: Space, rel: str, negate: bool = False) -> Constraint:
        """``factor rel 0`` (or ``-factor rel 0``)."""
        shown = -self.shown if negate else self.shown
        if self.lin is None:
            sign = -self.orient if negate else self.orient
            return Constraint(None, rel, shown, self.poly, sign)  # type: ignore[arg-type]
        lin = tuple(-c for c in self.lin) if negate else self.lin
        return space.constraint(lin, rel, shown)  # type: ignore[arg-type]


# Keyed by the space's cache_key: linear forms mean different things in different spaces.
_SIGN_CACHE: dict[tuple[Any, frozenset[int], Any], SignSet] = {}
_FACTOR_CACHE: dict[tuple[Any, Any], tuple[int, tuple[_Factor, ...], tuple[_Factor, ...]]] = {}
_REL_SIGNS = {">": frozenset((POS,)), ">=": frozenset((ZERO, POS)), "==": frozenset((ZERO,))}


def _sign_of(x: Any) -> int:
    return POS if x > 0 else NEG if x < 0 else ZERO


def factorise(space: Space, expr: Any, what: str
              ) -> tuple[int, tuple[_Factor, ...], tuple[_Factor, ...]]:
    """``expr`` as ``sign * prod(numerator factors) / prod(denominator factors)``."""
    key = (space.cache_key, expr)
    cached = _FACTOR_CACHE.get(key)
    if cached is not None:
        return cached
    lin = space.linear(expr)
    if lin is not None:
        if not any(lin[:-1]):
            result: tuple[int, tuple[_Factor, ...], tuple[_Factor, ...]] = (
                _sign_of(lin[-1]), (), ())
        else:
            result = (POS, (_Factor(lin, 1, expr),), ())
    else:
        result = _factorise(space, expr, what)
    _FACTOR_CACHE[key] = result
    return result


def _factorise(space: Space, expr: Any, what: str
               ) -> tuple[int, tuple[_Factor, ...], tuple[_Factor, ...]]:
    expr = sympy.sympify(expr)
    if not expr.is_rational_function(*space.p, *space.q):
        msg = (f"{what}: {sympy.sstr(expr)} is not a rational function of p and q "
               "(non-polynomial operations cannot be decided exactly)")
        raise UnsupportedOperation(msg)
    num, den = sympy.fraction(sympy.together(expr))
    sign = POS
    parts: list[list[_Factor]] = [[], []]
    for slot, poly in enumerate((num, den)):
        coeff, factors = sympy.factor_list(poly, *space.p, *space.q)
        sign *= _sign_of(coeff)
        for factor, mult in factors:
            lin = space.linear(factor)
            if lin is not None and not any(lin[:-1]):
                sign *= _sign_of(lin[-1]) ** int(mult)
                continue
            if lin is not None:
                parts[slot].append(_Factor(lin, int(mult), factor))
                continue
            # Nonlinear on the simplex: normalise the eliminated polynomial.
            reduced = sympy.Poly(sympy.expand(space.eliminate(factor)), *space.variables)
            if reduced.is_zero:
                sign = ZERO
                continue
            _, primitive = reduced.primitive()
            orient = _sign_of(primitive.LC())
            normal = (primitive * orient).as_expr()
            parts[slot].append(_Factor(None, int(mult), factor, normal, orient))
    return sign, tuple(parts[0]), tuple(parts[1])


def _product(sets: Sequence[tuple[SignSet, int]], start: int) -> SignSet:
    current = {start}
    for signs, mult in sets:
        current = {c * s ** mult for c in current for s in signs}
    return frozenset(current)


def side(space: Space, factor: _Factor, signs: SignSet) -> list[Constraint]:
    """Constraints saying sign(factor) lies in ``signs``; {-, +} is two sides."""
    if signs == {NEG, POS}:
        return [factor.constraint(space, ">", negate=True), factor.constraint(space, ">")]
    if signs == {NEG}:
        return [factor.constraint(space, ">", negate=True)]
    if signs == {POS}:
        return [factor.constraint(space, ">")]
    if signs == {ZERO}:
        return [factor.constraint(space, "==")]
    if signs == {NEG, ZERO}:
        return [factor.constraint(space, ">=", negate=True)]
    if signs == {ZERO, POS}:
        return [factor.constraint(space, ">=")]
    return [c for s in sorted(signs) for c in side(space, factor, _SINGLE[s])]


def poly_signs(constraints: Sequence[Constraint], poly: Any) -> SignSet:
    """The signs of a normalised polynomial allowed by the constraints that name it."""
    signs = ALL
    for c in constraints:
        if c.lin is None and c.poly == poly:
            signs = signs & frozenset(c.sign * s for s in _REL_SIGNS[c.rel])
    return signs


def check_nonlinear_local(space: Space, c: Constraint, contributions: Sequence[Any],
                          region: Sequence[Constraint],
                          case: Sequence[Constraint] | None = None) -> None:
    """Raise NeedSplit unless a branch explored assuming the nonlinear ``c`` (``g > 0``)
    is exact on ``region``.

    It is when ``region`` implies ``c``; otherwise ``region`` must allow no sign
    of ``c`` below 0 (only ``g >= 0``) and every contribution's numerator must
    vanish wherever ``g`` does (``g`` divides it).  The split raised has one
    side per sign ``c`` may take on ``case``, the region that gets split: by
    default ``region`` itself (a sampler's leaf is decided and split on its
    case); a step's leaf is decided on its region below earlier branches
    (``region``) but splits the whole case (``case``).
    """
    allowed = frozenset(c.sign * s for s in poly_signs(region, c.poly))
    if allowed <= {POS}:
        return
    signs = allowed if case is None else frozenset(c.sign * s for s in poly_signs(case, c.poly))
    split = NeedSplit([c.with_rel(space, "==") if s == ZERO else
                       c if s > ZERO else c.negated(space, ">")
                       for s in sorted(signs)])
    if NEG in allowed:
        raise split
    for contribution in contributions:
        num, _ = sympy.fraction(contribution)
        reduced = sympy.expand(space.eliminate(num))
        if reduced != 0 and sympy.rem(reduced, c.poly, *space.variables) != 0:
            raise split


class Decider:
    """Sign questions inside one case, under the local constraints of one execution."""

    def __init__(self, space: Space, cell: Sequence[Constraint]) -> None:
        self.space = space
        self.cell = tuple(cell)
        self.local: list[Constraint] = []
        #: Errors raised here, kept in case the code under test swallows them.
        self.errors: list[UnsupportedOperation] = []
        #: Splits raised here: a sampler's ``except BaseException`` (or bare
        #: ``except:``) must not turn an undecided comparison into a branch.
        self.splits: list[NeedSplit] = []

    def _pending(self, split: NeedSplit) -> NeedSplit:
        self.splits.append(split)
        return split

    def factor_signs(self, factor: _Factor, *, local: bool = True) -> SignSet:
        """The possible signs of a factor in the case (and under the local constraints)."""
        base = (*self.cell, *self.local) if local else self.cell
        if factor.lin is None:
            # The LP cannot decide a nonlinear sign: only explicit constraints count.
            signs = poly_signs(base, factor.poly)
            return frozenset(factor.orient * s for s in signs)
        # The whole base is the key (with nonlinear constraints, feasible() may prune
        # more), in this space (linear forms mean different things in different spaces).
        key = (self.space.cache_key, frozenset(c.kid for c in base), factor.lin)
        cached = _SIGN_CACHE.get(key)
        if cached is None:
            cached = _SIGN_CACHE[key] = self._lin_signs(factor.lin, base)
        return cached

    def _lin_signs(self, lin: Lin, base: tuple[Constraint, ...]) -> SignSet:
        space = self.space
        found = set()
        neg = tuple(-c for c in lin)
        if space.feasible((*base, space.bare(neg, ">"))):
            found.add(NEG)
        if space.feasible((*base, space.bare(lin, "=="))):
            found.add(ZERO)
        if space.feasible((*base, space.bare(lin, ">"))):
            found.add(POS)
        return frozenset(found)

    def _factor_sets(self, expr: Any, what: str) -> tuple[int, list[tuple[_Factor, SignSet]],
                                                          list[tuple[_Factor, SignSet]]]:
        try:
            sign, num, den = factorise(self.space, expr, what)
        except UnsupportedOperation as error:
            self.errors.append(error)
            raise
        return (sign, [(f, self.factor_signs(f)) for f in num],
                [(f, self.factor_signs(f)) for f in den])

    def sign_set(self, expr: Any, what: str = "comparison") -> SignSet:
        """The possible signs of ``expr`` (an over-approximation when it has several factors)."""
        sign, num, den = self._factor_sets(expr, what)
        sets = [(s, f.multiplicity) for f, s in num]
        # A denominator is nonzero wherever the expression exists.
        sets += [(s - {ZERO} or s, f.multiplicity) for f, s in den]
        return _product(sets, sign)

    def decide(self, expr: Any, truth: SignSet, what: str = "comparison") -> bool:
        """Whether sign(expr) lies in ``truth`` throughout; raises NeedSplit if that varies."""
        signs = self.sign_set(expr, what)
        if signs <= truth:
            return True
        if not signs & truth:
            return False
        raise self._pending(self.split(expr, truth, what))

    def sign(self, expr: Any, what: str = "comparison") -> int:
        """The single sign of ``expr`` in this case (splitting it if needed)."""
        if self.decide(expr, _SINGLE[ZERO], what):
            return ZERO
        return POS if self.decide(expr, _SINGLE[POS], what) else NEG

    def split(self, expr: Any, truth: SignSet, what: str) -> NeedSplit:
        sign, num, den = self._factor_sets(expr, what)
        loose = [(f, s) for f, s in (*num, *den) if len(s) > 1]
        if not loose:  # pragma: no cover - decide() only splits undecided signs
            msg = f"internal error: cannot split on {expr}"
            raise UnsupportedOperation(msg)
        factor = loose[0][0]
        cell_signs = self.factor_signs(factor, local=False)
        if len(loose) == 1:
            fixed = [(s, f.multiplicity) for f, s in (*num, *den) if f is not factor]
            k = next(iter(_product(fixed, sign)))
            yes = frozenset(s for s in cell_signs
                            if k * s ** factor.multiplicity in truth)
            if yes and cell_signs - yes:
                sides = [c for part in (yes, cell_signs - yes)
                         for c in side(self.space, factor, part)]
                return NeedSplit(sides)
        if len(cell_signs) < 2:  # pragma: no cover - local constraints only narrow the case
            msg = f"internal error: the sign of {factor.shown} is fixed but undecided"
            raise UnsupportedOperation(msg)
        return NeedSplit([c for s in sorted(cell_signs)
                          for c in side(self.space, factor, _SINGLE[s])])

    def positivity(self, expr: Any, what: str) -> list[Constraint] | None:
        """Local constraints making ``expr`` (a nonnegative probability numerator) positive.

        None when ``expr`` is zero throughout the current region; [] when it is
        positive throughout.
        """
        signs = self.sign_set(expr, what)
        if signs <= {ZERO}:
            return None
        if NEG in signs and not self.decide(expr, frozenset((ZERO, POS)), what):
            msg = f"internal error: {what} has a negative probability {expr}"
            raise UnsupportedOperation(msg)
        if signs == {POS}:
            return []
        _, num, den = self._factor_sets(expr, what)
        for f, s in den:
            if ZERO in s and len(s) > 1:
                cell_signs = self.factor_signs(f, local=False)
                raise self._pending(NeedSplit([c for x in sorted(cell_signs)
                                               for c in side(self.space, f, _SINGLE[x])]))
        extra: list[Constraint] = []
        for f, s in num:
            if ZERO not in s or len(s) == 1:
                continue
            if s == {ZERO, POS}:
                extra.append(f.constraint(self.space, ">"))
            elif s == {NEG, ZERO}:
                extra.append(f.constraint(self.space, ">", negate=True))
            else:  # f != 0 is not convex: split on the factor's sign
                raise self._pending(
                    NeedSplit(side(self.space, f, self.factor_signs(f, local=False))))
        if not self.space.feasible((*self.cell, *self.local, *extra)):
            return None
        return extra
