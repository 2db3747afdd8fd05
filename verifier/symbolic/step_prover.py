"""``prove_step(step, vocab_size, horizon)``: a decoding step's joint law, for every pair of models.

Every row the step reads -- the target's and the draft's after each prefix
-- is its own symbolic distribution (step_space.py), so a proof covers every
pair of context-dependent models.

Why states can be proved one at a time.  Decoding from a state (a prefix
``s``) runs the step once, which emits ``y`` (at least one token), then goes
on from ``s + y``.  Write ``C_s(y)`` for the step's law of ``y`` cut to the
``m = horizon - len(s)`` tokens still needed and ``T(w | s)`` for the
target's law of the continuation ``w`` after ``s`` (a product of target
rows).  If decoding from every longer state gives the target's law, the law
of the next ``m`` tokens from ``s`` is
``sum_k C_s(z[:k]) T(z[k:] | s + z[:k])`` for each ``z`` of length ``m``.
So if that sum equals ``T(z | s)`` for every state ``s`` of length below the
horizon and every ``z`` -- an identity in the rows that involves one state's
step only -- then, by induction from the longest states down, decoding from
the empty prefix gives the target's joint law: the proof.  States are
checked longest first, so the first failing state's bias is the decode's
own bias from that state; it is confirmed by the exact numeric engine,
decoding from the empty prefix, before anything is reported.

One state's step law is enumerated as in prover.py (cases split by the
exact LP, lazy uniforms and tokens, local "positive probability"
constraints checked at each leaf), except that a comparison the case does
not settle branches the execution into regions (step_source.py) instead of
splitting the whole case: a chain step compares the rows after each draft,
and a global split would multiply the cases by every row.  For each ``z``
the contributions are summed over a refinement of the regions they name.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy

from specexact.distribution import Distribution
from specexact.errors import (
    InvalidArgument,
    SamplerFailure,
    Undecided,
    UnsupportedOperation,
    describe_exception,
)
from specexact.exact.random_source import LazyToken
from specexact.exact.tree import Budget, ChoiceTree, Chooser
from specexact.steps.decode import decode_distribution, step_law, target_distribution
from specexact.steps.models import TableModel
from specexact.symbolic.leaves import Leaf, check_leaf, end_path, path_signal
from specexact.symbolic.nonlinear import in_equality_ideal
from specexact.symbolic.random_source import SymbolicRandom, fraction
from specexact.symbolic.region import Constraint
from specexact.symbolic.signs import NeedSplit, poly_signs
from specexact.symbolic.step_result import StepProofResult, StepRefutation
from specexact.symbolic.step_source import (
    EmptyRegion,
    LocalDecider,
    MissingRow,
    SymbolicModel,
    nonlinear_possible,
    possible,
    region_empty,
)
from specexact.symbolic.step_space import RowKey, StepSpace
from specexact.validation import check_integer, check_type

__all__ = ["prove_step"]

Prefix = tuple[int, ...]
Step = Callable[[Any, Any, Prefix, Any], Any]

_ONE = sympy.Integer(1)
#: Names of the stateful-model interface: a step using them cannot be proved on row models.
_CACHE_METHODS = frozenset({"cache", "next_distribution", "append", "extend", "truncate",
                            "rollback", "reset"})
#: Rows one state may allocate before the proof gives up (a step reading ever deeper).
_MAX_ROWS = 4000
#: Random model pairs the exact engine decodes before the proof, looking for a witness.
_NUMERIC_TRIES = 48


class _BadOutput(Exception):
    pass


@dataclass
class _Leaf(Leaf):
    side_positions: tuple[int, ...]
    law: dict[Prefix, Any]
    #: What the step raised on this path (then ``law`` is empty).
    crash: Exception | None = None
    #: The path's region is certainly empty (then ``law`` is empty and means nothing).
    empty: bool = False
    #: The choices of the path (alternative indices), the path's weight after each, and
    #: for each local constraint the number of choices made before it (see _merge).
    path: tuple[int, ...] = ()
    weights: tuple[Any, ...] = ()
    depths: tuple[int, ...] = ()

    @property
    def sides(self) -> tuple[Constraint, ...]:
        return tuple(self.local[i] for i in self.side_positions)


@dataclass
class _Failure:
    """A region of one state where the decode's law differs from the target's."""

    prefix: Prefix
    region: tuple[Constraint, ...]
    sequence: Prefix
    bias: Any
    point: tuple[Fraction, ...] | None
    space: StepSpace
    crash: Exception | None = None


@dataclass
class _Counts:
    cases: int = 0
    regions: int = 0
    executions: int = 0
    lp_calls: int = 0
    cross_checks: int = 0
    states: int = 0
    failures: list[_Failure] = field(default_factory=list)


def _law_of_output(out: Any, prefix: Prefix, vocab_size: int, keep: int) -> dict[Prefix, Any]:
    """The symbolic law of the tokens a step returned, cut to ``keep`` tokens."""
    if isinstance(out, list):
        out = tuple(out)
    if not isinstance(out, tuple) or not out:
        why = "an empty tuple" if out == () else f"{out!r}, not a non-empty tuple of tokens"
        msg = f"the step at prefix {prefix} returned {why}"
        raise _BadOutput(msg)
    items: list[Any] = []
    for token in out:
        if type(token) is int:
            value = token
        elif isinstance(token, LazyToken):
            ids = token.possible_ids() if not token.is_fixed else (token.value(),)
            if max(ids) >= vocab_size:
                msg = (f"the step at prefix {prefix} can emit id {max(ids)}, outside "
                       f"0..{vocab_size - 1}")
                raise _BadOutput(msg)
            items.append(token if not token.is_fixed else token.value())
            continue
        else:
            msg = (f"the step at prefix {prefix} returned {out!r}, which holds "
                   f"{type(token).__name__} {token!r}, not a token id")
            raise _BadOutput(msg)
        if not 0 <= value < vocab_size:
            msg = f"the step at prefix {prefix} returned id {value}, outside 0..{vocab_size - 1}"
            raise _BadOutput(msg)
        items.append(value)
    items = items[:keep]
    # The same token object twice is one draw, not two independent ones.
    distinct = list({id(t): t for t in items if not isinstance(t, int)}.values())
    law: dict[Prefix, Any] = {}
    laws = [token.law() for token in distinct]
    for combo in itertools.product(*laws):
        values = {id(t): v for t, (v, _) in zip(distinct, combo, strict=True)}
        weight = _ONE
        for _, w in combo:
            weight = weight * w
        key = tuple(t if isinstance(t, int) else values[id(t)] for t in items)
        law[key] = law.get(key, 0) + weight
    return law


class _Reading:
    """A model that remembers the prefixes it was asked for."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.read: set[Prefix] = set()

    def __call__(self, prefix: Sequence[int]) -> Any:
        key = tuple(prefix)
        self.read.add(key)
        return self.model(key)


