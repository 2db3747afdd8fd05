"""What a step sees in a symbolic proof: models with a symbolic row per prefix, local case splits.

:class:`SymbolicModel` answers ``model(prefix)`` with the row of
:class:`~specexact.symbolic.values.SymbolicValue` for that prefix (a
row whose prefix holds undrawn tokens is looked up when first read, fixing
them, as the numeric engine's models do).

:class:`LocalDecider` makes an undecided sign a *branch* of the execution
instead of a split of the whole case: a chain step compares ``p[0]`` with
``q[0]`` only after drafting token 0, so splitting every case on every
prefix's comparison would multiply the cases by every row the step may
read.  Each side of such a branch is a region (weight 1, not a
probability); the leaf records the sides it took, and the step prover sums
leaves over a refinement of the regions (see step_prover.py).
"""

from __future__ import annotations

import operator
from collections.abc import MutableSequence, Sequence
from fractions import Fraction
from typing import Any

import sympy

from specexact.errors import UnsupportedOperation
from specexact.exact.random_source import LazyToken
from specexact.exact.tree import Chooser
from specexact.steps.models import DeferredList
from specexact.symbolic.lp import solve_lp
from specexact.symbolic.nonlinear import local_relaxation_empty
from specexact.symbolic.random_source import SymbolicRandom
from specexact.symbolic.region import Constraint
from specexact.symbolic.signs import Decider, SignSet, poly_signs
from specexact.symbolic.step_space import RowKey, StepSpace
from specexact.symbolic.values import SymbolicValue

__all__ = ["EmptyRegion", "LocalDecider", "MissingRow", "SymbolicModel", "nonlinear_possible",
           "possible", "region_empty"]

_ONE = sympy.Integer(1)
_REL_SIGNS = {">": frozenset((1,)), ">=": frozenset((0, 1)), "==": frozenset((0,))}


class MissingRow(BaseException):
    """The step read a row the space has no symbols for; the state is redone with it.
    A BaseException so that a step's ``except Exception`` cannot swallow it."""

    def __init__(self, key: RowKey) -> None:
        super().__init__(f"{key[0]} row at prefix {key[1]}")
        self.key = key


class EmptyRegion(BaseException):
    """The execution's region is certainly empty: the path has probability 0 everywhere."""


def possible(space: StepSpace, base: Sequence[Constraint], c: Constraint) -> bool:
    """Whether ``c`` may hold together with ``base``: exact for a linear ``c``; a nonlinear
    one is ruled out only soundly (see :func:`nonlinear_possible`)."""
    if c.lin is not None:
        return space.feasible((*base, c))
    return nonlinear_possible(space, base, c)


def nonlinear_possible(space: StepSpace, base: Sequence[Constraint], c: Constraint) -> bool:
    """False only when ``c`` (a polynomial sign condition) cannot hold on ``base``."""
    if not poly_signs((*base, c), c.poly):
        return False
    return not region_empty(space, (*base, c))


def _oriented(space: StepSpace, c: Constraint) -> Any:
    """``c`` as ``expr rel 0`` in the eliminated coordinates."""
    if c.lin is not None:
        return space.expr(c.lin)
    return c.sign * sympy.sympify(c.poly)


def _substitution(space: StepSpace, region: Sequence[Constraint]
                  ) -> tuple[dict[Any, Any], set[int]] | None:
    """Values for some variables forced by the region's equalities (None: contradictory).

    Linear equalities are solved exactly; a polynomial equality in which
    some variable appears once with a constant coefficient is solved for it.
    Returns the substitution and the positions of the equalities it used.
    """
    used: set[int] = set()
    eqs = [(i, space.expr(c.lin)) for i, c in enumerate(region)
           if c.rel == "==" and c.lin is not None]
    substitution: dict[Any, Any] = {}
    if eqs:
        symbols = sorted(set().union(*(e.free_symbols for _, e in eqs)), key=str)
        solution = sympy.solve([e for _, e in eqs], symbols, dict=True)
        if not solution:
            return None
        substitution = dict(solution[0])
        used = {i for i, _ in eqs}
    for i, c in enumerate(region):
        if c.rel != "==" or c.lin is not None:
            continue
        poly = sympy.expand(sympy.sympify(c.poly).xreplace(substitution))
        if poly == 0:
            used.add(i)
            continue
        for var in sorted(poly.free_symbols, key=str):
            coeff = poly.coeff(var, 1)
            if coeff.is_number and coeff != 0 and sympy.degree(poly, var) == 1:
                value = sympy.expand(-(poly - coeff * var) / coeff)
                substitution = {k: sympy.expand(v.xreplace({var: value}))
                                for k, v in substitution.items()}
                substitution[var] = value
                used.add(i)
                break
    return substitution, used


