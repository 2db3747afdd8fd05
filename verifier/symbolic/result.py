"""What a symbolic proof returns: its cases, each with region, law formula and bias.

sympy is imported inside the methods that print formulas, so that importing
this module (and ``verifier``) stays cheap.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, final

from specexact.distribution import Distribution

if TYPE_CHECKING:
    from specexact.symbolic.grid import GridHazard
    from specexact.symbolic.region import Constraint

__all__ = ["Case", "ProofOutcome", "ProofResult"]

_SHOWN_HAZARDS = 4


def _show(values: Sequence[Fraction]) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def _outcome(k: Hashable) -> str:
    return f"out[{k}]" if isinstance(k, (int, tuple)) else f"P({k!r})"


@final
@dataclass(frozen=True)
class Case:
    """One region of the simplex where the sampler's law is a single rational formula.

    ``constraints`` hold on top of the simplex (p, q >= 0, each summing to 1);
    ``law`` maps outcomes to their probability formula, ``bias`` the outcomes
    where ``law - p`` is not zero.  A refuting case carries a ``witness``
    point (p, q) strictly inside the region, with the exact engine's law there
    (``witness_law``); ``crash`` says what the sampler raised, when it did.
    """

    constraints: tuple[Constraint, ...]
    law: Mapping[Hashable, Any]
    bias: Mapping[Hashable, Any]
    witness: tuple[tuple[Fraction, ...], tuple[Fraction, ...]] | None
    witness_law: Distribution | None
    crash: str | None
    executions: int
    #: Why a biased case has no witness (its region may be empty: nonlinear cuts).
    undecided: str | None = None
    #: Set when the case refutes on a K-bit uniform grid only (``uniform_bits``): the
    #: bias is then the mass on tokens with p = 0, ``witness_law`` the grid's law.
    grid_bits: int | None = None
    grid_comparison: str | None = None

    @property
    def proved(self) -> bool:
        return not self.bias and self.crash is None

    @property
    def refutes(self) -> bool:
        """Whether this case is a confirmed counterexample."""
        return self.crash is not None or (bool(self.bias) and self.witness is not None)

    def region(self) -> str:
        return " and ".join(str(c) for c in self.constraints) or "the whole simplex"

    def contains(self, p: Sequence[Any], q: Sequence[Any]) -> bool:
        """Whether the point (p, q) lies in this case (p, q as exact numbers)."""
        half = len(p) - 1
        x = [Fraction(v) for v in (*p[:half], *q[:half])]
        return all(c.holds(x) for c in self.constraints)

    def law_at(self, p: Sequence[Any], q: Sequence[Any]) -> Distribution:
        """The law formula evaluated exactly at (p, q), a point of this case."""
        import sympy

        values = {sympy.Symbol(f"p{i}"): sympy.Rational(Fraction(v).numerator,
                                                        Fraction(v).denominator)
                  for i, v in enumerate(p)}
        values.update({sympy.Symbol(f"q{i}"): sympy.Rational(Fraction(v).numerator,
                                                             Fraction(v).denominator)
                       for i, v in enumerate(q)})
        out = {}
        for k, formula in self.law.items():
            r = sympy.Rational(sympy.sympify(formula).xreplace(values))
            out[k] = Fraction(int(r.p), int(r.q))
        return Distribution(out)

    def describe(self) -> str:
        import sympy

        lines = [f"  region: {self.region()}"]
        if self.grid_bits is not None:
            lines.append(f"  on the {self.grid_bits}-bit uniform grid (u = k/2^{self.grid_bits}, "
                         f"0 included), {self.grid_comparison} puts mass where p is 0:")
        if self.crash is not None:
            lines.append(f"  the sampler raises: {self.crash}")
        for k, formula in self.bias.items():
            lines.append(f"  bias {_outcome(k)} - p{k if isinstance(k, int) else ''} = "
                         f"{sympy.sstr(formula)}" if isinstance(k, int) else
                         f"  mass on invalid outcome {_outcome(k)} = {sympy.sstr(formula)}")
        if self.witness is not None:
            p, q = self.witness
            lines.append(f"  witness: p = {_show(p)}, q = {_show(q)}")
            if self.witness_law is not None:
                grid = "" if self.grid_bits is None else f" ({self.grid_bits}-bit grid)"
                lines.append(f"  exact engine there{grid}: {self.witness_law}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        import sympy

        return {
            "region": [str(c) for c in self.constraints],
            "law": {repr(k): sympy.sstr(v) for k, v in self.law.items()},
            "bias": {repr(k): sympy.sstr(v) for k, v in self.bias.items()},
            "witness": None if self.witness is None else {
                "p": [str(v) for v in self.witness[0]],
                "q": [str(v) for v in self.witness[1]]},
            "witness_law": None if self.witness_law is None else {
                repr(k): str(v) for k, v in self.witness_law.items()},
            "crash": self.crash,
            "undecided": self.undecided,
            "grid_bits": self.grid_bits,
        }


class ProofOutcome:
    """What every proof result reads off ``proved``: its status word."""

    __slots__ = ()

    @property
    def proved(self) -> bool:
        raise NotImplementedError

    @property
    def status(self) -> str:
        """``"proved"`` or ``"refuted"``, as the reports and their JSON say it."""
        return "proved" if self.proved else "refuted"


@final
@dataclass(frozen=True)
class ProofResult(ProofOutcome):
    """The outcome of :func:`~specexact.symbolic.prove`: proved, or refuted with cases.

    ``complete`` is False when the search stopped early after a confirmed
    refutation (``note`` says why); a proof is always complete.
    """

    vocab_size: int
    cases: tuple[Case, ...]
    complete: bool
    note: str | None
    splits: int
    pruned: int
    lp_calls: int
    executions: int
    seconds: float
    p_symbols: tuple[Any, ...] = ()
    q_symbols: tuple[Any, ...] = ()
    #: Unbiased cases whose formula the exact engine confirmed at concrete points
    #: (a case with no rational point found, e.g. a nonlinear sliver, is not).
    cross_checked: int | None = None
    #: Comparisons whose answer differs between '<' and '<=' on a uniform grid.
    hazards: tuple[GridHazard, ...] = ()
    #: The grid the hazards were judged on (``prove(..., uniform_bits=K)``), or None.
    uniform_bits: int | None = None

    @property
    def proved(self) -> bool:
        return self.complete and all(c.proved for c in self.cases)

    @property
    def refuting(self) -> tuple[Case, ...]:
        """The confirmed counterexample cases."""
        return tuple(c for c in self.cases if c.refutes)

    @property
    def undecided(self) -> tuple[Case, ...]:
        """Biased cases without a witness (possibly empty regions cut by nonlinear conditions)."""
        return tuple(c for c in self.cases if c.undecided is not None)

    def case_for(self, p: Sequence[Any], q: Sequence[Any]) -> Case:
        """The case containing the point (p, q)."""
        for case in self.cases:
            if case.contains(p, q):
                return case
        msg = f"no case contains p={p}, q={q}"
        raise LookupError(msg)

    def summary(self) -> str:
        v = self.vocab_size
        undecided = f", {len(self.undecided)} undecided" if self.undecided else ""
        # "REFUTED for every p, q" would read as "biased everywhere": say where instead.
        scope = "for every p, q" if self.proved else "(biased on the cases below)"
        # A proof is for a continuous uniform: say so, and count the grid hazards.
        hazards = len(self.hazards)
        grid = (f"; {hazards} grid hazard{'s' * (hazards != 1)}" if hazards else "")
        if self.uniform_bits is not None:
            grid += f", judged on the {self.uniform_bits}-bit grid"
        unchecked = (0 if self.cross_checked is None else
                     sum(1 for c in self.cases if c.proved) - self.cross_checked)
        if unchecked > 0:
            grid += (f"; {unchecked} case{'s' * (unchecked != 1)} without a rational point "
                     "to cross-check")
        head = (f"{self.status.upper()} {scope} on {v} token{'s' * (v != 1)} "
                f"(uniform continuous{grid}): "
                f"{len(self.cases)} case{'s' * (len(self.cases) != 1)}, "
                f"{len(self.refuting)} biased{undecided} ({self.splits} splits, {self.pruned} "
                f"infeasible sides pruned, {self.lp_calls} LPs)")
        return head

    def __str__(self) -> str:
        lines = [self.summary()]
        for i, case in enumerate(self.refuting, 1):
            lines.append(f"case {i}:")
            lines.append(case.describe())
        if self.hazards:
            lines.append("grid hazards ('<' and '<=' differ on a uniform grid such as "
                         "torch.rand's; --uniform-bits K judges them):")
            lines.extend(f"  {h.describe()}" for h in self.hazards[:_SHOWN_HAZARDS])
            if len(self.hazards) > _SHOWN_HAZARDS:
                lines.append(f"  ... and {len(self.hazards) - _SHOWN_HAZARDS} more "
                             "(--json lists them all)")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "vocab_size": self.vocab_size,
            "complete": self.complete,
            "note": self.note,
            "cases": len(self.cases),
            "splits": self.splits,
            "pruned": self.pruned,
            "lp_calls": self.lp_calls,
            "cross_checked": self.cross_checked,
            "refuting": [c.to_json() for c in self.refuting],
            "uniform": "continuous" if self.uniform_bits is None else
                       f"continuous, hazards judged on the {self.uniform_bits}-bit grid",
            "grid_hazards": [h.to_json() for h in self.hazards],
        }