def _same_law(a: dict[Prefix, Any], b: dict[Prefix, Any]) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a)


def _merge(leaves: list[_Leaf], depth: int) -> list[_Leaf]:
    """The leaves, with every subtree whose leaves all give the same cut law made one leaf.

    A chain step verifies drafts past the tokens still needed: the first
    ``m`` tokens are settled, yet each later comparison splits the path into
    regions, and each region's formulas would be compared on its own.  Below
    a node of the choice tree, at every point of the node's region the paths
    taken (their regions hold there, their probabilities are positive) have
    weights summing to the node's weight: a random choice's alternatives sum
    to 1, and a region split's sides (weight 1 each) cover the node's region,
    one holding at each point.  So when every leaf below the node gives the
    same law of the cut output (as formulas), their sum at each point is the
    node's weight times that law: one leaf, with the node's weight, its
    region and its constraints (checked again as any leaf).  A crash below
    keeps the subtree.  A path whose region is certainly empty has
    probability 0 and does not count.
    """
    laws = [leaf.law for leaf in leaves if not leaf.empty]
    if len(leaves) > 1 and laws and all(leaf.crash is None for leaf in leaves) and \
            all(_same_law(laws[0], law) for law in laws[1:]):
        model = next(leaf for leaf in leaves if not leaf.empty)
        keep = sum(1 for d in model.depths if d <= depth)
        weight = model.weights[depth - 1] if depth else _ONE
        return [_Leaf(weight, model.local[:keep],
                      tuple(i for i in model.side_positions if i < keep), laws[0],
                      path=model.path[:depth], weights=model.weights[:depth],
                      depths=model.depths[:keep])]
    groups: dict[int, list[_Leaf]] = {}
    out: list[_Leaf] = []
    for leaf in leaves:
        if len(leaf.path) <= depth:
            out.append(leaf)
        else:
            groups.setdefault(leaf.path[depth], []).append(leaf)
    for group in groups.values():
        out.extend(_merge(group, depth + 1) if len(group) > 1 else group)
    return out


