"""An exact two-phase simplex over Fractions (Bland's rule), for small LPs.

Why not ``sympy.solvers.simplex.linprog``: its phase 1 stops when it detects
an "oscillation" and then returns a point that violates the constraints
without noticing (sympy 1.14: ``linprog([0, 0], [[1, 0], [0, 1], [0, 1],
[0, -1], [0, -1]], [5, 1, 0, -1, 0])`` returns ``(0, [0, 1])`` although
``y <= 0`` and ``y >= 1`` contradict each other).  A wrong "feasible" only
costs time here, but a wrong "infeasible" would prune a real case, so the
prover uses this textbook implementation instead: artificial variables in
phase 1, Bland's rule (which cannot cycle), and every optimum it returns is
re-checked against the constraints exactly.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

from specexact.numbers import ONE, ZERO

__all__ = ["LPError", "backend", "constrained_point", "fraction_only", "solve_lp"]

try:  # gmpy2's mpq: the same exact rationals, 5-10x faster than Fraction on pivots.
    if os.environ.get("SPECEXACT_PURE_FRACTION"):
        raise ImportError
    from gmpy2 import mpq as _mpq  # type: ignore[import-untyped, import-not-found, unused-ignore]

    _FAST: Any = _mpq
except ImportError:  # pragma: no cover - gmpy2 is a dependency; Fraction is the fallback
    _FAST = None


@contextlib.contextmanager
def fraction_only() -> Iterator[None]:
    """Within the block, the simplex pivots on Fractions (for benchmarks and tests)."""
    global _FAST
    saved = _FAST
    _FAST = None
    try:
        yield
    finally:
        _FAST = saved


def backend() -> str:
    """The rational type the simplex computes with: ``"gmpy2.mpq"`` or ``"fractions.Fraction"``."""
    return "gmpy2.mpq" if _FAST is not None else "fractions.Fraction"


class LPError(ArithmeticError):
    """The LP is unbounded, or an internal check failed."""


def _pivot(rows: list[list[Any]], obj: list[Any], basis: list[int],
           r: int, c: int) -> None:
    row = rows[r]
    inv = 1 / row[c]
    if inv != 1:
        rows[r] = row = [v * inv for v in row]
    for i, other in enumerate(rows):
        if i != r:
            f = other[c]
            if f:
                rows[i] = [a - f * b for a, b in zip(other, row, strict=True)]
    f = obj[c]
    if f:
        obj[:] = [a - f * b for a, b in zip(obj, row, strict=True)]
    basis[r] = c


def _optimise(rows: list[list[Any]], obj: list[Any], basis: list[int],
              allowed: int) -> None:
    """Minimise: pivot until no column < ``allowed`` has a negative reduced cost."""
    while True:
        entering = next((j for j in range(allowed) if obj[j] < 0), None)
        if entering is None:
            return
        best: tuple[Any, int, int] | None = None
        for i, row in enumerate(rows):
            a = row[entering]
            if a > 0:
                key = (row[-1] / a, basis[i], i)
                if best is None or key < best:
                    best = key
        if best is None:
            msg = "the LP is unbounded"
            raise LPError(msg)
        _pivot(rows, obj, basis, best[2], entering)


def solve_lp(cost: Sequence[Fraction], a_ub: Sequence[Sequence[Fraction]],
             b_ub: Sequence[Fraction], a_eq: Sequence[Sequence[Fraction]] = (),
             b_eq: Sequence[Fraction] = (), *, pure: bool = False
             ) -> tuple[Fraction, tuple[Fraction, ...]] | None:
    """Minimise ``cost . x`` subject to ``a_ub x <= b_ub``, ``a_eq x = b_eq``, ``x >= 0``.

    Returns ``(value, x)`` (Fractions) or None when no x satisfies the
    constraints.  The pivots run on gmpy2's mpq when it is installed
    (``pure=True`` forces Fraction); the optimum is converted back to
    Fractions and checked against the original constraints with Fractions.

    >>> solve_lp([Fraction(-1)], [[Fraction(2)]], [Fraction(3)])
    (Fraction(-3, 2), (Fraction(3, 2),))
    """
    q: Any = Fraction if pure or _FAST is None else _FAST
    solved = _solve(q, cost, a_ub, b_ub, a_eq, b_eq)
    if solved is None:
        return None
    x, rows = solved
    _check(x, rows, len(a_ub))
    point = tuple(Fraction(int(v.numerator), int(v.denominator)) for v in x)
    value = sum((Fraction(c) * v for c, v in zip(cost, point, strict=True)), ZERO)
    return value, point


def _solve(Q: Any, cost: Sequence[Fraction], a_ub: Sequence[Sequence[Fraction]],
           b_ub: Sequence[Fraction], a_eq: Sequence[Sequence[Fraction]],
           b_eq: Sequence[Fraction]) -> tuple[tuple[Any, ...], list[list[Any]]] | None:
    """The optimum in the backend's type, and the constraint rows ``[*a, b]`` converted."""
    zero = Q(0)

    conv = Q  # mpq and Fraction both take an int or a Fraction exactly

    n = len(cost)
    m_ub = len(a_ub)
    width = n + m_ub  # originals, then one slack per inequality
    rows: list[list[Any]] = []
    original = [[*(conv(v) for v in coeffs), conv(rhs)]
                for coeffs, rhs in (*zip(a_ub, b_ub, strict=True), *zip(a_eq, b_eq, strict=True))]
    for i, given in enumerate(original[:m_ub]):
        row = given[:-1] + [zero] * m_ub + [given[-1]]
        row[n + i] = Q(1)
        rows.append(row)
    for row in original[m_ub:]:
        rows.append(row[:-1] + [zero] * m_ub + [row[-1]])
    # Basis: the slack of an inequality with rhs >= 0, else an artificial variable.
    artificial_rows = []
    basis: list[int] = []
    for i, row in enumerate(rows):
        if i < m_ub and row[-1] >= 0:
            basis.append(n + i)
        else:
            if row[-1] < 0:
                rows[i] = row = [-v for v in row]
            artificial_rows.append(i)
            basis.append(-1)
    n_art = len(artificial_rows)
    total = width + n_art
    for k, i in enumerate(artificial_rows):
        rows[i] = rows[i][:-1] + [zero] * n_art + [rows[i][-1]]
        rows[i][width + k] = Q(1)
        basis[i] = width + k
    for i in range(len(rows)):
        if len(rows[i]) != total + 1:
            rows[i] = rows[i][:width] + [zero] * n_art + [rows[i][-1]]
    # Phase 1: minimise the sum of the artificial variables.
    obj = [zero] * (total + 1)
    for i in artificial_rows:
        obj = [a - b for a, b in zip(obj, rows[i], strict=True)]
    for k in range(n_art):
        obj[width + k] = zero
    _optimise(rows, obj, basis, total)
    if obj[-1] != 0:  # -obj[-1] is the minimal total infeasibility
        return None
    # Drive artificial variables out of the basis; drop redundant rows.
    i = 0
    while i < len(rows):
        if basis[i] >= width:
            j = next((j for j in range(width) if rows[i][j] != 0), None)
            if j is None:
                del rows[i]
                del basis[i]
                continue
            _pivot(rows, obj, basis, i, j)
        i += 1
    # Phase 2 over the original and slack columns only.
    obj = [conv(c) for c in cost] + [zero] * (total - n) + [zero]
    for i, b in enumerate(basis):
        f = obj[b]
        if f:
            obj = [a - f * v for a, v in zip(obj, rows[i], strict=True)]
    _optimise(rows, obj, basis, width)
    x = [zero] * total
    for i, b in enumerate(basis):
        x[b] = rows[i][-1]
    return tuple(x[:n]), original


