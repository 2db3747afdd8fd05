"""The batch's five properties, each decided exactly on one case.

Every check enumerates the joint law of whole batches (:mod:`.batch`) and
compares rational laws; none samples.

* **row law**: the row's emitted tokens, continued by its target, have the
  product law of its target rows (:func:`~specexact.torch.batch.stream_law`),
  whatever the other rows hold;
* **independence**: the joint law of two rows is the product of their laws;
* **padding**: no row emits at a padded position (or a token after ``-1``), and
  the joint law of the batch is the same whatever the padded positions hold;
* **batch invariance**: a row's law is the same alone (``B = 1``) and at its
  position in the batch;
* **seeds**: a seeded row's tokens, and how far its generator advanced, are the
  same in every context (alone, next to seeded and unseeded rows) on every
  path of one coupled execution (:func:`~specexact.torch.batch.seeded_program`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specexact.distribution import Distribution, InvalidToken
from specexact.errors import SamplerFailure
from specexact.exact.engine import enumerate_law
from specexact.exact.tree import Budget
from specexact.exact.verdict import compare_laws
from specexact.numbers import ZERO
from specexact.tables import render_table
from specexact.torch.batch import (
    BatchRow,
    batch_program,
    seeded_program,
    stream_law,
    target_law,
)
from specexact.torch.session import UniformMode
from specexact.torch.values import Semantics

__all__ = [
    "BATCH_PROPERTIES",
    "BatchCase",
    "BatchRun",
    "BatchVerdict",
    "JointLaws",
    "check_batch_case",
]

#: The properties, in the order a report lists them.
BATCH_PROPERTIES: tuple[str, ...] = ("row law", "independence", "padding",
                                     "batch invariance", "seeds")


@dataclass(frozen=True)
class BatchRun:
    """How the kernel is run: drafts per row ``k``, dtype, uniform, semantics and its
    calling convention (:data:`~specexact.torch.batch.CONVENTIONS`)."""

    k: int = 2
    dtype: str = "float32"
    uniform: UniformMode = "continuous"
    semantics: Semantics = "exact"
    budget: Budget | None = None
    calling: str = "batch"

    def line(self) -> str:
        if self.uniform == "continuous":
            return "exact rationals, continuous uniform"
        return f"{self.semantics} semantics, torch.rand on its {self.dtype} grid"


@dataclass(frozen=True)
class BatchCase:
    """One case of one property: the batch (or batches) and the rows judged.

    ``rows`` is the batch; ``at`` the row(s) judged; ``variants`` the other batches
    the property compares it with (padding: the same batch with other fillers;
    seeds: the contexts of the seeded row, ``(rows, index)``)."""

    property: str
    rows: tuple[BatchRow, ...]
    at: tuple[int, ...] = (0,)
    variants: tuple[Any, ...] = ()

    @builtins.property
    def batch(self) -> int:
        return max([len(self.rows), *(len(v[0]) if isinstance(v, tuple) and v and
                                      isinstance(v[0], tuple) else 0
                                      for v in self.variants)])

    @builtins.property
    def vocab(self) -> int:
        return self.rows[0].vocab

    @builtins.property
    def size(self) -> tuple[int, int, int]:
        """(B, drafts, V): what 'smallest' means for a witness."""
        return (self.batch, max(r.drafts for r in self.rows), self.vocab)


@dataclass(frozen=True)
class BatchVerdict:
    """The exact verdict on one case (reads as :class:`specexact.audit.Judgement`)."""

    case: BatchCase
    run: BatchRun
    passed: bool
    reason: str
    expected: Distribution | None = None
    actual: Distribution | None = None
    tv: Fraction | None = None
    crash: SamplerFailure | None = None

    @property
    def property(self) -> str:
        return self.case.property

    def table(self, *, verbose: bool = True) -> str:
        if self.expected is None or self.actual is None:
            return ""
        outcomes = sorted(set(self.expected) | set(self.actual), key=_key)
        shown = outcomes if verbose or len(outcomes) <= 12 else outcomes[:12]
        rows = [[_show(o), str(self.expected.prob(o)), str(self.actual.prob(o))]
                for o in shown]
        return render_table(["outcome", "expected", "actual"], rows)


def _key(outcome: Any) -> tuple[int, str]:
    return (1 if isinstance(outcome, InvalidToken) else 0, repr(outcome))


def _show(outcome: Any) -> str:
    if isinstance(outcome, tuple):
        return " | ".join(_show(o) for o in outcome) if any(
            isinstance(o, tuple) for o in outcome) else "(" + ", ".join(map(str, outcome)) + ")"
    return str(outcome)


class JointLaws:
    """The exact joint laws of the batches one kernel ran on, each enumerated once.

    The properties share batches (the row law's pairs are the independence and batch
    invariance cases' batches, a row alone is the reference of every invariance case), so
    a search hands one :class:`JointLaws` to every case: a batch's law under one run
    (drafts, dtype, uniform, semantics) is a function of its rows, computed on first use.
    A kernel that raised or ran out of budget is not remembered (each case reports it)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self._laws: dict[tuple[Any, ...], Distribution] = {}
        #: How many joint laws were enumerated, and how many were asked for.
        self.enumerated = 0
        self.asked = 0

    def joint(self, rows: Sequence[BatchRow], run: BatchRun) -> Distribution:
        """The exact joint law of the batch ``rows`` (a tuple of row outcomes)."""
        key = (tuple(rows), run.k, run.dtype, run.uniform, run.semantics, run.calling)
        self.asked += 1
        law = self._laws.get(key)
        if law is None:
            law = enumerate_law(batch_program(self.fn, rows, run.k, dtype=run.dtype,
                                              uniform=run.uniform, semantics=run.semantics,
                                              calling=run.calling),
                                budget=run.budget, context={"batch": len(rows), "k": run.k})
            self.enumerated += 1
            self._laws[key] = law
        return law


def _invalid(law: Distribution) -> Any:
    for outcome in law:
        parts = outcome if isinstance(outcome, tuple) else (outcome,)
        for part in parts:
            if isinstance(part, InvalidToken):
                return part
    return None


def _tv(a: Distribution, b: Distribution) -> Fraction:
    return compare_laws(a, b, 0).tv


def _differs(case: BatchCase, run: BatchRun, expected: Distribution, actual: Distribution,
             said: str) -> BatchVerdict:
    """The failing verdict of two laws that differ: ``said``, then their TV."""
    tv = _tv(expected, actual)
    return BatchVerdict(case, run, False, f"{said} = {tv} ~ {float(tv):.4g}", expected,
                        actual, tv)


def check_batch_case(fn: Callable[..., Any], case: BatchCase, run: BatchRun,
                     laws: JointLaws | None = None) -> BatchVerdict:
    """Decide ``case`` exactly.  A crash of the kernel is a failing verdict; an
    undecidable run raises :class:`~specexact.errors.Undecided`.  ``laws``: the joint
    laws already enumerated for ``fn`` (a search passes one to every case)."""
    if laws is None or laws.fn is not fn:
        laws = JointLaws(fn)
    try:
        return _CHECKS[case.property](laws, case, run)
    except SamplerFailure as failure:
        first = str(failure).splitlines()[0]
        return BatchVerdict(case, run, False, f"{case.property}: the kernel raised on valid "
                            f"input: {first}", crash=failure)


def _row_law(laws: JointLaws, case: BatchCase, run: BatchRun) -> BatchVerdict:
    joint = laws.joint(case.rows, run)
    for at in case.at:
        row = case.rows[at]
        law = joint.marginal(at)
        bad = _invalid(law)
        if bad is not None:
            return BatchVerdict(case, run, False, f"row law: row {at} returned {bad}",
                                target_law(row), law, None)
        actual, expected = stream_law(row, law), target_law(row)
        if run.uniform == "dtype":
            # The faithful run rounds as the dtype does: only mass where the target has
            # none is a finding there (the exact run judged the law).
            extra = [o for o in actual if actual[o] and not expected.prob(o)]
            if extra:
                mass = sum((actual[o] for o in extra), ZERO)
                return BatchVerdict(case, run, False,
                                    f"row law: row {at} puts mass {mass} ~ {float(mass):.4g} "
                                    f"where its target has none ({run.line()})",
                                    expected, actual, mass)
            continue
        if actual != expected:
            return _differs(case, run, expected, actual,
                            f"row law: row {at}'s tokens (continued by its target) are not "
                            "its target's law: TV")
    return BatchVerdict(case, run, True, "row law holds")


def _independence(laws: JointLaws, case: BatchCase, run: BatchRun) -> BatchVerdict:
    joint = laws.joint(case.rows, run)
    a, b = case.at
    pair = joint.map(lambda o: (o[a], o[b]))
    first, second = joint.marginal(a), joint.marginal(b)
    product_law = Distribution([((x, y), wx * wy) for x, wx in first.items()
                                for y, wy in second.items()])
    if pair != product_law:
        return _differs(case, run, product_law, pair,
                        f"independence: rows {a} and {b} are dependent: TV(joint, product "
                        "of their laws)")
    return BatchVerdict(case, run, True, "the rows are independent")


def _padding(laws: JointLaws, case: BatchCase, run: BatchRun) -> BatchVerdict:
    joint = laws.joint(case.rows, run)
    bad = _invalid(joint)
    if bad is not None:
        return BatchVerdict(case, run, False, f"padding: a row returned {bad}", None, joint)
    for variant in case.variants:
        other = laws.joint(variant, run)
        if other != joint:
            bad = _invalid(other)
            tv = _tv(joint, other)
            said = f"a row returned {bad}" if bad is not None else \
                f"what the padded positions hold changed the batch's law: TV = {tv} ~ " \
                f"{float(tv):.4g}"
            return BatchVerdict(case, run, False, f"padding: {said}", joint, other, tv)
    return BatchVerdict(case, run, True, "padding is inert")


def _invariance(laws: JointLaws, case: BatchCase, run: BatchRun) -> BatchVerdict:
    (at,) = case.at
    row = case.rows[at]
    alone = laws.joint((row,), run).marginal(0)
    inside = laws.joint(case.rows, run).marginal(at)
    if alone != inside:
        return _differs(case, run, alone, inside,
                        f"batch invariance: row {at} of a batch of {len(case.rows)} has "
                        "another law than the same row alone: TV")
    return BatchVerdict(case, run, True, "the row's law does not depend on the batch")


def _seeds(laws: JointLaws, case: BatchCase, run: BatchRun) -> BatchVerdict:
    contexts = case.variants
    law = enumerate_law(seeded_program(laws.fn, contexts, run.k, dtype=run.dtype,
                                       uniform=run.uniform, semantics=run.semantics,
                                       calling=run.calling),
                        budget=run.budget, context={"seeds": len(contexts), "k": run.k})
    differ = ZERO
    moved = ZERO
    for outcome, weight in law.items():
        pairs: tuple[Any, ...] = tuple(outcome)  # type: ignore[arg-type]
        tokens = {o for o, _ in pairs}
        positions = {n for _, n in pairs}
        if len(tokens) > 1:
            differ += weight
        elif len(positions) > 1:
            moved += weight
    if differ or moved:
        first = law.map(lambda o: o[0][0])
        reason = (f"seeds: the seeded row's tokens differ between contexts with the same "
                  f"generator state, with probability {differ} ~ {float(differ):.4g}"
                  if differ else
                  f"seeds: the seeded row's generator is advanced by other rows (its "
                  f"draws differ between contexts with probability {moved} ~ "
                  f"{float(moved):.4g})")
        return BatchVerdict(case, run, False, reason, first, law.map(_pairs), differ or moved)
    return BatchVerdict(case, run, True, "the seeded row is a function of its generator")


def _pairs(outcome: Any) -> Any:
    return tuple(o for o, _ in outcome)


_CHECKS: dict[str, Callable[[JointLaws, BatchCase, BatchRun], BatchVerdict]] = {
    "row law": _row_law, "independence": _independence, "padding": _padding,
    "batch invariance": _invariance, "seeds": _seeds,
}