class _StepProver:
    def __init__(self, step: Step, vocab_size: int, horizon: int, budget: Budget | None,
                 max_cases: int, seed: int, merge: bool = True, first: bool = False,
                 search_first: bool = True) -> None:
        self.step = step
        self.merge = merge
        self.first = first
        self.search_first = search_first
        #: Models on which the exact engine shows a bias (see numeric_witness), and the
        #: current space's point of them: the proof then follows that point only.
        self.guide: tuple[TableModel, TableModel] | None = None
        self.point: tuple[Fraction, ...] | None = None
        self.sides_taken: dict[int, Constraint] = {}
        self.v = vocab_size
        self.horizon = horizon
        self.budget = budget
        self.max_cases = max_cases
        self.rng = random.Random(seed)
        self.counts = _Counts()

    # -- bookkeeping --------------------------------------------------------------------

    def _spend(self, what: str) -> None:
        if self.counts.cases + self.counts.regions > self.max_cases:
            msg = (f"the step proof needs more than max_cases={self.max_cases} cases and "
                   f"regions (stopped while {what}); no verdict")
            raise Undecided(msg)

    def target_law(self, w: Prefix, after: Prefix) -> Any:
        """T(w | after): the target's probability of the continuation, as a product of rows."""
        out = _ONE
        for j, token in enumerate(w):
            out = out * self.space.symbols[("p", after + w[:j])][token]
        return out

    # -- one state -------------------------------------------------------------------

    def state_rows(self, prefix: Prefix, depth_p: int, depth_q: int,
                   extra: set[RowKey]) -> list[RowKey]:
        rows: list[RowKey] = []
        for name, depth in (("p", depth_p), ("q", depth_q)):
            for d in range(depth + 1):
                for tail in itertools.product(range(self.v), repeat=d):
                    rows.append((name, prefix + tail))
        rows.extend(sorted(extra))
        return rows

    def prove_state(self, prefix: Prefix) -> list[_Failure]:
        m = self.horizon - len(prefix)
        depth_p, depth_q = max(m - 1, 1), max(m - 1, 1)
        extra: set[RowKey] = set()
        while True:
            rows = self.state_rows(prefix, depth_p, depth_q, extra)
            if len(rows) > _MAX_ROWS:
                msg = (f"the step at prefix {prefix} reads more than {_MAX_ROWS} rows; "
                       "no verdict")
                raise Undecided(msg)
            self.space = StepSpace(self.v, rows)
            self.point = None if self.guide is None else self.point_of(self.space, *self.guide)
            try:
                failures = self._prove_state(prefix, m)
            except MissingRow as missing:
                name, at = missing.key
                if at[:len(prefix)] == prefix:
                    depth = len(at) - len(prefix)
                    if name == "p":
                        depth_p = max(depth_p, depth)
                    else:
                        depth_q = max(depth_q, depth)
                else:
                    extra.add(missing.key)
                continue
            finally:
                self.counts.lp_calls += self.space.lp_calls
            return failures

    def _prove_state(self, prefix: Prefix, m: int) -> list[_Failure]:
        """The state's failures: one with a witness point (then it stops), or those without."""
        stack: list[tuple[Constraint, ...]] = [()]
        failures: list[_Failure] = []
        while stack:
            cell = stack.pop()
            self.counts.cases += 1
            self._spend(f"at prefix {prefix}")
            try:
                leaves = self.enumerate_cell(prefix, m, cell)
                for leaf in leaves:
                    if leaf.crash is None:
                        self.check_leaf(cell, leaf)
            except NeedSplit as split:
                self.counts.cases -= 1
                children = [(*cell, s) for s in split.sides
                            if possible(self.space, cell, s)]
                if self.point is not None:
                    here = [c for c in children if self.space.contains(c[-1:], self.point)]
                    children = here or children
                stack.extend(reversed(children))
                continue
            if self.point is not None:
                # Guided: the leaves are the paths of the point's sides; on the region
                # of all of those sides (before merging: a merged subtree's pruned
                # siblings must be excluded too) the formulas below are the step's law.
                known = {d.kid for d in cell}
                cell = (*cell, *(c for k, c in self.sides_taken.items() if k not in known))
            crashes = [leaf for leaf in leaves if leaf.crash is not None]
            found = self.compare(prefix, m, cell, [leaf for leaf in leaves if leaf.crash is None])
            if found and found[0].point is not None:
                return found
            failures.extend(found)
            for leaf in crashes:
                failure = self.crash_point(prefix, cell, leaf)
                if failure is None:
                    continue
                if failure.point is not None:
                    return [failure]
                failures.append(failure)
            if not found and not crashes:
                self.cross_check(prefix, m, cell, leaves)
        return failures

    def crash_point(self, prefix: Prefix, cell: tuple[Constraint, ...],
                    leaf: _Leaf) -> _Failure | None:
        """A point where the step's crash is reached with positive probability, if one is found."""
        space = self.space
        region = (*cell, *leaf.local)
        if region_empty(space, region):
            return None
        points = space.sample_points(region, 24, self.rng)
        if self.point is not None:
            points.insert(0, self.point)
        for x in points:
            if space.contains(region, x):
                y = x if x is self.point else space.simplest_point(region, x)
                return _Failure(prefix, region, (), None, y, space, leaf.crash)
        return _Failure(prefix, region, (), None, None, space, leaf.crash)

    def enumerate_cell(self, prefix: Prefix, m: int,
                       cell: tuple[Constraint, ...]) -> list[_Leaf]:
        space = self.space
        tree: ChoiceTree[Any] = ChoiceTree(self.budget, one=_ONE)
        step, v = self.step, self.v

        def execute(chooser: Chooser) -> Any:
            decider = LocalDecider(space, cell, chooser, self.point)
            rng = SymbolicRandom(chooser, decider)
            missing: list[RowKey] = []
            target = SymbolicModel("p", space, rng, missing)
            draft = SymbolicModel("q", space, rng, missing)
            try:
                try:
                    out = step(target, draft, prefix, rng)
                except EmptyRegion:
                    out = None
                if decider.empty:  # even if the step swallowed the signal
                    return None, tuple(decider.local), tuple(decider.side_positions), decider.depths
                if missing:
                    raise MissingRow(missing[0])
                signal = path_signal(decider)  # also when the step swallowed it
                if signal is not None:
                    raise signal
                law = _law_of_output(out, prefix, v, m)
                return law, tuple(decider.local), tuple(decider.side_positions), decider.depths
            except Exception as exc:
                if decider.empty:
                    return None, tuple(decider.local), tuple(decider.side_positions), decider.depths
                if missing:
                    raise MissingRow(missing[0]) from None
                end_path(decider, exc)
                if isinstance(exc, AttributeError) and \
                        getattr(exc, "name", None) in _CACHE_METHODS:
                    msg = (f"the step uses the stateful-model interface ({exc.name}); step "
                           "proofs hand the step stateless models model(prefix) only")
                    raise UnsupportedOperation(msg) from exc
                return exc, tuple(decider.local), tuple(decider.side_positions), decider.depths
            finally:
                rng.active = False

        leaves: list[_Leaf] = []
        for weight, (law, local, positions, depths), _ in tree.explore(execute):
            if law is None:  # a path of an empty region: probability 0
                leaf = _Leaf(weight, local, positions, {}, empty=True)
            elif isinstance(law, Exception):
                leaf = _Leaf(weight, local, positions, {}, law)
            else:
                leaf = _Leaf(weight, local, positions, law)
            leaf.path = tuple(entry[1] for entry in tree.path)
            leaf.weights = tuple(entry[2] for entry in tree.path)
            leaf.depths = depths
            leaves.append(leaf)
        self.counts.executions += tree.executions
        #: Every side the paths took, before merging (a guided region is all of them).
        self.sides_taken = {c.kid: c for leaf in leaves for c in leaf.sides}
        return _merge(leaves, 0) if self.merge else leaves

    # -- the leaf's formula holds on its whole region ---------------------------------

    def reduce(self, expr: Any, substitution: dict[Any, Any]) -> Any:
        e = self.space.eliminate(expr)
        if substitution:
            e = e.xreplace(substitution)
        return sympy.cancel(sympy.together(e))

    def equalities(self, constraints: Sequence[Constraint]) -> dict[Any, Any]:
        eqs = [self.space.expr(c.lin) for c in constraints if c.rel == "==" and c.lin is not None]
        if not eqs:
            return {}
        symbols = sorted(set().union(*(e.free_symbols for e in eqs)), key=str)
        solution = sympy.solve(eqs, symbols, dict=True)
        return solution[0] if solution else {}

    def check_leaf(self, cell: tuple[Constraint, ...], leaf: _Leaf) -> None:
        """Raise NeedSplit (of the case) unless the leaf's formula is exact on its region.

        As in prover.py: a branch explored assuming ``a > 0`` must contribute
        0 wherever ``a = 0``; and no denominator may vanish on the region.
        """
        space = self.space
        sides = leaf.sides
        positions = frozenset(leaf.side_positions)
        contributions = [self.reduce(leaf.weight * x, {}) for x in leaf.law.values()]
        check_leaf(space, cell, leaf.local, contributions,
                   lambda on_plane: self._vanishes(contributions, on_plane),
                   "a denominator of the step's law", sides=sides, skip=positions)

    def _vanishes(self, contributions: list[Any], region: Sequence[Constraint]) -> bool:
        substitution = self.equalities(region)
        for contribution in contributions:
            num, _ = sympy.fraction(contribution)
            if sympy.expand(self.space.eliminate(num).xreplace(substitution)) != 0:
                return False
        return True

    # -- comparing with the target, region by region -------------------------------------

    def terms_for(self, prefix: Prefix, m: int, leaves: list[_Leaf], z: Prefix
                  ) -> list[tuple[tuple[Constraint, ...], Any]]:
        grouped: dict[tuple[Any, ...], tuple[tuple[Constraint, ...], Any]] = {}
        for leaf in leaves:
            for y, prob in leaf.law.items():
                k = len(y)
                if y != z[:k]:
                    continue
                term = leaf.weight * prob * self.target_law(z[k:], prefix + y)
                sides = leaf.sides
                key = tuple(c.key() for c in sides)
                old = grouped.get(key)
                grouped[key] = (sides, term if old is None else old[1] + term)
        return list(grouped.values())

    def status(self, region: tuple[Constraint, ...], c: Constraint) -> str:
        """'implied', 'excluded' or 'open': what ``region`` says about ``c``."""
        space = self.space
        if c.lin is None:
            signs = poly_signs(region, c.poly)
            ok = poly_signs((c,), c.poly)
            if signs <= ok:
                return "implied"
            if not signs & ok or not nonlinear_possible(space, region, c):
                return "excluded"
            return "open"
        if not space.feasible((*region, c)):
            return "excluded"
        if c.rel == ">":
            against = [c.negated(space, ">=")]
        elif c.rel == ">=":
            against = [c.negated(space, ">")]
        else:
            against = [c.with_rel(space, ">"), c.negated(space, ">")]
        if any(space.feasible((*region, a)) for a in against):
            return "open"
        return "implied"

    def pieces(self, region: tuple[Constraint, ...], c: Constraint) -> list[Constraint]:
        space = self.space
        sides = [c.with_rel(space, ">"), c.with_rel(space, "=="), c.negated(space, ">")]
        return [s for s in sides if possible(space, region, s)]

    def compare(self, prefix: Prefix, m: int, cell: tuple[Constraint, ...],
                leaves: list[_Leaf]) -> list[_Failure]:
        """The first failure with a witness point; else every one without (or none)."""
        failures: list[_Failure] = []
        for z in itertools.product(range(self.v), repeat=m):
            terms = self.terms_for(prefix, m, leaves, z)
            target = self.target_law(z, prefix)
            self.refine(prefix, z, cell, terms, target, failures)
            if failures and failures[-1].point is not None:
                return [failures[-1]]
        return failures

    def refine(self, prefix: Prefix, z: Prefix, region: tuple[Constraint, ...],
               terms: list[tuple[tuple[Constraint, ...], Any]], target: Any,
               failures: list[_Failure]) -> None:
        live = []
        open_side: Constraint | None = None
        for sides, term in terms:
            keep = True
            for c in sides:
                state = self.status(region, c)
                if state == "excluded":
                    keep = False
                    break
                if state == "open" and open_side is None:
                    open_side = c
            if keep:
                live.append((sides, term))
        if open_side is not None:
            for piece in self.pieces(region, open_side):
                self.refine(prefix, z, (*region, piece), live, target, failures)
                if failures and failures[-1].point is not None:
                    return
            return
        if any(c.lin is None for c in region) and region_empty(self.space, region):
            return
        self.counts.regions += 1
        self._spend(f"comparing at prefix {prefix}")
        total = sum((term for _, term in live), sympy.Integer(0)) - target
        substitution = self.equalities(region)
        bias = self.reduce(total, substitution)
        if bias != 0:
            implicit = self.space.implicit_equalities(region)
            if implicit:
                substitution = self.equalities((*region, *implicit))
                bias = self.reduce(total, substitution)
        if bias != 0 and in_equality_ideal(self.space, bias, region, substitution):
            bias = 0  # in the ideal of the region's polynomial equalities: 0 wherever they hold
        if bias != 0 and self.point is not None:
            # Guided: the region and its formulas are the witness's; only its own
            # point may stand for the failure (another point of the formula's region
            # would not be the witness the exact engine confirms).
            # The witness must lie in the region (a path of probability 0 at the witness
            # may have taken a side that does not hold there): else no guided failure.
            if self.space.contains(region, self.point):
                value = fraction(sympy.sympify(bias).xreplace(self.space.values(self.point)))
                if value:
                    failures.append(_Failure(prefix, region, z, bias, self.point, self.space))
        elif bias != 0:
            failures.append(self.witness_point(prefix, z, region, bias))

    def witness_point(self, prefix: Prefix, z: Prefix, region: tuple[Constraint, ...],
                      bias: Any) -> _Failure:
        space = self.space
        candidates = space.sample_points(region, 24, self.rng)
        centre = space.interior_point(region)
        if centre is not None:
            candidates.insert(0, centre)
        for x in candidates:
            if not space.contains(region, x):
                continue
            for y in (space.simplest_point(region, x), x):
                value = fraction(sympy.sympify(bias).xreplace(space.values(y)))
                if value:
                    return _Failure(prefix, region, z, bias, y, space)
        return _Failure(prefix, region, z, bias, None, space)

    # -- the numeric engine agrees -----------------------------------------------------

    def models_at(self, space: StepSpace, x: Sequence[Fraction],
                  default: tuple[Fraction, ...]) -> tuple[TableModel, TableModel,
                                                          dict[Prefix, tuple[Fraction, ...]],
                                                          dict[Prefix, tuple[Fraction, ...]]]:
        rows = space.rows_at(x)
        p_rows = {k[1]: r for k, r in rows.items() if k[0] == "p"}
        q_rows = {k[1]: r for k, r in rows.items() if k[0] == "q"}
        return (TableModel(dict(p_rows), default=default),  # type: ignore[arg-type]
                TableModel(dict(q_rows), default=default),  # type: ignore[arg-type]
                p_rows, q_rows)

    def cross_check(self, prefix: Prefix, m: int, cell: tuple[Constraint, ...],
                    leaves: list[_Leaf]) -> None:
        """The symbolic step law of this case equals the exact engine's at random points.

        Symbolic values are not Fractions: code that inspects types or
        identities would get a formula that is not the law of the real run.
        """
        space = self.space
        points = [x for x in space.sample_points(cell, 6, self.rng) if space.contains(cell, x)]
        if self.point is not None:
            points = [self.point]  # guided: the leaves are the point's paths only
        default = tuple(Fraction(1, self.v) for _ in range(self.v))
        for x in points[:2]:
            values = space.values(x)
            expected: dict[Hashable, Fraction] = {}
            for leaf in leaves:
                if not space.contains(leaf.sides, x):
                    continue
                for y, prob in leaf.law.items():
                    w = fraction(sympy.sympify(leaf.weight * prob).xreplace(values))
                    if w:
                        expected[y] = expected.get(y, Fraction(0)) + w
            target, draft, _, _ = self.models_at(space, x, default)
            try:
                law = step_law(self.step, target, draft, prefix)
            except Exception as error:
                msg = (f"the step ran on symbolic models but the exact engine at a point of "
                       f"the case {' and '.join(map(str, cell)) or 'of all models'} at prefix "
                       f"{prefix} reports {describe_exception(error)}")
                raise Undecided(msg) from error
            actual: dict[Hashable, Fraction] = {}
            for emitted, prob in law.items():
                key: Prefix = tuple(emitted)[:m]  # type: ignore[arg-type]
                actual[key] = actual.get(key, Fraction(0)) + prob
            self.counts.cross_checks += 1
            if Distribution(actual) != Distribution(expected):
                msg = (f"the symbolic step law at prefix {prefix} differs from the exact "
                       f"engine's ({Distribution(expected)} vs {Distribution(actual)}): the "
                       "step behaves differently on symbolic values (type checks, identity "
                       "tests, ...); no proof is possible")
                raise Undecided(msg)

    def confirm(self, failure: _Failure) -> StepRefutation | None:
        """Decode from the empty prefix on models from the failure's point; None if unseen."""
        space = failure.space
        points: list[tuple[Fraction, ...]] = []
        if failure.point is not None:
            points.append(failure.point)
        extra = [x for x in space.sample_points(failure.region, 12, self.rng)
                 if space.contains(failure.region, x)]
        points += [space.simplest_point(failure.region, x) for x in extra[:6]]
        defaults = [tuple(Fraction(1, self.v) for _ in range(self.v))]
        for _ in range(2):
            ws = [self.rng.randint(1, 5) for _ in range(self.v)]
            defaults.append(tuple(Fraction(w, sum(ws)) for w in ws))
        tries: list[tuple[TableModel, TableModel, dict[Prefix, tuple[Fraction, ...]],
                          dict[Prefix, tuple[Fraction, ...]], tuple[Fraction, ...]]] = []
        if self.guide is not None:
            gt, gd = self.guide
            default = gt.default or defaults[0]
            tries.append((gt, gd, dict(gt.rows), dict(gd.rows), default))
        for x in points:
            for default in defaults:
                tries.append((*self.models_at(space, x, default), default))
        for target, draft, p_rows, q_rows, default in tries:
            crash = None
            reads_p, reads_q = _Reading(target), _Reading(draft)
            expected = target_distribution(reads_p, self.horizon)
            try:
                decoded = decode_distribution(self.step, reads_p, reads_q, self.horizon)
            except SamplerFailure as error:
                crash = str(error).splitlines()[0]
                decoded = Distribution()
            if crash is None and decoded == expected:
                continue
            if crash is None and failure.crash is not None:
                continue  # the crash found is not reached on these models: not this one
            # The witness shows the rows the decode read and those of the failure's
            # region (every other one is unused).
            shown = set(space.rows)
            p_rows = {k: r for k, r in p_rows.items() if k in reads_p.read or ("p", k) in shown}
            q_rows = {k: r for k, r in q_rows.items() if k in reads_q.read or ("q", k) in shown}
            first = first_bias = None
            if crash is None:
                for seq in sorted(set(decoded) | set(expected)):  # type: ignore[type-var]
                    diff = decoded.get(seq, Fraction(0)) - expected.get(seq, Fraction(0))
                    if diff:
                        first, first_bias = seq, diff
                        break
            return StepRefutation(
                failure.prefix, failure.region, failure.sequence,
                None if failure.bias is None else _tidy(failure.bias),
                p_rows, q_rows, default, decoded, expected, first,  # type: ignore[arg-type]
                first_bias, crash)
        return None

    # -- a witness first, when the exact engine finds one ------------------------------

    def numeric_witness(self) -> tuple[TableModel, TableModel] | None:
        """Rational models on which the exact decode differs from the target's law (or
        raises), among a fixed number drawn from the proof's seed.

        Rows have small integer weights, zeros common; a quarter of the draft
        rows equal the target's at their prefix.  Every other pair of models
        (the first included: its witness reads simplest) is context-free: one
        target row and one draft row at every prefix listed, deeper prefixes
        sharing one default row.  Any error other than the step's own failure
        ends the search (the proof then decides alone).
        """
        v = self.v
        depth = self.horizon + 1
        prefixes = [p for d in range(depth + 1) for p in itertools.product(range(v), repeat=d)]

        def row() -> tuple[Fraction, ...]:
            ws = [self.rng.choice((0, 0, 1, 1, 2, 3, 4)) for _ in range(v)]
            if not any(ws):
                ws[self.rng.randrange(v)] = 1
            return tuple(Fraction(w, sum(ws)) for w in ws)

        def pair() -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
            p = row()
            return p, (p if self.rng.random() < 1 / 4 else row())

        budget = Budget(max_executions=20_000)
        for attempt in range(_NUMERIC_TRIES):
            if attempt % 2 == 0:
                shared = pair()
                pairs = dict.fromkeys(prefixes, shared)
            else:
                pairs = {prefix: pair() for prefix in prefixes}
            p_rows = {prefix: pq[0] for prefix, pq in pairs.items()}
            q_rows = {prefix: pq[1] for prefix, pq in pairs.items()}
            default = row()
            target = TableModel(p_rows, default=default)  # type: ignore[arg-type]
            draft = TableModel(q_rows, default=default)  # type: ignore[arg-type]
            try:
                decoded = decode_distribution(self.step, target, draft, self.horizon,
                                              budget=budget)
            except SamplerFailure:
                return target, draft
            except Exception:
                return None
            if decoded != target_distribution(target, self.horizon):
                return target, draft
        return None

    def point_of(self, space: StepSpace, target: TableModel, draft: TableModel
                 ) -> tuple[Fraction, ...]:
        """The space's coordinates of two models' rows."""
        x: list[Fraction] = []
        for name, prefix in space.rows:
            row = (target if name == "p" else draft)(prefix)
            x.extend(Fraction(r) for r in row[:-1])
        return tuple(x)

    # -- all states --------------------------------------------------------------------

    def run(self) -> StepProofResult:
        start = time.monotonic()
        self.guide = self.numeric_witness() if self.search_first else None
        if self.guide is not None:
            # The step is wrong: follow the witness's regions only (a handful of
            # executions per state instead of every region of every state).
            unconfirmed: list[str] = []
            refutation = self._states(unconfirmed)
            if refutation is not None:
                refutation = dataclasses.replace(refutation, note=(
                    "found first by the exact engine on random rational models; the proof "
                    "then followed that witness: the region is the one it lies in, and the "
                    "bias formula is exact there (the step's law followed by the target's "
                    "own law)"))
                return self._result(refutation, start)
            self.guide = self.point = None  # the witness's bias was not located: prove
        unconfirmed = []
        refutation = self._states(unconfirmed)
        if refutation is not None and self.first and len(refutation.prefix) < self.horizon - 1:
            refutation = dataclasses.replace(refutation, note=(
                "stopped at the first refutation (first=True): longer states were not "
                "checked, so the bias formula is this step's law followed by the target's "
                "own law; the witness above is the exact engine's decode"))
        elif refutation is not None and unconfirmed:
            refutation = dataclasses.replace(refutation, note=(
                f"{len(unconfirmed)} region(s) of longer states were left "
                f"undecided; the bias formula is this step's followed by the "
                f"target's own law. The first: {unconfirmed[0]}"))
        if refutation is None and unconfirmed:
            msg = (f"{len(unconfirmed)} region(s) could not be proved and no counterexample "
                   f"was confirmed by the exact engine; the first: {unconfirmed[0]}")
            raise Undecided(msg)
        return self._result(refutation, start)

    def _result(self, refutation: StepRefutation | None, start: float) -> StepProofResult:
        c = self.counts
        return StepProofResult(self.v, self.horizon, refutation, c.states, c.cases, c.regions,
                               c.executions, c.lp_calls, c.cross_checks,
                               time.monotonic() - start)

    def _states(self, unconfirmed: list[str]) -> StepRefutation | None:
        """Every state, longest first (shortest first with ``first``), to the first
        confirmed refutation."""
        lengths = range(self.horizon) if self.first else range(self.horizon - 1, -1, -1)
        for length in lengths:
            for prefix in itertools.product(range(self.v), repeat=length):
                self.counts.states += 1
                refutation = self._refute(self.prove_state(prefix), unconfirmed)
                if refutation is not None:
                    return refutation
        return None

    def _refute(self, failures: list[_Failure], unconfirmed: list[str]
                ) -> StepRefutation | None:
        """The first failure the exact engine confirms; the others go to ``unconfirmed``."""
        for failure in sorted(failures, key=lambda f: f.point is None):
            refutation = None if failure.point is None else self.confirm(failure)
            if refutation is not None:
                return refutation
            unconfirmed.append(self._why(failure))
        return None

    def _why(self, failure: _Failure) -> str:
        region = " and ".join(map(str, failure.region)) or "every pair of models"
        if failure.crash is not None:
            return (f"at prefix {failure.prefix} the step raised "
                    f"{describe_exception(failure.crash)} on symbolic models in the region "
                    f"{region}, but not on the concrete models tried (the symbolic engine "
                    "cannot follow this code there)")
        where = ("no rational point of it makes the bias nonzero (nonlinear conditions may "
                 "leave it empty)" if failure.point is None else
                 "the decode from the empty prefix on the models tried shows no bias (the "
                 "state may be unreachable)")
        return (f"at prefix {failure.prefix}, in the region {region}, the continuation "
                f"{failure.sequence} has the bias {sympy.sstr(failure.bias)} but {where}")


