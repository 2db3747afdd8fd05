"""Proving a region with nonlinear constraints empty: products of constraints and an exact LP.

A case's constraints ``g_i >= 0`` (or ``> 0``), ``e_j == 0`` are linear in
(p, q) or polynomial (the prover's nonlinear cuts).  The linear LP ignores
the polynomial ones, so a case it calls feasible may still be empty.  This
module looks for a *certificate of emptiness* (a Handelman / RLT step):

    sum_k lambda_k * h_k  +  sum_j mu_j(x) * e_j  ==  -c      (as polynomials)

where each ``h_k`` is a product of the region's nonnegative constraints
(the simplex bounds ``x_i >= 0`` and ``1 - sum >= 0`` included) of degree at
most D, ``lambda_k >= 0``, each ``mu_j`` is any polynomial of degree at most
``D - deg(e_j)``, and either ``c > 0`` or some ``lambda_k > 0`` multiplies a
product of strict constraints.  At a point of the region the left side is
``>= 0`` (``> 0`` in the second case) while the right side is ``-c <= 0``: no
point exists.  Finding the multipliers is one exact LP whose unknowns are
lambda and mu, one equality per monomial; the certificate it returns is then
checked again with exact polynomial arithmetic before it is believed.  No
certificate means "not proved empty", never "nonempty".
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import sympy

from specexact.numbers import ZERO
from specexact.symbolic.lp import solve_lp

if TYPE_CHECKING:
    from specexact.symbolic.region import Constraint, Space

__all__ = ["Poly", "certificate", "in_equality_ideal", "local_relaxation_empty",
           "relaxation_empty"]

Monomial = tuple[int, ...]
Poly = dict[Monomial, Fraction]

_POLY_CACHE: dict[tuple[int, Any], Poly] = {}
#: Products of more factors than this are not tried (the LP grows as |G|^D).
MAX_DEGREE = 3


def _lin_poly(lin: Sequence[Fraction]) -> Poly:
    n = len(lin) - 1
    out: Poly = {}
    for i in range(n):
        if lin[i]:
            out[tuple(int(i == j) for j in range(n))] = Fraction(lin[i])
    if lin[-1]:
        out[(0,) * n] = Fraction(lin[-1])
    return out


def _sym_poly(space: Space, expr: Any) -> Poly:
    key = (space.n, expr)
    cached = _POLY_CACHE.get(key)
    if cached is None:
        poly = sympy.Poly(sympy.expand(space.eliminate(expr)), *space.variables)
        cached = {}
        for exps, c in poly.terms():
            r = sympy.Rational(c)
            cached[tuple(int(e) for e in exps)] = Fraction(int(r.p), int(r.q))
        _POLY_CACHE[key] = cached
    return cached


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(x + y for x, y in zip(ma, mb, strict=True))
            v = out.get(m, ZERO) + ca * cb
            if v:
                out[m] = v
            else:
                out.pop(m, None)
    return out


def _degree(a: Poly) -> int:
    return max((sum(m) for m in a), default=0)


def _scale(a: Poly, c: Fraction) -> Poly:
    return {m: v * c for m, v in a.items()} if c else {}


def _add(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for m, v in b.items():
        w = out.get(m, ZERO) + v
        if w:
            out[m] = w
        else:
            out.pop(m, None)
    return out


def _monomials(n: int, degree: int) -> list[Monomial]:
    out = []
    for d in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(n), d):
            m = [0] * n
            for i in combo:
                m[i] += 1
            out.append(tuple(m))
    return out


def _constraint_poly(space: Space, c: Constraint) -> Poly:
    """``c``'s left side as a polynomial in the eliminated coordinates (``lhs rel 0``)."""
    if c.lin is not None:
        return _lin_poly(c.lin)
    poly = _sym_poly(space, c.poly)
    return _scale(poly, Fraction(c.sign))


def _generators(space: Space, constraints: Iterable[Constraint]
                ) -> tuple[list[tuple[Poly, bool]], list[Poly]]:
    """The region's nonnegative polynomials (with strictness) and its equalities."""
    n = space.n
    nonneg: dict[tuple[tuple[Monomial, Fraction], ...], tuple[Poly, bool]] = {}

    def add(poly: Poly, strict: bool) -> None:
        key = tuple(sorted(poly.items()))
        old = nonneg.get(key)
        nonneg[key] = (poly, strict or (old is not None and old[1]))

    for i in range(n):
        add({tuple(int(i == j) for j in range(n)): Fraction(1)}, False)
    for lin in space.simplex_rows:
        add(_lin_poly(lin), False)
    equalities: list[Poly] = []
    for c in constraints:
        poly = _constraint_poly(space, c)
        if not poly:
            continue
        if c.rel == "==":
            equalities.append(poly)
        else:
            add(poly, c.rel == ">")
    return list(nonneg.values()), equalities


