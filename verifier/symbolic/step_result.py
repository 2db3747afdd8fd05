"""What a step proof returns: proved for every pair of context-dependent models, or a refutation.

sympy is imported inside the methods that print formulas, so that importing
this module (and ``verifier``) stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, final

from specexact.distribution import Distribution
from specexact.symbolic.result import ProofOutcome

if TYPE_CHECKING:
    from specexact.symbolic.region import Constraint

__all__ = ["StepProofResult", "StepRefutation"]

Prefix = tuple[int, ...]
Rows = Mapping[Prefix, tuple[Fraction, ...]]


def _prefix(prefix: Prefix) -> str:
    return "(" + ", ".join(str(t) for t in prefix) + ("," if len(prefix) == 1 else "") + ")"


def _key(seq: Any) -> str:
    return ",".join(str(t) for t in seq)


def _row(row: tuple[Fraction, ...]) -> str:
    return "(" + ", ".join(str(v) for v in row) + ")"


@final
@dataclass(frozen=True)
class StepRefutation:
    """A confirmed counterexample to a step proof.

    ``prefix`` is the decoding state whose step is wrong: decoding from it,
    the law of the next ``horizon - len(prefix)`` tokens differs from the
    target's on ``region`` (every longer state was proved, so this is the
    decode's own law, not an approximation); ``sequence`` is the first
    differing continuation and ``bias`` its bias formula.  ``target_rows``
    and ``draft_rows`` are rational rows per prefix (``default`` at every
    other prefix) on which the exact numeric engine, decoding from the
    empty prefix, gives the joint law ``decoded`` of the first ``horizon``
    tokens instead of ``expected``; ``first`` is the first sequence where
    they differ, by ``first_bias``.  ``crash`` says what the step raised,
    when it did (then the laws are empty).
    """

    prefix: Prefix
    region: tuple[Constraint, ...]
    sequence: Prefix
    bias: Any
    target_rows: Rows
    draft_rows: Rows
    default: tuple[Fraction, ...]
    decoded: Distribution
    expected: Distribution
    first: Prefix | None
    first_bias: Fraction | None
    crash: str | None = None
    #: Set when some longer state could not be proved either (then ``bias`` is the
    #: step's own, followed by the target's law, rather than the decode's from ``prefix``).
    note: str | None = None

    def region_text(self) -> str:
        return " and ".join(str(c) for c in self.region) or "every pair of models"

    def describe(self) -> str:
        import sympy

        lines = [f"  state: prefix {_prefix(self.prefix)}"
                 + (" (the first step)" if not self.prefix else
                    " (decoding the rest of the horizon from it)"),
                 f"  region: {self.region_text()}"]
        if self.crash is not None:
            lines.append(f"  the step raises: {self.crash}")
        else:
            lines.append(f"  first differing sequence {_prefix(self.prefix + self.sequence)}: "
                         f"bias = {sympy.sstr(self.bias)}")
        lines.append("  witness (the exact engine, decoding from the empty prefix):")
        for name, rows in (("target", self.target_rows), ("draft", self.draft_rows)):
            shown = "; ".join(f"{_prefix(k)} {_row(v)}" for k, v in sorted(rows.items()))
            lines.append(f"    {name} rows: {shown}; every other prefix {_row(self.default)}")
        if self.first is not None and self.first_bias is not None:
            lines.append(f"    P{_prefix(self.first)} = {self.decoded.get(self.first, 0)} "
                         f"decoded vs {self.expected.get(self.first, 0)} for the target "
                         f"(bias {self.first_bias})")
            state_sequence = self.prefix + self.sequence
            if self.crash is None and self.first != state_sequence:
                lines.append(
                    f"    (the decode's joint law first differs at {_prefix(self.first)}, "
                    f"not at {_prefix(state_sequence)}: these models may never make "
                    f"{_prefix(self.prefix)} a decoding state, but the step's law there, "
                    "followed by the target's, is the bias formula above)")
        if self.note is not None:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        import sympy

        def rows(r: Rows) -> dict[str, list[str]]:
            return {",".join(str(t) for t in k): [str(v) for v in row]
                    for k, row in sorted(r.items())}

        return {
            "prefix": list(self.prefix),
            "region": [str(c) for c in self.region],
            "sequence": list(self.prefix + self.sequence),
            "bias": None if self.crash is not None else sympy.sstr(self.bias),
            "crash": self.crash,
            "note": self.note,
            "witness": {"target": rows(self.target_rows), "draft": rows(self.draft_rows),
                        "default": [str(v) for v in self.default]},
            "first_differing": None if self.first is None else list(self.first),
            "first_bias": None if self.first_bias is None else str(self.first_bias),
            "decoded": {_key(k): str(v) for k, v in self.decoded.items()},
            "target_law": {_key(k): str(v) for k, v in self.expected.items()},
        }


@final
@dataclass(frozen=True)
class StepProofResult(ProofOutcome):
    """The outcome of :func:`~specexact.symbolic.prove_step`.

    ``proved``: for every pair of context-dependent target and draft models
    on ``vocab_size`` tokens, the joint law of the first ``horizon`` decoded
    tokens is the target's.  Otherwise ``refutation`` holds a confirmed
    counterexample.  ``states`` decoding states (prefixes) were checked,
    their step laws split into ``cases`` cases and summed over ``regions``
    regions; ``cross_checks`` points were compared with the numeric engine.
    """

    vocab_size: int
    horizon: int
    refutation: StepRefutation | None
    states: int
    cases: int
    regions: int
    executions: int
    lp_calls: int
    cross_checks: int
    seconds: float

    @property
    def proved(self) -> bool:
        return self.refutation is None

    def summary(self) -> str:
        v, n = self.vocab_size, self.horizon
        scope = ("for every pair of context-dependent models" if self.proved
                 else "(a confirmed counterexample below)")
        return (f"{self.status.upper()} {scope} on {v} token{'s' * (v != 1)}, joint law of "
                f"the first {n} token{'s' * (n != 1)} (continuous uniform): {self.states} "
                f"states, {self.cases} cases, {self.regions} regions, {self.cross_checks} "
                f"numeric cross-checks ({self.lp_calls} LPs)")

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.refutation is not None:
            lines.append(self.refutation.describe())
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "kind": "step",
            "vocab_size": self.vocab_size,
            "horizon": self.horizon,
            "states": self.states,
            "cases": self.cases,
            "regions": self.regions,
            "executions": self.executions,
            "lp_calls": self.lp_calls,
            "cross_checks": self.cross_checks,
            "refutation": None if self.refutation is None else self.refutation.to_json(),
        }