def region_empty(space: StepSpace, region: Sequence[Constraint]) -> bool:
    """True only when the region is certainly empty (its nonlinear conditions included).

    Besides the exact LP on the linear constraints: the region's equalities
    are substituted into every other constraint, which is then factored; the
    product of its factors' possible signs (each linear factor's from the
    exact LP on the region) must meet the sign the constraint asks for.
    ``q0 * p1 < 0`` with ``p, q >= 0`` is impossible, though the LP cannot
    see it.  A sound test, not a complete one.
    """
    region = tuple(region)
    key = tuple(c.kid for c in region)
    cached = space.empty_cache.get(key)
    if cached is None:
        cached = space.empty_cache[key] = _region_empty(space, region)
    return cached


def _region_empty(space: StepSpace, region: tuple[Constraint, ...]) -> bool:
    if not space.feasible(region):
        return True
    if all(c.lin is not None for c in region):
        return False
    found = _substitution(space, region)
    if found is None:
        return True
    substitution, used = found
    decider = Decider(space, tuple(c for c in region if c.lin is not None))
    for i, c in enumerate(region):
        if i in used or (c.lin is not None and not substitution):
            continue
        expr = sympy.expand(_oriented(space, c).xreplace(substitution))
        if expr.is_number:
            if not (expr > 0 if c.rel == ">" else expr >= 0 if c.rel == ">=" else expr == 0):
                return True
            continue
        try:
            signs = decider.sign_set(expr, "a case condition")
        except UnsupportedOperation:
            continue
        if not signs & _REL_SIGNS[c.rel]:
            return True
    if _relaxation_empty(space, [(sympy.expand(_oriented(space, c).xreplace(substitution)),
                                  c.rel) for i, c in enumerate(region) if i not in used]):
        return True
    # Products of the constraints on the rows the nonlinear ones touch (nonlinear.py):
    # p[a]_2 * p[b]_2 > q[b]_2 > p[b]_2 is impossible, but not to the relaxation above
    # in the eliminated coordinates.
    return local_relaxation_empty(space, region)


