"""The symbolic random source: ExactRandom's lazy semantics with p and q as symbols.

Samplers receive ``p`` and ``q`` as lists of :class:`SymbolicValue` (one
sympy symbol each).  Arithmetic builds rational expressions; a comparison
asks the case's :class:`~specexact.symbolic.signs.Decider`, which answers from
the case's constraints or splits the case.  ``rng.random()`` is a lazy
uniform whose comparison with a symbolic threshold ``t`` clamps ``t`` to the
uniform's current interval: the case split decides whether ``t`` lies below,
inside or above it, and inside it the run branches with probability
``(t - lo) / (hi - lo)``.  ``rng.categorical`` and ``rng.bernoulli`` branch
with symbolic probabilities; a branch whose probability may vanish on part of
the case carries a local "positive" constraint (see prover.py for why that
is sound).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import sympy

from specexact.errors import InvalidArgument, UnsupportedOperation
from specexact.exact.random_source import LazyToken, compare_values
from specexact.exact.tree import Chooser
from specexact.symbolic.grid import GridHazard
from specexact.symbolic.region import Constraint
from specexact.symbolic.signs import NEG, POS, ZERO, Decider, factorise
from specexact.symbolic.values import SymbolicUniform, SymbolicValue, UniformState, number

__all__ = ["SymbolicRandom", "SymbolicToken", "fraction"]

_NONNEG = frozenset((ZERO, POS))


class SymbolicToken(LazyToken):
    """A categorical draw with symbolic weights; inspecting it branches like LazyToken."""

    __slots__ = ()

    def __init__(self, rng: SymbolicRandom, draw: int, weights: tuple[Any, ...],
                 candidates: tuple[int, ...]) -> None:
        super().__init__(rng, draw, weights,  # type: ignore[arg-type]
                         sum(weights, sympy.Integer(0)))
        self.candidates = candidates
        if len(candidates) == 1:
            self._value = candidates[0]

    def law(self) -> list[tuple[int, Any]]:
        """The symbolic conditional law of the token given what was inspected so far."""
        if self._value is not None:
            return [(self._value, sympy.Integer(1))]
        ids = self.candidates or ()
        total = sum((self.weights[i] for i in ids), sympy.Integer(0))
        return [(i, self.weights[i] / total) for i in ids]


class SymbolicRandom:
    """The random source of one symbolic execution inside one case."""

    def __init__(self, chooser: Chooser, decider: Decider) -> None:
        self.chooser = chooser
        self.decider = decider
        self._uniforms = 0
        self._draws = 0
        self.active = True
        #: Comparisons whose answer on a uniform grid differs from the continuous one.
        self.hazards: list[GridHazard] = []

    # -- the sampler-facing API ---------------------------------------------------

    def random(self) -> SymbolicUniform:
        """A uniform on [0, 1), lazily: compare it with (symbolic) numbers to branch."""
        self._check_active()
        self.tick()
        self._uniforms += 1
        return SymbolicUniform(self, UniformState(self._uniforms), sympy.Integer(1),
                               sympy.Integer(0))

    def categorical(self, weights: Sequence[Any]) -> SymbolicToken:
        """Index i with probability weights[i] / sum(weights), lazily."""
        self._check_active()
        self.tick()
        self._draws += 1
        where = f"categorical draw #{self._draws}"
        if hasattr(weights, "tolist") and not isinstance(weights, (list, tuple)):
            weights = weights.tolist()
        try:
            ws = tuple(self.expression(w, f"{where}: weights[{i}]")
                       for i, w in enumerate(weights))
        except TypeError:
            msg = f"{where}: weights must be a sequence of numbers, got {type(weights).__name__}"
            raise InvalidArgument(msg) from None
        d = self.decider
        for i, w in enumerate(ws):
            if not d.decide(w, _NONNEG, f"{where}: weights[{i}] >= 0"):
                msg = f"{where}: weights[{i}]={w} is negative; weights must be >= 0"
                raise InvalidArgument(msg)
        total = sum(ws, sympy.Integer(0))
        if not d.decide(total, frozenset((POS,)), f"{where}: sum of weights > 0"):
            msg = (f"{where}: weights sum to 0; categorical needs nonnegative weights "
                   f"with a positive sum (got {len(ws)} weights, all zero)")
            raise InvalidArgument(msg)
        candidates = tuple(i for i, w in enumerate(ws)
                           if d.sign_set(w, f"{where}: weights[{i}]") != {ZERO})
        return SymbolicToken(self, self._draws, ws, candidates)

    def bernoulli(self, prob: Any) -> bool:
        """True with probability ``prob``."""
        self._check_active()
        self.tick()
        f = self.expression(prob, "bernoulli prob")
        d = self.decider
        if not (d.decide(f, _NONNEG, "bernoulli prob >= 0")
                and d.decide(1 - f, _NONNEG, "bernoulli prob <= 1")):
            msg = f"bernoulli: prob={f} must lie in [0, 1]"
            raise InvalidArgument(msg)
        return bool(self._branch(("bernoulli", f), [(True, f), (False, 1 - f)],
                                 "bernoulli(prob)", [f, 1 - f]))

    # -- used by the symbolic values ------------------------------------------------

    def expression(self, value: Any, what: str) -> Any:
        if isinstance(value, SymbolicValue):
            return value.expr
        if isinstance(value, LazyToken):
            return sympy.Integer(value.value())
        if isinstance(value, SymbolicUniform):
            raise self.unsupported(f"{what}: a uniform used as a probability")
        converted = number(value)
        if converted is None:
            msg = f"{what}={value!r} is not a number"
            raise TypeError(msg)
        return converted

    def tick(self) -> None:
        self._check_active()
        self.chooser.tick()

    def _check_active(self) -> None:
        if not self.active:
            raise UnsupportedOperation(
                "a lazy random value was used after the run that drew it had returned; "
                "keep random values inside the sampler call")

    def unsupported(self, what: str) -> UnsupportedOperation:
        error = UnsupportedOperation(f"unsupported operation in a symbolic proof: {what}")
        self.chooser.record_error(error)
        return error

    def _branch(self, signature: Any, alternatives: list[tuple[Any, Any]], description: str,
                numerators: list[Any]) -> Any:
        """Choose among alternatives whose probability may vanish; record local constraints."""
        d = self.decider
        live = []
        for (label, prob), numerator in zip(alternatives, numerators, strict=True):
            extra = d.positivity(numerator, description)
            if extra is not None:
                live.append((label, prob, extra))
        if len(live) == 1:
            return live[0][0]
        if not live:  # pragma: no cover - probabilities summing to 1 cannot all vanish
            msg = f"internal error: every alternative of {description} has probability 0"
            raise UnsupportedOperation(msg)
        label = self.chooser.choose(signature, lambda: [(lb, pr) for lb, pr, _ in live],
                                    description)
        for lb, _, extra in live:
            if lb == label:
                d.local.extend(extra)
        return label

    def compare_uniform(self, state: UniformState, op: str, t: Any) -> bool:
        name = f"u{state.index}"
        if op in ("==", "!="):
            # A continuous uniform hits a single point with probability 0; a grid may not.
            self._hazard(f"{name} {op} {sympy.sstr(t)}", t, None)
            return op == "!="
        truth_below = op in ("<", "<=")
        lo, hi = state.lo, state.hi
        d = self.decider
        # Where the threshold can sit on an end of the interval that belongs to it,
        # '<' and '<=' (or '>' and '>=') differ on a grid: the point has mass 2^-K.
        if state.lo_closed and op in ("<=", ">"):
            self._hazard(f"{name} {op} {sympy.sstr(t)}", t - lo, sympy.sstr(lo))
        if state.hi_closed and op in ("<", ">="):
            self._hazard(f"{name} {op} {sympy.sstr(t)}", t - hi, sympy.sstr(hi))
        below_empty = frozenset((NEG, ZERO))
        s1 = d.sign_set(t - lo, f"the threshold of {name} {op} t")
        if s1 <= below_empty or (NEG in s1 and d.decide(t - lo, below_empty, name)):
            return not truth_below
        above_empty = frozenset((ZERO, POS))
        s2 = d.sign_set(t - hi, f"the threshold of {name} {op} t")
        if s2 <= above_empty or (POS in s2 and d.decide(t - hi, above_empty, name)):
            return truth_below
        width = hi - lo
        took_below = self._branch(
            ("u", state.index, op, t),
            [(True, (t - lo) / width), (False, (hi - t) / width)],
            f"{name} {op} t", [t - lo, hi - t])
        # The split point t belongs to the lower part iff the test is '<=' or '>'.
        if took_below:
            state.hi = t
            state.hi_closed = op in ("<=", ">")
        else:
            state.lo = t
            state.lo_closed = op in ("<", ">=")
        return truth_below if took_below else not truth_below

    def _hazard(self, comparison: str, gap: Any, boundary: str | None) -> None:
        """Record a comparison whose grid answer differs where ``gap == 0`` (None: anywhere)."""
        d = self.decider
        where: tuple[Constraint, ...] = ()
        if boundary is not None:
            if ZERO not in d.sign_set(gap, f"the threshold of {comparison}"):
                return
            sign, num, _ = factorise(d.space, gap, f"the threshold of {comparison}")
            if sign != ZERO:
                zeros = [f.constraint(d.space, "==") for f in num
                         if ZERO in d.factor_signs(f)]
                if not zeros:  # pragma: no cover - ZERO in the sign set needs a zero factor
                    return
                where = (zeros[0],)
        self.hazards.append(GridHazard(comparison, boundary, (*d.cell, *d.local, *where)))

    def fix_token(self, token: LazyToken) -> int:
        self.tick()
        ids = token.candidates or ()
        if len(ids) == 1:
            return ids[0]
        ws = token.weights
        total = sum((ws[i] for i in ids), sympy.Integer(0))
        value: int = self._branch(
            ("token", token.draw, ids), [(i, ws[i] / total) for i in ids],
            f"token of categorical draw #{token.draw}", [ws[i] for i in ids])
        token.narrow((value,))
        return value

    def split_token(self, token: LazyToken, op: str, other: int) -> bool:
        self.tick()
        ids = token.candidates or ()
        yes = tuple(i for i in ids if compare_values(op, i, other))
        no = tuple(i for i in ids if i not in yes)
        if not no:
            return True
        if not yes:
            return False
        ws = token.weights
        total = sum((ws[i] for i in ids), sympy.Integer(0))
        w_yes = sum((ws[i] for i in yes), sympy.Integer(0))
        w_no = sum((ws[i] for i in no), sympy.Integer(0))
        truth: bool = self._branch(
            ("split", token.draw, op, other), [(True, w_yes / total), (False, w_no / total)],
            f"token #{token.draw} {op} {other}", [w_yes, w_no])
        token.narrow(yes if truth else no)
        return truth


def fraction(x: Any) -> Fraction:
    r = sympy.Rational(x)
    return Fraction(int(r.p), int(r.q))