def _check(x: Sequence[Any], rows: Sequence[Sequence[Any]], m_ub: int) -> None:
    """The optimum against the original rows, exactly (inequalities first, then equalities)."""
    ok = all(v >= 0 for v in x)
    for i, row in enumerate(rows):
        if not ok:
            break
        lhs = sum((a * v for a, v in zip(row, x, strict=False)), 0)
        ok = lhs <= row[-1] if i < m_ub else lhs == row[-1]
    if not ok:  # pragma: no cover - a bug in the simplex above, never a silent answer
        msg = "internal error: the LP optimum violates its constraints"
        raise LPError(msg)


def constrained_point(rows: Sequence[tuple[Sequence[Fraction], str]], width: int,
                      objective: Sequence[Fraction] | None = None
                      ) -> tuple[Fraction, ...] | None:
    """A point ``x >= 0`` of ``width`` coordinates with ``lin . x + c rel 0`` for every
    row ``(lin + [c], rel)`` (``rel`` one of ``>``, ``>=``, ``==``), or None.

    Without ``objective``, strict rows hold strictly: one common slack
    ``s <= 1`` is maximised and must end positive.  With ``objective`` the
    point minimises it, strict rows taken as non-strict.
    """
    strict = objective is None and any(rel == ">" for _, rel in rows)
    a_ub: list[list[Fraction]] = []
    b_ub: list[Fraction] = []
    a_eq: list[list[Fraction]] = []
    b_eq: list[Fraction] = []
    for lin, rel in rows:
        coeffs = [-c for c in lin[:-1]]
        if rel == "==":
            a_eq.append([*coeffs, ZERO] if strict else coeffs)
            b_eq.append(lin[-1])
            continue
        # lin.x + c >= 0 (or > 0 with slack s)  <=>  -lin.x (+ s) <= c
        if strict:
            coeffs.append(ONE if rel == ">" else ZERO)
        a_ub.append(coeffs)
        b_ub.append(lin[-1])
    if strict:
        a_ub.append([ZERO] * width + [ONE])
        b_ub.append(ONE)
        cost = [ZERO] * width + [-ONE]
    elif objective is not None:
        cost = list(objective)
    else:
        cost = [ZERO] * width
    solved = solve_lp(cost, a_ub, b_ub, a_eq, b_eq)
    if solved is None:
        return None
    value, solution = solved
    if strict and not value < 0:
        return None
    return solution[:width]
