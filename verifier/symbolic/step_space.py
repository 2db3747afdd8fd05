"""The symbols of a step proof: one target row and one draft row per prefix, each on its simplex.

A :class:`StepSpace` is a :class:`~specexact.symbolic.region.Space`
whose variables are the rows a step reads: the target's row after prefix
``s`` is ``p[s]_0 .. p[s]_{V-1}``, the draft's ``q[s]_0 ..``, and each row's
last entry is eliminated (``1 - sum`` of the others), so every row lies on
its own simplex and rows at different prefixes are independent.  A proof
over this space therefore covers every pair of context-dependent models.

Rows are independent simplices, so a set of linear constraints is feasible
iff it is feasible on the rows it mentions: the exact LP is solved on those
rows only (a state reads dozens of rows; one comparison names one or two).
Rows the LP did not see are put at their simplex's centre.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import sympy

from specexact.numbers import ONE, ZERO
from specexact.symbolic.lp import constrained_point
from specexact.symbolic.region import Constraint, Lin, Rel, Space, Variables

__all__ = ["RowKey", "StepSpace", "row_symbols"]

#: ``("p", prefix)`` for the target's row after ``prefix``, ``("q", prefix)`` for the draft's.
RowKey = tuple[str, tuple[int, ...]]

_KEYS = itertools.count()


def row_symbols(key: RowKey, vocab_size: int) -> tuple[Any, ...]:
    """The sympy symbols of one row: ``p[0,1]_0 .. p[0,1]_{V-1}``."""
    model, prefix = key
    label = ",".join(str(t) for t in prefix)
    return tuple(sympy.Symbol(f"{model}[{label}]_{i}") for i in range(vocab_size))


class _Lin(tuple):  # type: ignore[type-arg]
    """A linear form that hashes once: constraint sets are hashed for every cache lookup,
    and hashing dozens of Fractions each time was most of a proof's time."""

    def __hash__(self) -> int:
        h: int | None = self.__dict__.get("h")
        if h is None:
            h = self.__dict__["h"] = tuple.__hash__(self)
        return h