def certificate(space: Space, constraints: Sequence[Constraint], degree: int | None = None
                ) -> tuple[list[tuple[Fraction, Poly, bool]], list[tuple[Poly, Poly]],
                           Fraction] | None:
    """A checked certificate that the constraints (on the simplex) have no common point.

    Returns ``(terms, multiples, c)``: ``terms`` are ``(lambda, product,
    strict)`` with ``lambda > 0``, ``multiples`` are ``(mu, equality)``; their
    sum is the constant ``-c``.  None when no certificate of products of
    degree at most ``degree`` (default: the largest constraint degree, at least 2) exists.
    """
    gens, equalities = _generators(space, constraints)
    return _certificate(space.n, gens, equalities, degree, space)


def _certificate(n: int, gens: list[tuple[Poly, bool]], equalities: list[Poly],
                 degree: int | None, space: Space
                 ) -> tuple[list[tuple[Fraction, Poly, bool]], list[tuple[Poly, Poly]],
                            Fraction] | None:
    """:func:`certificate` on explicit polynomials in ``n`` variables."""
    top = max((_degree(g) for g, _ in gens), default=1)
    top = max(top, max((_degree(e) for e in equalities), default=1), 2)
    d = top if degree is None else degree
    if d > MAX_DEGREE:
        return None
    linear = [(g, s) for g, s in gens if _degree(g) <= 1]
    higher = [(g, s) for g, s in gens if _degree(g) > 1]
    products: list[tuple[Poly, bool]] = []
    for k in range(1, d + 1):
        for combo in itertools.combinations_with_replacement(range(len(linear)), k):
            poly: Poly = {(0,) * n: Fraction(1)}
            strict = True
            for i in combo:
                poly = _mul(poly, linear[i][0])
                strict = strict and linear[i][1]
            products.append((poly, strict))
    for g, s in higher:
        room = d - _degree(g)
        if room < 0:
            continue
        products.append((g, s))
        for k in range(1, room + 1):
            for combo in itertools.combinations_with_replacement(range(len(linear)), k):
                poly = g
                strict = s
                for i in combo:
                    poly = _mul(poly, linear[i][0])
                    strict = strict and linear[i][1]
                products.append((poly, strict))
    multiples: list[tuple[Poly, Poly]] = []  # (monomial as a poly, equality) pairs
    for e in equalities:
        room = d - _degree(e)
        for m in _monomials(n, max(room, 0)):
            multiples.append(({m: Fraction(1)}, e))
    expanded = [_mul(m, e) for m, e in multiples]
    monomials = sorted({m for poly, _ in products for m in poly}
                       | {m for poly in expanded for m in poly})
    const = (0,) * n
    columns: list[Poly] = [poly for poly, _ in products]
    columns += expanded + [_scale(poly, Fraction(-1)) for poly in expanded]
    strict_column = [s for _, s in products] + [False] * (2 * len(expanded))
    width = len(columns)
    a_eq = [[col.get(m, ZERO) for col in columns] for m in monomials if m != const]
    b_eq = [ZERO] * len(a_eq)
    constant_row = [col.get(const, ZERO) for col in columns]
    # const(sum) <= 0, and -const(sum) + sum(strict lambdas) >= 1.
    a_ub = [constant_row,
            [v - (1 if s else 0) for v, s in zip(constant_row, strict_column, strict=True)]]
    b_ub = [ZERO, Fraction(-1)]
    space.lp_calls += 1
    solved = solve_lp([ZERO] * width, a_ub, b_ub, a_eq, b_eq)
    if solved is None:
        return None
    _, x = solved
    terms = [(x[k], products[k][0], products[k][1]) for k in range(len(products)) if x[k]]
    used: list[tuple[Poly, Poly]] = []
    base = len(products)
    for j, (mono, e) in enumerate(multiples):
        mu = x[base + j] - x[base + len(expanded) + j]
        if mu:
            used.append((_scale(mono, mu), e))
    total: Poly = {}
    for lam, poly, _ in terms:
        total = _add(total, _scale(poly, lam))
    for mu_poly, e in used:
        total = _add(total, _mul(mu_poly, e))
    c = -total.get(const, ZERO)
    if not _check(n, terms, used, c):  # pragma: no cover
        return None
    return terms, used, c