def _relaxation_empty(space: StepSpace, rows: Sequence[tuple[Any, str]]) -> bool:
    """Whether the linear relaxation with each monomial as a variable is empty (then so
    is the region: a sound test).

    A monomial ``m`` of variables in [0, 1] gets ``0 <= m <= x`` for each of
    its variables ``x`` and, for ``x * y``, ``m >= x + y - 1`` (McCormick);
    ``x**2 >= 2x - 1``.  Strict rows get a common slack that must stay > 0,
    as in the exact LP of region.py.
    """
    polys = []
    for expr, rel in rows:
        if expr.is_number:
            continue
        polys.append((sympy.Poly(expr, *space.variables), rel))
    if not polys:
        return False
    columns: dict[tuple[int, ...], int] = {}
    for poly, _ in polys:
        for monomial in poly.monoms():
            if sum(monomial):
                columns.setdefault(monomial, len(columns))
    for monomial in list(columns):
        for j, e in enumerate(monomial):
            if e:
                unit = tuple(int(k == j) for k in range(len(monomial)))
                columns.setdefault(unit, len(columns))
    n = len(columns)
    strict = any(rel == ">" for _, rel in polys)
    width = n + int(strict)
    a_ub: list[list[Fraction]] = []
    b_ub: list[Fraction] = []
    a_eq: list[list[Fraction]] = []
    b_eq: list[Fraction] = []

    def row(coeffs: dict[int, Fraction]) -> list[Fraction]:
        out = [Fraction(0)] * width
        for k, v in coeffs.items():
            out[k] += v
        return out

    for poly, rel in polys:
        coeffs: dict[int, Fraction] = {}
        const = Fraction(0)
        for monomial, c in poly.terms():
            value = Fraction(int(c.p), int(c.q))
            if sum(monomial):
                coeffs[columns[monomial]] = coeffs.get(columns[monomial], Fraction(0)) + value
            else:
                const += value
        if rel == "==":
            a_eq.append(row(coeffs))
            b_eq.append(-const)
            continue
        negated = {k: -v for k, v in coeffs.items()}
        if rel == ">":
            negated[n] = Fraction(1)
        a_ub.append(row(negated))
        b_ub.append(const)
    one = Fraction(1)
    for monomial, k in columns.items():
        degree = sum(monomial)
        variables = [j for j, e in enumerate(monomial) if e]
        if degree == 1:
            continue
        for j in variables:
            unit = tuple(int(i == j) for i in range(len(monomial)))
            a_ub.append(row({k: one, columns[unit]: -one}))
            b_ub.append(Fraction(0))
        if degree == 2 and len(variables) == 2:
            x, y = (columns[tuple(int(i == j) for i in range(len(monomial)))] for j in variables)
            a_ub.append(row({x: one, y: one, k: -one}))
            b_ub.append(one)
        elif degree == 2:
            x = columns[tuple(int(i == variables[0]) for i in range(len(monomial)))]
            a_ub.append(row({x: Fraction(2), k: -one}))
            b_ub.append(one)
    # each row's eliminated coordinates sum to at most 1
    half = space.vocab_size - 1
    for r in range(len(space.rows)):
        members = {columns[u]: one for u in columns if sum(u) == 1
                   and u.index(1) // half == r} if half else {}
        if members:
            a_ub.append(row(members))
            b_ub.append(one)
    if strict:
        a_ub.append(row({n: one}))
        b_ub.append(one)
    cost = row({n: -one}) if strict else [Fraction(0)] * width
    solved = solve_lp(cost, a_ub, b_ub, a_eq, b_eq)
    if solved is None:
        return True
    return strict and not solved[0] < 0


class _DepthList(list[Constraint]):
    """The local constraints of one execution, each with the number of choices made
    before it was added (so a prefix of the path knows which constraints are its own)."""

    def __init__(self, chooser: Chooser) -> None:
        super().__init__()
        self.chooser = chooser
        self.depths: list[int] = []

    def append(self, c: Constraint) -> None:
        super().append(c)
        self.depths.append(self.chooser.depth)

    def extend(self, cs: Any) -> None:
        for c in cs:
            self.append(c)


class LocalDecider(Decider):
    """A Decider whose undecided signs branch the execution, one region per side."""

    def __init__(self, space: StepSpace, cell: Sequence[Constraint], chooser: Chooser,
                 point: Sequence[Fraction] | None = None) -> None:
        super().__init__(space, cell)
        self.chooser = chooser
        #: When set, a branch takes only the side holding at this point (a guided
        #: refutation, see step_prover.py); the other sides are not explored.
        self.point = point
        self.local: _DepthList = _DepthList(chooser)
        self.step_space = space
        #: Indices into ``local`` of the constraints that are region sides (the
        #: others are "this branch has positive probability").
        self.side_positions: list[int] = []
        #: Set when the path's region turned out empty (see EmptyRegion).
        self.empty = False

    def decide(self, expr: Any, truth: SignSet, what: str = "comparison") -> bool:
        for _ in range(32):
            signs = self.sign_set(expr, what)
            if signs <= truth:
                return True
            if not signs & truth:
                return False
            self._choose(self.split(expr, truth, what).sides, what)
        msg = f"internal error: the sign of {expr} stays undecided after 32 case splits"
        raise UnsupportedOperation(msg)

    def _choose(self, sides: Sequence[Constraint], what: str) -> None:
        base = (*self.cell, *self.local)
        live = [c for c in sides if possible(self.step_space, base, c)]
        if not live:
            # The sides cover the path's region and each is certainly impossible: the
            # region is empty (nonlinear conditions), so the path has probability 0.
            self.empty = True
            raise EmptyRegion
        if self.point is not None:
            here = [c for c in live if self.step_space.contains((c,), self.point)]
            live = here or live
        index = 0
        if len(live) > 1:
            index = self.chooser.choose(("sides", tuple(c.key() for c in live)),
                                        lambda: [(i, _ONE) for i in range(len(live))],
                                        f"case: {' | '.join(str(c) for c in live)}")
        self.side_positions.append(len(self.local))
        self.local.append(live[index])

    @property
    def sides(self) -> tuple[Constraint, ...]:
        return tuple(self.local[i] for i in self.side_positions)

    @property
    def depths(self) -> tuple[int, ...]:
        """For each local constraint, the number of choices made before it was added."""
        return tuple(self.local.depths)


class SymbolicModel:
    """``model(prefix)``: a fresh list of symbolic values, the row of ``(name, prefix)``."""

    def __init__(self, name: str, space: StepSpace, rng: SymbolicRandom,
                 missing: list[RowKey]) -> None:
        self.name = name
        self.space = space
        self.rng = rng
        self.missing = missing

    def __call__(self, prefix: Any) -> MutableSequence[Any]:
        key = tuple(prefix)
        for token in key:
            if isinstance(token, LazyToken) and not token.is_fixed:
                return _LazyRow(self, key)
        return self.row(key)

    def row(self, prefix: Sequence[Any]) -> list[Any]:
        ids = tuple(operator.index(t) for t in prefix)
        v = self.space.vocab_size
        if any(not 0 <= t < v for t in ids):
            msg = (f"the step asked the {'target' if self.name == 'p' else 'draft'} for its "
                   f"row at prefix {ids}, which holds an id outside the vocabulary 0..{v - 1}")
            raise UnsupportedOperation(msg)
        key = (self.name, ids)
        if not self.space.has_row(key):
            self.missing.append(key)
            raise MissingRow(key)
        return [SymbolicValue(s, self.rng) for s in self.space.symbols[key]]

    def __repr__(self) -> str:
        return f"<symbolic {'target' if self.name == 'p' else 'draft'} model>"


class _LazyRow(DeferredList[Any]):
    """A row whose prefix holds undrawn tokens: looked up (fixing them) when first read."""

    __slots__ = ("_model", "_prefix")

    def __init__(self, model: SymbolicModel, prefix: tuple[Any, ...]) -> None:
        self._model = model
        self._prefix = prefix
        self._items = None

    def _load(self) -> list[Any]:
        return self._model.row(self._prefix)

    def _known_length(self) -> int:
        return self._model.space.vocab_size