class StepSpace(Space):
    """Variables for the given rows (target ``"p"`` and draft ``"q"`` rows at prefixes)."""

    def __init__(self, vocab_size: int, rows: Sequence[RowKey]) -> None:
        v = vocab_size
        self.rows: tuple[RowKey, ...] = tuple(dict.fromkeys(rows))
        self.row_index = {key: i for i, key in enumerate(self.rows)}
        self.symbols = {key: row_symbols(key, v) for key in self.rows}
        half = v - 1
        #: variable indices of each row, and its simplex row 1 - sum >= 0
        self.row_vars = [tuple(range(i * half, (i + 1) * half)) for i in range(len(self.rows))]
        n = half * len(self.rows)
        super().__init__(vocab_size, Variables(
            p=tuple(s for key in self.rows if key[0] == "p" for s in self.symbols[key]),
            q=tuple(s for key in self.rows if key[0] == "q" for s in self.symbols[key]),
            variables=tuple(s for key in self.rows for s in self.symbols[key][:-1]),
            elimination={self.symbols[key][-1]: 1 - sum(self.symbols[key][:-1])
                         for key in self.rows},
            simplex_rows=tuple(
                (*(Fraction(-1) if j in set(vars_) else ZERO for j in range(n)), ONE)
                for vars_ in self.row_vars) if half else ()),
            cache_key=("step", next(_KEYS)))
        self._group_cache: dict[frozenset[tuple[Any, ...]], bool] = {}
        #: step_source.region_empty's answers, by the constraints' ids in order.
        self.empty_cache: dict[tuple[int, ...], bool] = {}

    def relabelled(self, key: frozenset[int]) -> frozenset[Any]:
        """No relabelling: Space's canonical form assumes one target and one draft row;
        here every prefix has its own rows, so the key is its own canonical form."""
        return key

    def renaming(self, constraints: Iterable[Constraint]) -> dict[Any, Any] | None:
        return None

    def _linear(self, expr: Any) -> Lin | None:
        lin = super()._linear(expr)
        return None if lin is None else _Lin(lin)

    def constraint(self, lin: Lin, rel: Rel, shown_expr: Any = None) -> Constraint:
        c = super().constraint(lin, rel, shown_expr)
        return Constraint(_Lin(c.lin), c.rel, c.expr) if c.lin is not None else c

    def has_row(self, key: RowKey) -> bool:
        return key in self.row_index

    # -- the LP on the rows a query mentions ---------------------------------------

    def feasible(self, constraints: Iterable[Constraint]) -> bool:
        """Space.feasible, one LP per group of constraints sharing rows.

        Constraints on disjoint sets of rows are independent (each row has
        its own simplex), so the conjunction is feasible iff each group is;
        the groups recur across cases and are cached on their own.
        """
        keys = {c.key() for c in constraints if c.lin is not None}
        if len(keys) <= 1:
            return super().feasible(Constraint(lin, rel, None) for lin, rel in keys)
        whole = frozenset(keys)
        cached = self._group_cache.get(whole)
        if cached is not None:
            return cached
        groups = self._groups(keys)
        result = all(self._group_feasible(group) for group in groups)
        self._group_cache[whole] = result
        return result

    def _group_feasible(self, group: frozenset[tuple[Any, ...]]) -> bool:
        cached = self._group_cache.get(group)
        if cached is None:
            cached = self._solve(group, None) is not None
            self._group_cache[group] = cached
        return cached

    def _groups(self, keys: Iterable[tuple[Any, ...]]) -> list[frozenset[tuple[Any, ...]]]:
        parent: dict[int, int] = {}

        def find(r: int) -> int:
            while parent.setdefault(r, r) != r:
                parent[r] = parent[parent[r]]
                r = parent[r]
            return r

        owner: list[tuple[tuple[Any, ...], int | None]] = []
        for key in keys:
            rows = self.rows_of([key[0]])
            for r in rows[1:]:
                parent[find(r)] = find(rows[0])
            owner.append((key, rows[0] if rows else None))
        groups: dict[int | None, set[tuple[Any, ...]]] = {}
        for key, first in owner:
            groups.setdefault(None if first is None else find(first), set()).add(key)
        return [frozenset(g) for g in groups.values()]

    def rows_of(self, coefficient_lists: Iterable[Sequence[Fraction]]) -> list[int]:
        """The model rows (sorted) whose variables occur in any of the coefficient lists."""
        half = self.vocab_size - 1
        used: set[int] = set()
        for coeffs in coefficient_lists:
            for j, c in enumerate(coeffs[: self.n]):
                if c:
                    used.add(j // half)
        return sorted(used)

    def _solve(self, key: frozenset[tuple[Any, ...]],
               objective: Sequence[Fraction] | None) -> tuple[Fraction, ...] | None:
        rows = [(lin, rel) for lin, rel in key]
        lists: list[Sequence[Fraction]] = [lin for lin, _ in rows]
        if objective is not None:
            lists.append(objective)
        used = self.rows_of(lists) if self.n else []
        columns = [j for r in used for j in self.row_vars[r]]
        centre = Fraction(1, self.vocab_size)
        full = [centre] * self.n
        # Constant rows (no variable) decide on their own.
        for lin, rel in rows:
            if not any(lin[:-1]):
                c = lin[-1]
                if not (c > 0 if rel == ">" else c >= 0 if rel == ">=" else c == 0):
                    return None
        rows = [(lin, rel) for lin, rel in rows if any(lin[:-1])]
        if not columns:
            return tuple(full)
        expanded = [([lin[j] for j in columns] + [lin[-1]], rel) for lin, rel in rows]
        if self.vocab_size > 1:
            for r in used:
                own = set(self.row_vars[r])
                expanded.append(([-ONE if j in own else ZERO for j in columns] + [ONE], ">="))
        self.lp_calls += 1
        solution = constrained_point(expanded, len(columns), None if objective is None
                                     else [objective[j] for j in columns])
        if solution is None:
            return None
        for j, x in zip(columns, solution, strict=True):
            full[j] = x
        return tuple(full)

    # -- points ----------------------------------------------------------------------

    def rows_at(self, x: Sequence[Fraction]) -> dict[RowKey, tuple[Fraction, ...]]:
        """The full rows (last entry restored) of a point in eliminated coordinates."""
        out = {}
        for key, vars_ in zip(self.rows, self.row_vars, strict=True):
            head = tuple(x[j] for j in vars_)
            out[key] = (*head, 1 - sum(head, ZERO))
        return out

    def values(self, x: Sequence[Fraction]) -> dict[Any, Any]:
        """A sympy substitution giving every symbol (eliminated ones too) its value at x."""
        mapping = {}
        for key, row in self.rows_at(x).items():
            for s, v in zip(self.symbols[key], row, strict=True):
                mapping[s] = sympy.Rational(v.numerator, v.denominator)
        return mapping

    def satisfies(self, constraints: Iterable[Constraint], x: Sequence[Fraction]) -> bool:
        """Space.satisfies, with nonlinear constraints read in this space's row symbols."""
        mapping: dict[Any, Any] | None = None
        for c in constraints:
            if c.lin is not None:
                if not c.holds(x):
                    return False
                continue
            if mapping is None:
                mapping = {s: sympy.Rational(v.numerator, v.denominator)
                           for s, v in zip(self.variables, x, strict=True)}
            r = sympy.Rational(c.sign * sympy.sympify(c.poly).xreplace(mapping))
            if not (r > 0 if c.rel == ">" else r >= 0 if c.rel == ">=" else r == 0):
                return False
        return True

    def sample_points(self, constraints: Sequence[Constraint], count: int,
                      rng: random.Random) -> list[tuple[Fraction, ...]]:
        """Rational points in the relative interior of the constraints' linear relaxation.

        Rows the constraints mention come from convex combinations of an
        interior centre and random vertices (as ``random_points``), computed on
        those rows only; every other row is an independent random interior
        point of its simplex.  Nonlinear constraints are the caller's to test.
        """
        linear = [c for c in constraints if c.lin is not None]
        centre = self.interior_point(linear)
        if centre is None:
            return []
        used = self.rows_of([c.lin for c in linear if c.lin is not None])
        half = self.vocab_size - 1
        closure = frozenset((c.lin, ">=" if c.rel == ">" else c.rel) for c in linear
                            if c.lin is not None)
        vertices = []
        if used:
            columns = [j for r in used for j in self.row_vars[r]]
            for _ in range(min(count, 6)):
                objective = [ZERO] * self.n
                for j in columns:
                    objective[j] = Fraction(rng.randint(-9, 9))
                if not any(objective):
                    objective[columns[0]] = ONE
                vertex = self._solve(closure, objective)
                vertices.append(centre if vertex is None else vertex)
        points = []
        used_set = set(used)
        for _ in range(count):
            x = list(centre)
            if vertices:
                chosen = rng.sample(vertices, min(len(vertices), 3))
                weights = [Fraction(rng.randint(1, 9)) for _ in chosen]
                lam = Fraction(rng.randint(1, 9), 10)
                total = sum(weights, ZERO)
                for r in used:
                    for j in self.row_vars[r]:
                        x[j] = lam * centre[j] + (1 - lam) * sum(
                            (w * v[j] for w, v in zip(weights, chosen, strict=True)),
                            ZERO) / total
            for r in range(len(self.rows)):
                if r in used_set or not half:
                    continue
                ws = [rng.randint(1, 6) for _ in range(half + 1)]
                total_w = sum(ws)
                for k, j in enumerate(self.row_vars[r]):
                    x[j] = Fraction(ws[k], total_w)
            points.append(tuple(x))
        return points

    def bounds(self, linear: Sequence[Constraint]) -> list[Lin]:
        """The rows ``x_i >= 0`` and simplex rows of the model rows ``linear`` mentions: the
        relative interior (Space.interior_point) is then sought on those rows only."""
        used = self.rows_of([c.lin for c in linear if c.lin is not None])
        columns = [j for r in used for j in self.row_vars[r]]
        unit = [tuple(Fraction(int(i == j)) for j in range(self.n + 1)) for i in columns]
        simplex = [self.simplex_rows[r] for r in used] if self.vocab_size > 1 else []
        return [*unit, *simplex]
