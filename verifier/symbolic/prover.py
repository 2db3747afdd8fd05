"""``prove(sampler, vocab_size)``: the law of a sampler over the whole simplex, case by case.

The prover keeps a stack of *cases*, each a conjunction of linear constraints
on (p, q).  For one case it enumerates every execution of the sampler with a
:class:`~specexact.exact.tree.ChoiceTree` whose weights are sympy expressions.  A
comparison the case does not settle raises NeedSplit; the case is then
replaced by its feasible sides (checked with the exact LP) and each side is
enumerated afresh.  A finished case yields a rational formula for the output
law, valid on the whole case; ``law - p`` is simplified to zero (proof) or a
rational witness point strictly inside the case is found where it is
nonzero, and the exact numeric engine confirms the bias there.

Why local constraints are sound.  A branch whose probability ``pi`` may be 0
on part of the case is explored assuming ``pi > 0`` (linearised to ``a > 0``).
At a point x of the case where some ``a_i(x) = 0`` (the first such i along
the path), the real run reaches branch i and takes it with probability 0, so
the leaf's true contribution is 0.  Before summing, each leaf is checked:
the case implies every ``a_i >= 0``, the leaf's contribution N/D has D != 0 on
the whole case and N vanishes identically on the hyperplane ``a_i = 0``.  Then
the formula is exact at every point of the case.  When a check fails, the
case is split on ``a_i`` (or on D's factor) instead.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy

from specexact.distribution import Distribution, InvalidToken
from specexact.errors import (
    InvalidArgument,
    SamplerFailure,
    Undecided,
    UnsupportedOperation,
    describe_exception,
)
from specexact.exact.engine import output_distribution
from specexact.exact.random_source import LazyToken, check_uniform_bits
from specexact.exact.tree import Budget, ChoiceTree, Chooser
from specexact.symbolic.grid import GridHazard, grid_witness
from specexact.symbolic.leaves import Leaf, check_leaf, end_path, path_signal
from specexact.symbolic.nonlinear import in_equality_ideal
from specexact.symbolic.random_source import SymbolicRandom, fraction
from specexact.symbolic.region import Constraint, Point, Space
from specexact.symbolic.result import Case, ProofResult
from specexact.symbolic.signs import Decider, NeedSplit
from specexact.symbolic.values import SymbolicUniform, SymbolicValue
from specexact.validation import check_integer

__all__ = ["prove"]

Sampler = Callable[[list[Any], list[Any], Any], Any]


class _Crash(BaseException):
    """The sampler raised inside a symbolic execution."""

    def __init__(self, error: Exception, region: tuple[Constraint, ...],
                 path: list[str]) -> None:
        super().__init__(str(error))
        self.error = error
        self.region = region
        self.path = path


@dataclass
class _Leaf(Leaf):
    law: dict[Hashable, Any]


def _outcome_law(value: Any, vocab_size: int) -> dict[Hashable, Any]:
    """The symbolic law of one returned value (lazy tokens folded in)."""
    one = sympy.Integer(1)
    if isinstance(value, LazyToken):
        return dict(value.law())
    if type(value) is int:
        return {value: one}
    if isinstance(value, (tuple, list)):
        law: dict[Hashable, Any] = {(): one}
        for item in value:
            inner = _outcome_law(item, vocab_size)
            law = {(*k, o): w * v for k, w in law.items()  # type: ignore[misc]
                   for o, v in inner.items()}
        return law
    if isinstance(value, (bool, SymbolicUniform, SymbolicValue)):
        return {InvalidToken(value): one}
    try:
        import operator
        return {operator.index(value): one}
    except Exception:
        return {InvalidToken(value): one}


class _Prover:
    def __init__(self, sampler: Sampler, vocab_size: int, budget: Budget | None,
                 max_cases: int, seed: int, first: bool = False,
                 uniform_bits: int | None = None) -> None:
        self.sampler = sampler
        self.first = first
        self.uniform_bits = uniform_bits
        #: Grid hazards of the decided cases, by (comparison, region), in order.
        self.hazards: dict[tuple[str, str], GridHazard] = {}
        self._case_hazards: list[GridHazard] = []
        self._field: Any = None
        #: Zero tests by expression, renamed canonically for the current case.
        self._zero_cache: dict[Any, bool] = {}
        self._tidy_cache: dict[Any, Any] = {}
        self._renaming: dict[Any, Any] | None = None
        self.space = Space(vocab_size)
        self.budget = budget
        self.max_cases = max_cases
        self.rng = random.Random(seed)
        self.splits = 0
        self.pruned = 0
        self.executions = 0
        #: Unbiased cases whose law the exact engine confirmed at concrete points.
        self.cross_checked = 0

    # -- enumerating one case ---------------------------------------------------------

    def enumerate_case(self, cell: tuple[Constraint, ...]) -> list[_Leaf]:
        space = self.space
        tree: ChoiceTree[Any] = ChoiceTree(self.budget, one=sympy.Integer(1))
        p_syms, q_syms = space.p, space.q

        hazards: list[GridHazard] = []

        def execute(chooser: Chooser) -> Any:
            decider = Decider(space, cell)
            rng = SymbolicRandom(chooser, decider)
            p = [SymbolicValue(s, rng) for s in p_syms]
            q = [SymbolicValue(s, rng) for s in q_syms]
            try:
                value = self.sampler(p, q, rng)
                signal = path_signal(decider)  # also when the sampler swallowed it
                if signal is not None:
                    raise signal
                hazards.extend(rng.hazards)
                return _outcome_law(value, space.vocab_size), tuple(decider.local)
            except Exception as exc:
                end_path(decider, exc)
                raise _Crash(exc, (*cell, *decider.local), chooser.describe()) from exc
            finally:
                rng.active = False

        leaves = []
        for weight, (law, local), _ in tree.explore(execute):
            leaves.append(_Leaf(weight, local, law))
        self.executions += tree.executions
        self._case_hazards = hazards
        return leaves

    # -- checking local constraints ------------------------------------------------------

    def equalities(self, constraints: Sequence[Constraint]) -> dict[Any, Any]:
        """The linear equalities solved for some coordinates: {symbol: expression}.

        Exact Gauss-Jordan elimination over Fractions (sympy.solve did the
        same, slowly); {} when there are none or they contradict each other.
        """
        rows = [list(c.lin) for c in constraints if c.rel == "==" and c.lin is not None]
        if not rows:
            return {}
        n = self.space.n
        pivots: list[tuple[int, list[Fraction]]] = []
        for row in rows:
            for pcol, prow in pivots:
                f = row[pcol]
                if f:
                    row = [a - f * b for a, b in zip(row, prow, strict=True)]
            found = next((j for j in range(n) if row[j]), None)
            if found is None:
                if row[-1]:
                    return {}  # inconsistent: the case is empty
                continue
            col = found
            inv = 1 / row[col]
            row = [a * inv for a in row]
            pivots = [(c, [a - r[col] * b for a, b in zip(r, row, strict=True)])
                      for c, r in pivots]
            pivots.append((col, row))
        variables = self.space.variables
        out = {}
        for col, row in pivots:
            # x_col + sum(row[j] x_j) + row[-1] == 0 over the free columns j.
            value = -sympy.Rational(row[-1].numerator, row[-1].denominator)
            for j in range(n):
                if j != col and row[j]:
                    value -= sympy.Rational(row[j].numerator, row[j].denominator) * variables[j]
            out[variables[col]] = value
        return out

    def reduce(self, expr: Any, substitution: dict[Any, Any]) -> Any:
        """``expr`` on the simplex (and the equalities), as one cancelled fraction.

        The arithmetic runs in sympy's field of rational functions (sparse
        polynomials, gcd-cancelled at each step), several times faster
        than ``cancel(together(...))`` on the laws' long sums; the result is
        the same rational function.
        """
        e = self._on_simplex(expr, substitution)
        field_ = self._rational_functions()
        try:
            # Terms over the same denominator are summed as polynomials first:
            # a law's many terms share few denominators, so few gcds remain.
            groups = self._by_denominator(e)
            total = field_.zero
            for d, n in groups.items():
                if n:
                    total += field_.new(n, d)
            return total.as_expr()
        except (ValueError, TypeError, sympy.PolynomialError):  # not a rational function
            return sympy.cancel(sympy.together(e))

    def _on_simplex(self, expr: Any, substitution: dict[Any, Any]) -> Any:
        """``expr`` with the eliminated coordinates (and the equalities) substituted."""
        e = self.space.eliminate(expr)
        return e.xreplace(substitution) if substitution else e

    def _rational_functions(self) -> Any:
        """sympy's field of rational functions over QQ in the space's variables."""
        if self._field is None:
            from sympy.polys.fields import field

            self._field = field(self.space.variables, sympy.QQ)[0]
        return self._field

    def _by_denominator(self, e: Any) -> dict[Any, Any]:
        """``e``'s terms, each cancelled (small gcds), summed by denominator:
        ``{denominator: numerator}`` as polynomials; raises when ``e`` is not a rational
        function.  ``q_x * (1 - p_x / q_x) * r / S`` is ``r (q_x - p_x) / S``, so the terms
        of a law share few denominators."""
        ring = self._rational_functions().ring
        groups: dict[Any, Any] = {}
        for term in sympy.Add.make_args(e):
            num, den = term.as_numer_denom()
            n, d = ring.from_expr(num).cancel(ring.from_expr(den))
            groups[d] = groups.get(d, ring.zero) + n
        return groups

    def _tidy(self, expr: Any) -> Any:
        """:func:`_tidy`, memoised: proved cases repeat the same formulas (p_k)."""
        found = self._tidy_cache.get(expr)
        if found is None:
            found = self._tidy_cache[expr] = _tidy(self.space, expr)
        return found

    def _vanishes_identically(self, expr: Any, substitution: dict[Any, Any]) -> bool:
        """Whether ``expr`` is the zero rational function on the simplex (and equalities).

        Terms are grouped by denominator and cross-multiplied: sum n_i / d_i
        is 0 iff sum n_i * prod_{j != i} d_j is the zero polynomial (each
        d_j is a nonzero polynomial).  Products only, no gcds.  False also
        when ``expr`` is not a rational function (the slow path decides then).
        """
        key = None
        if not substitution and self._renaming is not None:
            # Renaming tokens 0..V-2 maps the simplex onto itself and commutes with the
            # elimination of the last token, so a renamed expression is zero iff the
            # expression is: cases equal up to relabelling share this test (exactly).
            key = sympy.sympify(expr).xreplace(self._renaming)
        elif not substitution:
            key = sympy.sympify(expr)
        if key is not None:
            known = self._zero_cache.get(key)
            if known is not None:
                return known
        answer = self._zero_test(expr, substitution)
        if key is not None:
            self._zero_cache[key] = answer
        return answer

    def _zero_test(self, expr: Any, substitution: dict[Any, Any]) -> bool:
        e = self._on_simplex(expr, substitution)
        ring = self._rational_functions().ring
        try:
            groups = self._by_denominator(e)
        except (ValueError, TypeError, sympy.PolynomialError):
            return False
        items = [(d, n) for d, n in groups.items() if n]
        if any(not d for d, _ in items):  # pragma: no cover - a zero denominator
            return False
        total = ring.zero
        for i, (_, n) in enumerate(items):
            product = n
            for j, (d, _) in enumerate(items):
                if j != i:
                    product *= d
            total += product
        return not total

    def check_leaf(self, cell: tuple[Constraint, ...], leaf: _Leaf) -> None:
        """Raise NeedSplit unless the leaf's formula is exact on the whole case (see above)."""
        space = self.space
        contributions = [self.reduce(leaf.weight * v, {}) for v in leaf.law.values()]

        def vanishes(on_plane: tuple[Constraint, ...]) -> bool:
            return self._vanishes(contributions, on_plane) or self._vanishes(
                contributions, (*on_plane, *space.implicit_equalities(on_plane)))

        check_leaf(space, cell, leaf.local, contributions, vanishes,
                   "a denominator of the output law")

    def _vanishes(self, contributions: list[Any], region: Sequence[Constraint]) -> bool:
        """Whether every contribution's numerator is identically 0 on the region's equalities."""
        substitution = self.equalities(region)
        for contribution in contributions:
            num, _ = sympy.fraction(contribution)
            if sympy.expand(num.xreplace(substitution)) != 0:
                return False
        return True

    # -- deciding one case ------------------------------------------------------------

    def case(self, cell: tuple[Constraint, ...]) -> Case:
        leaves = self.enumerate_case(cell)
        for leaf in leaves:
            if leaf.local:
                self.check_leaf(cell, leaf)
        law: dict[Hashable, Any] = {}
        for leaf in leaves:
            for outcome, prob in leaf.law.items():
                law[outcome] = law.get(outcome, 0) + leaf.weight * prob
        space = self.space
        target = {k: space.p[k] for k in range(space.vocab_size)}
        substitution = self.equalities(cell)
        self._renaming = space.renaming(cell)
        if all(self._vanishes_identically(v - target.get(k, 0) if isinstance(k, int) else v,
                                          substitution)
               for k, v in law.items()) and all(k in law for k in target if target[k] != 0):
            # law == p on the case: the formula is p itself (no gcds on the long sums).
            formula = {k: self.reduce(target.get(k, 0) if isinstance(k, int) else 0,
                                      substitution) for k in law}
        else:
            formula = {k: self.reduce(v, substitution) for k, v in law.items()}
        bias = self._bias(formula, target, substitution)
        if bias:
            # Implicit equalities (a ">=" tight on the whole case) may cancel it.
            implicit = self.space.implicit_equalities(cell)
            if implicit:
                substitution = self.equalities((*cell, *implicit))
                bias = self._bias({k: self.reduce(v, substitution) for k, v in law.items()},
                                  target, substitution)
        if bias:
            # A bias in the ideal of the case's polynomial equalities is 0 on the case.
            bias = {k: v for k, v in bias.items()
                    if not in_equality_ideal(self.space, v, cell, substitution)}
        nice = {k: self._tidy(v) for k, v in formula.items() if v != 0}
        for hazard in self._case_hazards:
            self.hazards.setdefault((hazard.comparison, hazard.region()), hazard)
        if not bias:
            self._cross_check(cell, formula)
            return Case(cell, nice, {}, None, None, None, len(leaves))
        return self._refute(cell, nice, bias, len(leaves))

    def _bias(self, formula: dict[Hashable, Any], target: dict[int, Any],
              substitution: dict[Any, Any]) -> dict[Hashable, Any]:
        out = {}
        for k in sorted(set(formula) | set(target), key=repr):
            diff = self.reduce(formula.get(k, 0) - target.get(k, 0), substitution) \
                if isinstance(k, int) and k in target else formula[k]
            if diff != 0:
                out[k] = diff
        return out

    def _refute(self, cell: tuple[Constraint, ...], formula: dict[Hashable, Any],
                bias: dict[Hashable, Any], leaves: int) -> Case:
        space = self.space
        nonlinear = any(c.lin is None for c in cell)
        candidates = space.random_points(cell, 60 if nonlinear else 12, self.rng)
        centre = space.interior_point(cell)
        if centre is not None:
            candidates.insert(0, centre)
        shown_bias = {k: _tidy(space, v) for k, v in bias.items()}
        # Near-boundary points only if the random ones miss (a thin nonlinear sliver).
        batches: list[Callable[[], list[tuple[Fraction, ...]]]] = [lambda: candidates]
        if nonlinear:
            batches.append(lambda: space.near_boundary_points(cell, self.rng))
            batches.append(lambda: space.equality_points(cell, 32, self.rng))
        for batch in batches:
            for x in batch():
                if not space.contains(cell, x):
                    continue  # outside a nonlinear constraint
                for y in (space.simplest_point(cell, x), x):
                    point = space.split_point(y)
                    values = self._evaluate(bias, point)
                    if not any(values.values()):
                        continue
                    actual = self._confirm(point, formula)
                    return Case(cell, formula, shown_bias, point, actual, None, leaves)
        why = ("no rational point found inside it makes the bias nonzero"
               + ("; its nonlinear constraints may leave it empty, or the bias may vanish "
                  "on it without a proof here" if nonlinear else ""))
        return Case(cell, formula, shown_bias, None, None, None, leaves, why)

    def _cross_check(self, cell: tuple[Constraint, ...], formula: dict[Hashable, Any]) -> None:
        """Confirm an unbiased case's law with the exact engine at random points of it.

        Symbolic values are not Fractions: code that inspects types
        (``isinstance(p[0], Fraction)``) or otherwise behaves differently on
        them would get a formula that is not the law of the real run.  Two
        generic points per case catch such a divergence instead of proving
        the wrong program.
        """
        space = self.space
        # Two random points from eight vertices: one or two vertices alone are
        # often degenerate (p == q on the whole simplex for V = 2).
        points = [x for x in space.random_points(cell, 8, self.rng) if space.contains(cell, x)]
        if len(points) < 2 and any(c.lin is None for c in cell):
            # A nonlinear region thinner than its relaxation: first the linear
            # equalities it implies (q0 == 0 and p1*q0 >= p0*q1 force p0 == 0),
            # then points near the vertices of the relaxation.
            narrowed = (*cell, *self.space.implicit_equalities(cell))
            points += [x for x in space.random_points(narrowed, 8, self.rng)
                       if space.contains(cell, x)]
            if len(points) < 2:
                points += [x for x in space.near_boundary_points(narrowed, self.rng)
                           if space.contains(cell, x)]
            if len(points) < 2:
                points += [x for x in space.equality_points(narrowed, 16, self.rng)
                           if space.contains(cell, x)]
        for x in points[:2]:
            self._agrees_at(cell, formula, space.split_point(x))
        if points:
            self.cross_checked += 1

    def _agrees_at(self, cell: tuple[Constraint, ...], formula: dict[Hashable, Any],
                   point: Point) -> None:
        expected = Distribution({k: v for k, v in self._evaluate(formula, point).items() if v})
        try:
            actual = output_distribution(self.sampler, point[0], point[1])
        except Exception as error:
            msg = (f"the sampler ran on symbolic p and q but the exact engine at the point "
                   f"p={_show(point[0])}, q={_show(point[1])} of the case "
                   f"{' and '.join(map(str, cell)) or 'the whole simplex'} reports: "
                   f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
            raise Undecided(msg) from error
        if actual != expected:
            target = Distribution({k: v for k, v in self._evaluate(
                {k: self.space.p[k] for k in range(self.space.vocab_size)}, point).items() if v})
            biased = ("; the exact engine's law there is not p, so the sampler is biased at "
                      "that point" if actual != target else "")
            msg = (f"the symbolic law differs from the exact engine's at p={_show(point[0])}, "
                   f"q={_show(point[1])} ({expected} vs {actual}): the sampler "
                   "behaves differently on symbolic values (type checks such as "
                   f"isinstance(x, Fraction), identity tests, ...); no proof is possible{biased}")
            raise Undecided(msg)

    def _evaluate(self, formula: dict[Hashable, Any], point: Point) -> dict[Hashable, Fraction]:
        space = self.space
        values = {s: sympy.Rational(v.numerator, v.denominator)
                  for s, v in zip((*space.p, *space.q), (*point[0], *point[1]), strict=True)}
        return {k: fraction(sympy.sympify(v).xreplace(values)) for k, v in formula.items()}

    def _confirm(self, point: Point, formula: dict[Hashable, Any]) -> Distribution:
        """The numeric engine's law at ``point``; it must match the formula and differ from p."""
        actual = output_distribution(self.sampler, point[0], point[1])
        expected = Distribution({k: v for k, v in self._evaluate(formula, point).items() if v})
        if actual != expected:
            msg = (f"the symbolic law {expected} differs from the exact engine's {actual} at "
                   f"p={_show(point[0])}, q={_show(point[1])}: the sampler computes "
                   "differently on symbolic values there (float arithmetic, such as a "
                   "probability divided by a float constant, rounds when run but not "
                   "symbolically; type checks; identity tests); no proof is possible")
            raise Undecided(msg)
        return actual

    def _complement(self, cell: tuple[Constraint, ...], region: tuple[Constraint, ...]
                    ) -> list[tuple[Constraint, ...]]:
        """Cells covering ``cell`` minus ``region`` (``region`` is ``cell`` and more sides):
        for each further side, the sides before it and its negation."""
        space = self.space
        out: list[tuple[Constraint, ...]] = []
        taken = cell
        known = {c.kid for c in cell}
        for c in region[len(cell):]:
            if c.kid in known:
                continue
            if c.rel == "==":
                negations = [c.with_rel(space, ">"), c.negated(space, ">")]
            else:
                negations = [c.negated(space, ">=" if c.rel == ">" else ">")]
            out += [(*taken, side) for side in negations]
            taken = (*taken, c)
            known.add(c.kid)
        return out

    def crash_case(self, crash: _Crash) -> Case:
        space = self.space
        x = space.point(crash.region)
        if x is not None and not space.contains(crash.region, x):
            x = next((y for y in space.random_points(crash.region, 60, self.rng)
                      if space.contains(crash.region, y)), None)
        if x is None:
            msg = (f"the sampler raised {describe_exception(crash.error)} on "
                   f"symbolic p and q in the region {' and '.join(map(str, crash.region))}, "
                   "where no concrete point could be found")
            raise Undecided(msg) from crash.error
        x = space.simplest_point(crash.region, x)
        point = space.split_point(x)
        error = crash.error
        try:
            output_distribution(self.sampler, point[0], point[1])
        except SamplerFailure as failure:
            cell = tuple(c for c in crash.region)
            return Case(cell, {}, {}, point, None, str(failure).splitlines()[0], 0)
        msg = (f"the sampler raised {describe_exception(error)} on symbolic p and q "
               f"(after {'; '.join(crash.path) or 'no choices'}) but not at the concrete "
               f"point p={_show(point[0])}, q={_show(point[1])}; the symbolic engine "
               "cannot follow this code")
        raise UnsupportedOperation(msg) from error

    def _grid_cases(self, hazards: Sequence[GridHazard], bits: int) -> list[Case]:
        """Refuting cases on the K-bit grid: hazards that put mass where p has none."""
        out = []
        for hazard in hazards:
            found = grid_witness(self.space, hazard, self.sampler, bits, self.rng)
            if found is None:
                continue
            point, law, misplaced = found
            bias = {k: sympy.Rational(v.numerator, v.denominator) for k, v in misplaced.items()}
            out.append(Case(hazard.constraints, {}, bias, point, law, None, 0,
                            grid_bits=bits, grid_comparison=hazard.comparison))
            if self.first:
                break
        return out

    # -- the case stack ----------------------------------------------------------------

    def run(self) -> ProofResult:
        start = time.monotonic()
        stack: list[tuple[Constraint, ...]] = [()]
        cases: list[Case] = []
        note = None
        skipped: list[Undecided] = []
        space = self.space
        while stack:
            cell = stack.pop()
            try:
                cases.append(self.case(cell))
                if self.first and cases[-1].refutes and stack:
                    note = "stopped at the first refutation (first=True / --first)"
                    break
            except NeedSplit as split:
                self.splits += 1
                children = [(*cell, side) for side in split.sides
                            if space.feasible((*cell, side))]
                self.pruned += len(split.sides) - len(children)
                stack.extend(reversed(children))
            except _Crash as crash:
                # The crash holds on its region only (the cell and the sides its path
                # took); the rest of the cell is cases of its own.
                rest = [c for c in self._complement(cell, crash.region)
                        if space.feasible(c)]
                try:
                    cases.append(self.crash_case(crash))
                    if self.first and (stack or rest):
                        note = "stopped at the first refutation (first=True / --first)"
                        break
                except Undecided as error:
                    # A crash in a region with no concrete point (often empty: nonlinear
                    # cuts) or code the symbolic engine cannot follow there: the other
                    # cases may still refute; without a refutation this is the answer.
                    skipped.append(error)
                stack.extend(reversed(rest))
            except Undecided as error:
                if not any(c.refutes for c in cases):
                    raise
                note = f"stopped early: {error}"
                break
            if len(cases) + len(stack) > self.max_cases:
                too_many = Undecided(f"more than max_cases={self.max_cases} cases")
                if not any(c.refutes for c in cases):
                    raise too_many
                note = f"stopped early: {too_many}"
                break
        if skipped:
            if not any(c.refutes for c in cases):
                raise skipped[0]
            left = f"{len(skipped)} crashing region(s) left undecided; the first: {skipped[0]}"
            note = left if note is None else f"{note}; {left}"
        undecided = [c for c in cases if c.undecided is not None]
        if undecided and not any(c.refutes for c in cases):
            first = undecided[0]
            msg = (f"{len(undecided)} case(s) could not be decided; the first, "
                   f"{first.region()}, has the bias "
                   f"{ {k: sympy.sstr(v) for k, v in first.bias.items()} } but "
                   f"{first.undecided}")
            raise Undecided(msg)
        hazards = tuple(self.hazards.values())
        if self.uniform_bits is not None and hazards and not (self.first and note):
            cases.extend(self._grid_cases(hazards, self.uniform_bits))
        if undecided and note is None:
            note = (f"{len(undecided)} biased case(s) without a witness (their nonlinear "
                    "constraints may leave them empty)")
        return ProofResult(
            vocab_size=space.vocab_size, cases=tuple(cases), complete=note is None,
            note=note, splits=self.splits, pruned=self.pruned, lp_calls=space.lp_calls,
            executions=self.executions, seconds=time.monotonic() - start,
            cross_checked=self.cross_checked, hazards=hazards, uniform_bits=self.uniform_bits,
            p_symbols=tuple(space.p), q_symbols=tuple(space.q))


def _tidy(space: Space, expr: Any) -> Any:
    """Factor ``expr`` and write each linear factor with the fewest terms on the simplex.

    ``p0 + p1 - 1`` becomes ``-p2`` by adding a multiple of ``sum(p) - 1``.
    """
    expr = sympy.factor(expr)
    sums = (sum(space.p) - 1, sum(space.q) - 1)

    def shortest(factor: Any) -> Any:
        if space.linear(factor) is None:
            return factor
        options = [sympy.expand(factor + a * sums[0] + b * sums[1])
                   for a in (-1, 0, 1) for b in (-1, 0, 1)]
        return min(options, key=lambda e: (len(sympy.Add.make_args(e)), sympy.default_sort_key(e)))

    return expr.replace(lambda e: e.is_Add, shortest) if expr.is_Mul or expr.is_Pow \
        else shortest(expr) if expr.is_Add else expr


def _show(values: Sequence[Fraction]) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def prove(sampler: Sampler, vocab_size: int, *, budget: Budget | None = None,
          max_cases: int = 20_000, seed: int = 0, first: bool = False,
          uniform_bits: int | None = None) -> ProofResult:
    """Prove that ``sampler`` preserves p for every pair of distributions on ``vocab_size`` tokens.

    Returns a :class:`ProofResult`: ``proved`` when ``output - p`` simplifies
    to zero in every case, ``refuted`` with the cases (region, bias formula and
    a witness the exact engine confirmed) otherwise.  Raises an
    :class:`~specexact.errors.Undecided` subclass (for example
    UnsupportedOperation, naming the operation) when no verdict is possible;
    never a false proof.  ``first=True`` stops at the first confirmed
    refutation.  The proof is for a continuous uniform; comparisons that
    differ between ``<`` and ``<=`` on a grid are listed as ``hazards``, and
    ``uniform_bits=K`` refutes the rule when one of them puts mass on a token
    with p = 0 under ``rng.random()`` on the K-bit grid.

    >>> from specexact.counterexamples.samplers import textbook
    >>> prove(textbook, 2).proved
    True
    """
    check_integer(vocab_size, "vocab_size", min_value=1)
    check_integer(max_cases, "max_cases", min_value=1)
    if not callable(sampler):
        msg = f"sampler={sampler!r} must be callable as sampler(p, q, rng)"
        raise InvalidArgument(msg)
    if uniform_bits is not None:
        check_uniform_bits(uniform_bits)
    return _Prover(sampler, vocab_size, budget, max_cases, seed, first, uniform_bits).run()
