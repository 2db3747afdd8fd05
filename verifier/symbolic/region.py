"""Linear constraints on (p, q) over the simplex, decided with an exact LP.

The symbolic prover works in the coordinates ``p_0..p_{V-2}, q_0..q_{V-2}``:
``p_{V-1} = 1 - sum(p_i)`` and ``q_{V-1} = 1 - sum(q_i)`` are eliminated, so
the simplex is ``x >= 0`` (the LP's variable bounds) plus the two rows
``1 - sum >= 0``.  A linear form is a tuple of Fractions ``(c_0, ..., c_{n-1},
const)`` meaning ``sum c_i x_i + const``.

The LP (an exact simplex over Fractions, see lp.py) takes non-strict
inequalities only.  A set with strict inequalities ``g_i > 0`` is nonempty iff the LP
"maximise s subject to g_i - s >= 0, s <= 1 and the non-strict rows" has an
optimum s > 0 -- exact, so no tolerance hides anything.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import sympy

from specexact.errors import UnsupportedOperation
from specexact.numbers import ZERO
from specexact.symbolic.lp import constrained_point

__all__ = ["Constraint", "Lin", "Point", "Space", "Variables", "pq_variables"]

Lin = tuple[Fraction, ...]
Rel = Literal[">", ">=", "=="]
Point = tuple[tuple[Fraction, ...], tuple[Fraction, ...]]

_REL_CODE = {">": 0, ">=": 1, "==": 2}


def _rational(x: Any) -> Fraction:
    r = sympy.Rational(x)
    return Fraction(int(r.p), int(r.q))


@dataclass(frozen=True)
class Constraint:
    """``lin rel 0``, or ``sign * poly rel 0`` for a nonlinear condition.

    ``expr`` is the same form in the sampler's own symbols, for display.
    ``poly`` (nonlinear only) is a primitive polynomial in the eliminated
    coordinates with a positive leading coefficient; the LP ignores such
    constraints (it decides the linear relaxation), points are tested
    against them exactly.
    """

    lin: Lin | None
    rel: Rel
    expr: Any
    poly: Any = None
    sign: int = 1

    @property
    def linear(self) -> bool:
        return self.lin is not None

    def negated(self, space: Space, rel: Rel) -> Constraint:
        """``-lin rel 0``."""
        if self.lin is None:
            return Constraint(None, rel, -self.expr, self.poly, -self.sign)
        return space.constraint(tuple(-c for c in self.lin), rel, -self.expr)

    def with_rel(self, space: Space, rel: Rel) -> Constraint:
        if self.lin is None:
            return Constraint(None, rel, self.expr, self.poly, self.sign)
        return space.constraint(self.lin, rel, self.expr)

    def key(self) -> tuple[Any, ...]:
        return (self.lin, self.rel) if self.lin is not None else (self.poly, self.sign, self.rel)

    @functools.cached_property
    def kid(self) -> int:
        """A small int standing for ``key()`` (hashing Fraction tuples is slow)."""
        return key_id(self.key())

    def holds(self, values: Sequence[Fraction]) -> bool:
        """Whether the point (eliminated coordinates p_0..p_{V-2}, q_0..q_{V-2}) satisfies it."""
        if self.lin is None:
            v = self.sign * evaluate(self.poly, values)
        else:
            v = sum((c * x for c, x in zip(self.lin, values, strict=False)), self.lin[-1])
        return v > 0 if self.rel == ">" else v >= 0 if self.rel == ">=" else v == 0

    @property
    def shown(self) -> str:
        return format_relation(self.expr, self.rel)

    def __str__(self) -> str:
        return self.shown


_KEY_IDS: dict[tuple[Any, ...], int] = {}
_KEYS: list[tuple[Any, ...]] = []


def key_id(key: tuple[Any, ...]) -> int:
    """The interned id of a constraint key (``(lin, rel)`` or ``(poly, sign, rel)``)."""
    found = _KEY_IDS.get(key)
    if found is None:
        found = _KEY_IDS[key] = len(_KEYS)
        _KEYS.append(key)
    return found


def evaluate(expr: Any, values: Sequence[Fraction]) -> Fraction:
    """``expr`` (in eliminated coordinates) at a point, exactly."""
    half = len(values) // 2
    mapping = {}
    for i in range(half):
        mapping[sympy.Symbol(f"p{i}")] = sympy.Rational(values[i].numerator,
                                                        values[i].denominator)
        mapping[sympy.Symbol(f"q{i}")] = sympy.Rational(values[half + i].numerator,
                                                        values[half + i].denominator)
    return _rational(sympy.sympify(expr).xreplace(mapping))


def _scaled(lin: Lin) -> Lin:
    """Divide by the first nonzero coefficient's absolute value (keeps the orientation)."""
    for c in lin:
        if c:
            if c == 1 or c == -1:  # the common case: nothing to divide
                return lin
            a = abs(c)
            return tuple(x / a for x in lin)
    return lin