def _tidy(expr: Any) -> Any:
    return sympy.factor(expr)


def prove_step(step: Step, vocab_size: int, horizon: int, *, budget: Budget | None = None,
               max_cases: int = 20_000, seed: int = 0,
               merge_subtrees: bool = True, first: bool = False,
               search_first: bool = True) -> StepProofResult:
    """Prove that decoding with ``step`` gives the target's joint law of ``horizon`` tokens.

    For every pair of context-dependent target and draft models on
    ``vocab_size`` tokens (each row after each prefix its own symbolic
    distribution), with a continuous uniform.  Returns a
    :class:`StepProofResult`: proved, or refuted with a
    :class:`StepRefutation` (the state and region, the bias formula of the
    first differing sequence, and rational rows per prefix on which the
    exact numeric engine confirms the bias).  Raises an
    :class:`~specexact.errors.Undecided` subclass when no verdict is
    possible (more than ``max_cases`` cases and regions, an unsupported
    operation, a stateful step); never a false proof.

    A subtree of the step's choice tree whose paths all give the same law
    of the tokens still needed (a chain verifying drafts past the horizon)
    is compared as one path; ``merge_subtrees=False`` compares every path
    on its own, for benchmarks and cross-checks: the verdict is the same.

    States are checked longest first, so a refutation's bias formula is the
    decode's own from its state.  ``first=True`` checks the shortest first
    and stops at the first confirmed refutation: a bug of the step itself
    shows at the empty prefix, before the longer states are paid for (the
    bias formula is then the step's followed by the target's own law; the
    witness is always the exact engine's decode).

    Before the proof, the exact engine decodes a fixed number of random
    rational model pairs (drawn from ``seed``); when one shows a bias, the
    proof follows that witness's regions only, so a wrong step is refuted
    in a few executions per state, with the region the witness lies in and
    the exact bias formula there.  ``search_first=False`` skips this (the
    verdict is the same; the refutation is then found region by region).

    >>> from specexact.counterexamples.chain_steps import chain
    >>> prove_step(chain, 2, 2).proved
    True
    """
    check_integer(vocab_size, "vocab_size", min_value=1)
    check_integer(horizon, "horizon", min_value=1)
    check_integer(max_cases, "max_cases", min_value=1)
    check_type(merge_subtrees, "merge_subtrees", bool, "True or False")
    check_type(first, "first", bool, "True or False")
    check_type(search_first, "search_first", bool, "True or False")
    if not callable(step):
        msg = f"step={step!r} must be callable as step(target, draft, prefix, rng)"
        raise InvalidArgument(msg)
    return _StepProver(step, vocab_size, horizon, budget, max_cases, seed,
                       merge_subtrees, first, search_first).run()