def check_certificate(space: Space, constraints: Sequence[Constraint],
                      terms: Sequence[tuple[Fraction, Poly, bool]],
                      multiples: Sequence[tuple[Poly, Poly]], c: Fraction) -> bool:
    """Re-check a certificate with exact polynomial arithmetic, independently of the LP.

    The products themselves are built from the region's constraints by
    :func:`certificate`; what is checked here is what the LP could get
    wrong: every lambda is positive, the sum is the constant ``-c`` with
    ``c >= 0``, and ``c > 0`` or some lambda multiplies a strict product.
    """
    return _check(space.n, terms, multiples, c)


def _check(n: int, terms: Sequence[tuple[Fraction, Poly, bool]],
           multiples: Sequence[tuple[Poly, Poly]], c: Fraction) -> bool:
    total: Poly = {}
    for lam, poly, _ in terms:
        if lam <= 0:
            return False
        total = _add(total, _scale(poly, lam))
    for mu_poly, e in multiples:
        total = _add(total, _mul(mu_poly, e))
    const = (0,) * n
    if any(m != const for m in total):
        return False
    if total.get(const, ZERO) != -c or c < 0:
        return False
    return c > 0 or any(strict for _, _, strict in terms)


def relaxation_empty(space: Space, constraints: Sequence[Constraint]) -> bool:
    """Whether a certificate proves that no point of the simplex satisfies every constraint.

    False means "not proved empty" (the region may or may not have points).
    """
    return certificate(space, constraints) is not None


#: local_relaxation_empty skips a group of rows with more variables than this (its LP
#: grows as the square of the constraints on them).
MAX_LOCAL_VARIABLES = 12


def local_relaxation_empty(space: Space, constraints: Sequence[Constraint]) -> bool:
    """:func:`relaxation_empty` with products of degree 2, on the constraints that name
    only the variables of the rows one nonlinear constraint touches, for each in turn.

    A certificate for a subset of the constraints proves the whole region
    empty, so this is as sound; in a space with many rows (a step proof
    has two per prefix) it keeps each LP to the few rows that matter.
    """
    gens, equalities = _generators(space, constraints)
    rows = [frozenset(j for j in range(space.n) if lin[j]) for lin in space.simplex_rows]
    tried: set[frozenset[int]] = set()
    for poly in [g for g, _ in gens] + equalities:
        if _degree(poly) != 2:
            continue
        touched = {j for m in poly for j, e in enumerate(m) if e}
        for members in rows:
            if members & touched:
                touched |= members
        group = frozenset(touched)
        if group in tried or len(group) > MAX_LOCAL_VARIABLES:
            continue
        tried.add(group)
        order = sorted(group)

        def inside(p: Poly, group: frozenset[int] = group) -> bool:
            return all(j in group for m in p for j, e in enumerate(m) if e)

        def squeeze(p: Poly, order: list[int] = order) -> Poly:
            return {tuple(m[j] for j in order): v for m, v in p.items()}

        kept = [(squeeze(g), strict) for g, strict in gens if _degree(g) <= 2 and inside(g)]
        kept_eqs = [squeeze(e) for e in equalities if _degree(e) <= 2 and inside(e)]
        if _certificate(len(order), kept, kept_eqs, 2, space) is not None:
            return True
    return False


def in_equality_ideal(space: Space, expr: Any, constraints: Sequence[Constraint],
                      substitution: dict[Any, Any]) -> bool:
    """Whether ``expr``'s numerator lies in the ideal of the polynomial equalities
    among ``constraints`` (after ``substitution``, the linear ones solved): then
    ``expr`` vanishes wherever they hold.

    Membership is decided exactly, by reduction modulo a Groebner basis over
    the rationals.  False when there is no polynomial equality.
    """
    polys = []
    for c in constraints:
        if c.lin is None and c.rel == "==":
            poly = sympy.expand(space.eliminate(c.poly).xreplace(substitution))
            if poly != 0:
                polys.append(poly)
    if not polys:
        return False
    num, _ = sympy.fraction(sympy.together(expr))
    num = sympy.expand(space.eliminate(num).xreplace(substitution))
    if num == 0:
        return True
    gens = sorted(set().union(num.free_symbols, *(e.free_symbols for e in polys)), key=str)
    if not gens:
        return False
    basis = sympy.groebner(polys, *gens, order="grevlex", domain="QQ")
    _, remainder = basis.reduce(num)
    return bool(remainder == 0)