@dataclass(frozen=True)
class Variables:
    """The symbols a space works in.

    ``p`` and ``q`` are every target and draft symbol; ``variables`` the free
    ones, in LP column order; ``elimination`` gives each eliminated symbol as
    ``1 - sum`` of its row's free ones; ``simplex_rows`` are the linear forms
    ``1 - sum >= 0`` that keep each eliminated entry nonnegative.
    """

    p: tuple[Any, ...]
    q: tuple[Any, ...]
    variables: tuple[Any, ...]
    elimination: dict[Any, Any]
    simplex_rows: tuple[Lin, ...]


def pq_variables(vocab_size: int) -> Variables:
    """A sampler's symbols: one target row ``p0..`` and one draft row ``q0..``."""
    v = vocab_size
    p = sympy.symbols(f"p0:{v}")
    q = sympy.symbols(f"q0:{v}")
    half = v - 1
    # The simplex rows beyond x >= 0: p_{V-1} >= 0 and q_{V-1} >= 0.
    simplex_rows: tuple[Lin, ...] = (
        (*([Fraction(-1)] * half), *([ZERO] * half), Fraction(1)),
        (*([ZERO] * half), *([Fraction(-1)] * half), Fraction(1)),
    ) if v > 1 else ()
    return Variables(p, q, (*p[:-1], *q[:-1]),
                     {p[-1]: 1 - sum(p[:-1]), q[-1]: 1 - sum(q[:-1])}, simplex_rows)


class Space:
    """The symbols of one vocabulary size and exact LP queries over the simplex.

    ``variables`` defaults to a sampler's (:func:`pq_variables`); a space over other
    rows (:class:`~specexact.symbolic.step_space.StepSpace`) passes its own, with a
    ``cache_key`` of its own.
    """

    def __init__(self, vocab_size: int, variables: Variables | None = None,
                 cache_key: Any = None) -> None:
        self.vocab_size = vocab_size
        #: Keys the module-level sign and factor caches (signs.py): one per meaning of a
        #: linear form, so spaces over other variables (step_space.py) never share entries.
        self.cache_key: Any = vocab_size if cache_key is None else cache_key
        layout = pq_variables(vocab_size) if variables is None else variables
        self.p = layout.p
        self.q = layout.q
        self.variables: tuple[sympy.Symbol, ...] = layout.variables
        self.n = len(self.variables)
        self.index = {s: i for i, s in enumerate(self.variables)}
        self.elimination = layout.elimination
        self.simplex_rows: tuple[Lin, ...] = layout.simplex_rows
        self._feasible_cache: dict[frozenset[int], bool] = {}
        self._linear_cache: dict[frozenset[Any], bool] = {}
        self._relabel_cache: dict[frozenset[int], frozenset[Any]] = {}
        self._invariants: dict[int, tuple[tuple[tuple[int, int], ...], tuple[int, ...]]] = {}
        self._lin_cache: dict[Any, Lin | None] = {}
        self.lp_calls = 0

    # -- expressions <-> linear forms ------------------------------------------

    def eliminate(self, expr: Any) -> Any:
        return sympy.sympify(expr).xreplace(self.elimination)

    def linear(self, expr: Any) -> Lin | None:
        """The linear form of ``expr`` on the simplex, or None if it is not linear."""
        cached = self._lin_cache.get(expr, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        result = self._linear(expr)
        self._lin_cache[expr] = result
        return result

    def _linear(self, expr: Any) -> Lin | None:
        e = sympy.expand(self.eliminate(expr))
        coeffs = [ZERO] * (self.n + 1)
        for term, c in e.as_coefficients_dict().items():
            if not c.is_Rational:
                return None
            if term == 1:
                coeffs[-1] += _rational(c)
            elif term in self.index:
                coeffs[self.index[term]] += _rational(c)
            else:
                return None
        return tuple(coeffs)

    def expr(self, lin: Lin) -> Any:
        terms = [sympy.Rational(c.numerator, c.denominator) * s
                 for c, s in zip(lin, self.variables, strict=False) if c]
        return sympy.Add(*terms, sympy.Rational(lin[-1].numerator, lin[-1].denominator))

    def bare(self, lin: Lin, rel: Rel) -> Constraint:
        """``constraint(lin, rel)`` without its display form, for LP queries only."""
        lin = _scaled(lin)
        if rel == "==" and next((c for c in lin if c), ZERO) < 0:
            lin = tuple(-c for c in lin)
        return Constraint(lin, rel, None)

    def constraint(self, lin: Lin, rel: Rel, shown_expr: Any = None) -> Constraint:
        lin = _scaled(lin)
        if rel == "==" and next((c for c in lin if c), ZERO) < 0:
            lin = tuple(-c for c in lin)
        expr = self.expr(lin) if shown_expr is None else shown_expr
        return Constraint(lin, rel, expr)

    # -- exact LP ----------------------------------------------------------------

    def feasible(self, constraints: Iterable[Constraint]) -> bool:
        """Whether some point of the simplex may satisfy every constraint (strict ones strictly).

        Exact for linear constraints.  With nonlinear ones, False means proved
        empty (a certificate, see nonlinear.py); True means "not proved empty".
        """
        constraints = tuple(constraints)
        key = frozenset(c.kid for c in constraints)
        cached = self._feasible_cache.get(key)
        if cached is None:
            linear = frozenset(c.kid for c in constraints if c.lin is not None)
            canonical = self.relabelled(linear)
            cached = self._linear_cache.get(canonical)
            if cached is None:
                cached = self._linear_cache[canonical] = self._solve(
                    frozenset(_KEYS[i] for i in linear), None) is not None
            if cached and len(linear) < len(key):
                # Nonlinear constraints: the linear relaxation has points; a
                # certificate of products may still prove the region empty.
                from specexact.symbolic.nonlinear import relaxation_empty

                cached = not relaxation_empty(self, constraints)
            self._feasible_cache[key] = cached
        return cached

    def relabelled(self, key: frozenset[int]) -> frozenset[Any]:
        """``key`` (ids of linear ``(lin, rel)`` pairs) with tokens 0..V-2 relabelled canonically.

        Renaming tokens (p_i and q_i together) maps the simplex onto itself,
        so a set of constraints and its relabelling are feasible together:
        cases equal up to a relabelling share their LPs.  The relabelling
        sorts tokens by a signature of the constraints that name them (ties
        by index); whatever it picks, equal results are true relabellings of
        each other, so the cache is exact -- a poor choice only misses.  The
        last token is fixed: it is the eliminated coordinate.
        """
        h = self.vocab_size - 1
        if h < 2:
            return key
        cached = self._relabel_cache.get(key)
        if cached is not None:
            return cached
        rows = [self._row_ints(k) for k in key]
        rank = self._rank(rows)
        # Rows as tuples of ints (numerator, denominator pairs): they hash fast.
        out = []
        for pairs, inv in rows:
            new: list[tuple[int, int]] = [(0, 1)] * (2 * h)
            for i in range(h):
                new[rank[i]] = pairs[i]
                new[h + rank[i]] = pairs[h + i]
            out.append((*new, inv))
        result = self._relabel_cache[key] = frozenset(out)
        return result

    def _rank(self, rows: list[tuple[tuple[tuple[int, int], ...], tuple[int, ...]]]
              ) -> list[int]:
        """The canonical new label of each token 0..V-2 (see :meth:`relabelled`)."""
        h = self.vocab_size - 1
        signatures: list[list[tuple[int, ...]]] = [[] for _ in range(h)]
        for pairs, inv in rows:
            for i in range(h):
                a, b = pairs[i], pairs[h + i]
                if a[0] or b[0]:
                    signatures[i].append((*a, *b, *inv))
        for sig in signatures:
            sig.sort()
        order = sorted(range(h), key=lambda i: (signatures[i], i))
        rank = [0] * h
        for r, i in enumerate(order):
            rank[i] = r
        return rank

    def renaming(self, constraints: Iterable[Constraint]) -> dict[Any, Any] | None:
        """The symbol renaming (p_i -> p_rank(i), q_i -> q_rank(i)) that :meth:`relabelled`
        applies to these constraints' linear rows; None for the identity."""
        h = self.vocab_size - 1
        if h < 2:
            return None
        rank = self._rank([self._row_ints(c.kid) for c in constraints if c.lin is not None])
        if rank == list(range(h)):
            return None
        out = {}
        for i in range(h):
            out[self.p[i]] = self.p[rank[i]]
            out[self.q[i]] = self.q[rank[i]]
        return out

    def _row_ints(self, k: int) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
        """Row ``k`` as (numerator, denominator) pairs, and a label-free invariant of it
        (relation, constant, support size, coefficient sum), all ints."""
        found = self._invariants.get(k)
        if found is None:
            lin, rel = _KEYS[k]
            total = sum(lin[:-1], ZERO)
            found = self._invariants[k] = (
                tuple((c.numerator, c.denominator) for c in lin[:-1]),
                (_REL_CODE[rel], lin[-1].numerator, lin[-1].denominator,
                 sum(1 for c in lin[:-1] if c), total.numerator, total.denominator))
        return found

    def point(self, constraints: Iterable[Constraint],
              objective: Sequence[Fraction] | None = None) -> tuple[Fraction, ...] | None:
        """A point satisfying the constraints, or None.

        Without ``objective`` the point maximises the smallest slack of the
        strict constraints (capped at 1), so it lies strictly inside them;
        with one it is an optimum of ``objective`` over the closure.
        """
        return self._solve(frozenset(c.key() for c in constraints if c.lin is not None),
                           objective)

    def _solve(self, key: frozenset[tuple[Any, ...]],
               objective: Sequence[Fraction] | None) -> tuple[Fraction, ...] | None:
        n = self.n
        rows = [(lin, rel) for lin, rel in key]
        rows += [(lin, ">=") for lin in self.simplex_rows]
        if n == 0:
            ok = all(lin[-1] > 0 if rel == ">" else lin[-1] >= 0 if rel == ">=" else lin[-1] == 0
                     for lin, rel in rows)
            return () if ok else None
        self.lp_calls += 1
        return constrained_point(rows, n, objective)

    # -- points ------------------------------------------------------------------

    def split_point(self, x: Sequence[Fraction]) -> Point:
        half = self.vocab_size - 1
        p = tuple(x[:half])
        q = tuple(x[half:])
        return (*p, 1 - sum(p, ZERO)), (*q, 1 - sum(q, ZERO))

    def interior_point(self, constraints: Sequence[Constraint]) -> tuple[Fraction, ...] | None:
        """A point of the relative interior of the linear constraints (and simplex), or None.

        Inequalities that hold with equality on the whole region become
        equalities; the point maximises the smallest slack of all the others.
        """
        linear = [c for c in constraints if c.lin is not None]
        if not self.feasible(linear):
            return None
        inequalities = [*(c.lin for c in linear if c.rel != "==" and c.lin is not None),
                        *self.bounds(linear)]
        rows = [c for c in linear if c.rel == "=="]
        for lin in inequalities:
            strict = Constraint(lin, ">", None)
            rows.append(strict if self.feasible((*linear, strict))
                        else Constraint(lin, "==", None))
        return self._solve(frozenset(c.key() for c in rows), None)

    def bounds(self, linear: Sequence[Constraint]) -> list[Lin]:
        """The rows ``x_i >= 0`` and the simplex rows that bound the ``linear`` constraints'
        region (here: all of them)."""
        n = self.n
        unit = [tuple(Fraction(int(i == j)) for j in range(n + 1)) for i in range(n)]
        return [*unit, *self.simplex_rows]

    def implicit_equalities(self, region: Sequence[Constraint]) -> list[Constraint]:
        """The inequalities (the bounds of :meth:`bounds` included) that hold with equality
        on all of ``region``, as equalities."""
        linear = [c for c in region if c.lin is not None]
        inequalities = [c.lin for c in linear if c.rel == ">=" and c.lin is not None]
        return [self.constraint(lin, "==") for lin in [*self.bounds(linear), *inequalities]
                if not self.feasible((*region, self.constraint(lin, ">")))]

    def random_points(self, constraints: Sequence[Constraint], count: int,
                      rng: random.Random) -> list[tuple[Fraction, ...]]:
        """Rational points of the relative interior of the linear relaxation.

        Each is a random convex combination of an interior centre (weight >=
        1/10) and a few random vertices of the closure; nonlinear constraints are then
        tested exactly by the caller (``contains``).
        """
        centre = self.interior_point(constraints)
        if centre is None:
            return []
        closure = frozenset((c.lin, ">=" if c.rel == ">" else c.rel)
                            for c in constraints if c.lin is not None)
        vertices = []
        for _ in range(min(count, 8)):
            objective = [Fraction(rng.randint(-9, 9)) for _ in range(self.n)]
            vertex = self._solve(closure, objective)
            vertices.append(centre if vertex is None else vertex)
        points = []
        for _ in range(count):
            chosen = rng.sample(vertices, min(len(vertices), 3))
            weights = [Fraction(rng.randint(1, 9)) for _ in chosen]
            lam = Fraction(rng.randint(1, 9), 10)
            total = sum(weights, ZERO)
            points.append(tuple(
                lam * centre[i] + (1 - lam) * sum((w * v[i] for w, v in zip(weights, chosen,
                                                                             strict=True)),
                                                  ZERO) / total
                for i in range(self.n)))
        return points

    def near_boundary_points(self, constraints: Sequence[Constraint],
                             rng: random.Random) -> list[tuple[Fraction, ...]]:
        """Rational points pulled from vertices and edge midpoints towards the centre.

        A nonlinear region (``p0 * q0 > 6/25``) can be a thin sliver near the
        boundary of its linear relaxation that random interior points miss;
        a strict nonlinear inequality holding at a point of the closure also
        holds a little way towards the centre, so ``(1 - t) v + t c`` for
        small t finds it.
        """
        centre = self.interior_point(constraints)
        if centre is None:
            return []
        closure = frozenset((c.lin, ">=" if c.rel == ">" else c.rel)
                            for c in constraints if c.lin is not None)
        objectives = [[Fraction(sign * int(i == j)) for j in range(self.n)]
                      for i in range(self.n) for sign in (1, -1)]
        objectives += [[Fraction(rng.randint(-9, 9)) for _ in range(self.n)] for _ in range(8)]
        vertices = list(dict.fromkeys(v for v in (self._solve(closure, o) for o in objectives)
                                      if v is not None))
        seeds = vertices + [tuple((a + b) / 2 for a, b in zip(u, v, strict=True))
                            for i, u in enumerate(vertices) for v in vertices[i + 1:]]
        return [tuple((1 - t) * a + t * c for a, c in zip(seed, centre, strict=True))
                for t in (Fraction(1, 2), Fraction(1, 8), Fraction(1, 32), Fraction(1, 256))
                for seed in seeds]

    def equality_points(self, constraints: Sequence[Constraint], count: int,
                        rng: random.Random) -> list[tuple[Fraction, ...]]:
        """Rational points on the region's polynomial equalities, for the caller to test.

        A random point of the linear relaxation misses ``p0*q1 + q1 == p1 + q1**2``
        almost surely; solving each equality, in turn, for a coordinate it is of
        degree 1 in (the others held at the random point) lands on it.  The
        caller keeps the points ``contains`` accepts (every constraint, exactly).
        """
        equalities = [sympy.expand(self.eliminate(c.poly)) for c in constraints
                      if c.lin is None and c.rel == "=="]
        if not equalities:
            return []
        points = []
        for x in self.random_points(constraints, count, rng):
            values = dict(zip(self.variables, (_sym(v) for v in x), strict=True))
            solved: set[Any] = set()
            for poly in equalities:
                for v in sorted(poly.free_symbols - solved, key=str):
                    if sympy.degree(poly, v) != 1:
                        continue
                    others = {k: w for k, w in values.items() if k != v}
                    slope = poly.coeff(v, 1).xreplace(others)
                    if slope == 0:
                        continue
                    values[v] = -poly.coeff(v, 0).xreplace(others) / slope
                    solved.add(v)
                    break
            point = tuple(Fraction(int(sympy.numer(values[v])), int(sympy.denom(values[v])))
                          for v in self.variables)
            points.append(point)
        return points

    def simplest_point(self, constraints: Sequence[Constraint],
                       x: Sequence[Fraction]) -> tuple[Fraction, ...]:
        """A point with small denominators near ``x`` that still satisfies the constraints.

        Inside is what :meth:`contains` says, so a StepSpace (which inherits this)
        keeps every row's last entry >= 0.
        """
        for limit in (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 50, 100, 1000):
            y = tuple(c.limit_denominator(limit) for c in x)
            if self.contains(constraints, y):
                return y
        return tuple(x)

    def contains(self, constraints: Iterable[Constraint], x: Sequence[Fraction]) -> bool:
        """Whether ``x`` (eliminated coordinates) lies on the simplices and satisfies every
        constraint, exactly."""
        if any(c < 0 for c in x):
            return False
        if any(not Constraint(lin, ">=", None).holds(x) for lin in self.simplex_rows):
            return False
        return self.satisfies(constraints, x)

    def satisfies(self, constraints: Iterable[Constraint], x: Sequence[Fraction]) -> bool:
        """Whether the point ``x`` satisfies every constraint (linear or not), exactly."""
        return all(c.holds(x) for c in constraints)


def _sym(c: Fraction) -> Any:
    return sympy.Rational(c.numerator, c.denominator)


def format_relation(expr: Any, rel: str) -> str:
    """``expr rel 0`` with negative terms moved to the right: ``p0 - q0 > 0`` -> ``p0 > q0``."""
    expr = sympy.expand(expr)
    left, right = [], []
    for term in sympy.Add.make_args(expr):
        if term.could_extract_minus_sign():
            right.append(-term)
        else:
            left.append(term)
    lhs = sympy.Add(*left) if left else sympy.Integer(0)
    rhs = sympy.Add(*right) if right else sympy.Integer(0)
    return f"{sympy.sstr(lhs)} {rel} {sympy.sstr(rhs)}"


def nonlinear(what: str, expr: Any) -> UnsupportedOperation:
    return UnsupportedOperation(
        f"{what}: {sympy.sstr(expr)} is not linear in p and q; the exact LP "
        "can only decide linear conditions (and products of linear factors)")
