"""The batch audit's cases: every property on a panel of edge-case rows, smallest first.

The panel is fixed (no random generation): for each number of drafts ``k = 1..K``
and vocabulary size ``V = low..high``, rows of these families:

* ``mixed``: target and draft rows of distinct, non-uniform laws at every position;
* ``short``: the same with one draft fewer (``-1`` padding at the end);
* ``padding only``: no draft at all (one token from the first target row);
* ``disjoint``: the draft puts all its mass where the target has none;
* ``one-hot``: one-hot target rows (a deterministic row);
* ``draft = target``;
* ``certain``: a one-hot draft equal to a one-hot target;
* ``overconfident``: the draft puts 4:1 on a token that moves with the position, the
  target 3:2 on the same token, so every position accepts with a probability strictly
  between 0 and 1 and rejects to a residual (a verifier that reuses one uniform across
  positions, as block verification with one uniform per request does, is biased there
  at V = 2).

Each property's cases vary the other rows over those families (row law: every
pair of the first seven, both rows judged; the overconfident row next to a
certain and a padded row), the generators over unseeded and seeded rows, the
padded positions' contents over uniform and one-hot fillers, and the row's
position and the batch size.  The first failing case in ascending ``(k, V, B)``
is the witness: the smallest case of the panel, with its property.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from specexact.errors import Undecided
from specexact.properties.runner import SearchResult
from specexact.torch.batch import BatchKernel, BatchRow, convention
from specexact.torch.batch_check import (
    BATCH_PROPERTIES,
    BatchCase,
    BatchRun,
    BatchVerdict,
    JointLaws,
    check_batch_case,
)

__all__ = ["BatchReport", "BatchWitness", "batch_cases", "batch_rows", "search_batch"]

F = Fraction


@dataclass(frozen=True)
class BatchReport:
    """Per property: how many cases were judged and the first failing verdict."""

    cases: dict[str, int] = field(default_factory=dict)
    failed: dict[str, BatchVerdict] = field(default_factory=dict)
    #: The first case of each property that could not be decided (a crash already
    #: reported for another property, raised again here, leaves this one undecided).
    undecided: dict[str, Undecided] = field(default_factory=dict)
    #: The properties the calling convention does not allow, with why.
    not_applicable: dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return BATCH_PROPERTIES

    def status(self, name: str) -> str:
        """``"fail"``, ``"undecided"`` (some case undecided, none failed),
        ``"not applicable"`` or ``"pass"``."""
        if name in self.failed:
            return "fail"
        if name in self.not_applicable:
            return "not applicable"
        return "undecided" if name in self.undecided else "pass"

    def line(self) -> str:
        shown = {"fail": "FAIL", "undecided": "UNDECIDED", "pass": "pass"}
        parts = [f"{name} not applicable ({self.not_applicable[name]})"
                 if self.status(name) == "not applicable" else
                 f"{name} {shown[self.status(name)]} ({self.cases.get(name, 0)} cases)"
                 for name in BATCH_PROPERTIES]
        return "Properties: " + "; ".join(parts) + "."


def _dist(*weights: int) -> tuple[Fraction, ...]:
    total = sum(weights)
    return tuple(F(w, total) for w in weights)


def _mixed(v: int, j: int, shift: int) -> tuple[Fraction, ...]:
    """A non-uniform law on v tokens, different for each position j and shift."""
    return _dist(*[1 + ((i + j + shift) % v) * (1 + (j + shift) % 2) for i in range(v)])


def _peaked(v: int, at: int, high: int, low: int) -> tuple[Fraction, ...]:
    """Weight ``high`` on token ``at mod v``, ``low`` on the others."""
    return _dist(*[high if t == at % v else low for t in range(v)])


def _one_hot(v: int, i: int) -> tuple[Fraction, ...]:
    return tuple(F(int(t == i % v)) for t in range(v))


def batch_rows(k: int, v: int) -> dict[str, BatchRow]:
    """The panel's row families at ``k`` drafts and ``V = v`` (see the module doc)."""
    mixed = BatchRow(q=tuple(_mixed(v, j, 1) for j in range(k)),
                     p=tuple(_mixed(v, j, 0) for j in range(k + 1)), label="mixed")
    short = BatchRow(q=mixed.q[:k - 1], p=mixed.p[:k], label="short")
    rows = {"mixed": mixed}
    if k > 1:
        rows["short"] = short
    rows["padding only"] = BatchRow(q=(), p=(_mixed(v, 1, 0),), label="padding only")
    rest = _dist(*([0] + [i + 1 for i in range(v - 1)]))
    rows["disjoint"] = BatchRow(q=tuple(_one_hot(v, 0) for _ in range(k)),
                                p=tuple(rest for _ in range(k + 1)), label="disjoint")
    rows["one-hot"] = BatchRow(q=tuple(_mixed(v, j, 1) for j in range(k)),
                               p=tuple(_one_hot(v, j) for j in range(k + 1)),
                               label="one-hot target")
    rows["draft = target"] = BatchRow(q=mixed.p[:k], p=mixed.p, label="draft = target")
    rows["overconfident"] = BatchRow(
        q=tuple(_peaked(v, j, 4, 1) for j in range(k)),
        p=tuple(_peaked(v, j, 3, 2) for j in range(k + 1)),
        label="overconfident draft")
    rows["certain"] = BatchRow(q=tuple(_one_hot(v, j + 1) for j in range(k)),
                               p=tuple(_one_hot(v, j + 1) for j in range(k + 1)),
                               label="certain (one-hot draft = one-hot target)")
    return rows


def _fillers(v: int) -> list[tuple[Fraction, ...] | None]:
    return [None, _one_hot(v, v - 1), _one_hot(v, 0)]


def batch_cases(k: int, v: int, *, padded: bool = True, seeds: bool = True
                ) -> Iterator[BatchCase]:
    """Every property's cases at ``k`` drafts and ``V = v``, cheapest first.

    ``padded=False`` (a convention where every row drafts ``k`` tokens): no short or
    padding-only row, no padding case; the disjoint row stands in a padded row's place
    next to the judged row, draft = target in a short row's.  ``seeds=False`` (a function
    handed no generators): no seeded row and no seeds case."""
    rows = batch_rows(k, v)
    if not padded:
        del rows["padding only"]
        rows.pop("short", None)
    over = rows.pop("overconfident")
    names = list(rows)
    mixed = rows["mixed"]
    pad = rows["padding only"] if padded else rows["disjoint"]
    partial = rows.get("short", pad) if padded else rows["draft = target"]
    seeded = [(False, False), (True, True), (True, False)] if seeds else [(False, False)]
    # row law: every pair of families, both rows judged; then under seeded generators
    for i, a in enumerate(names):
        for b in names[i:]:
            yield BatchCase("row law", (rows[a], rows[b]), (0, 1))
    # the overconfident draft (partial acceptance at every position, where a uniform
    # reused across positions biases the law) next to a deterministic and a padded row
    certain = rows["certain"]
    yield BatchCase("row law", (over, certain), (0, 1))
    yield BatchCase("row law", (pad, over), (0, 1))
    for sa, sb in seeded[1:]:
        yield BatchCase("row law", (mixed.with_(seeded=sa), partial.with_(seeded=sb)), (0, 1))
    # independence: two random rows, unseeded (one global stream) and seeded; two equal
    # rows on the global stream
    for sa, sb in seeded:
        yield BatchCase("independence", (mixed.with_(seeded=sa), partial.with_(seeded=sb)),
                        (0, 1))
    yield BatchCase("independence", (mixed, mixed), (0, 1))
    # padding: the padded positions' contents varied
    for first in (partial, pad) if padded else ():
        batches = [(first.with_(filler=f), mixed) for f in _fillers(v)]
        yield BatchCase("padding", batches[0], (0,), tuple(batches[1:]))
        batches = [(mixed, first.with_(filler=f)) for f in _fillers(v)]
        yield BatchCase("padding", batches[0], (1,), tuple(batches[1:]))
    # batch invariance: the row at each position of B = 2, and at the end of B = 3
    for other in (mixed, pad, rows["one-hot"]):
        yield BatchCase("batch invariance", (mixed, other), (0,))
        yield BatchCase("batch invariance", (other, mixed), (1,))
    yield BatchCase("batch invariance", (pad, certain, mixed), (2,))
    # a shorter row next to a longer one (a kernel that reads the batch's longest draft)
    if padded:
        yield BatchCase("batch invariance", (partial, mixed), (0,))
        yield BatchCase("batch invariance", (mixed, partial), (1,))
    # seeds: the seeded row alone, next to unseeded and seeded rows, at each position
    # (the neighbours that vary the contexts are certain rows, so that the coupled
    # execution stays small, and one random unseeded row)
    for row in (mixed, partial) if seeds else ():
        own = row.with_(seeded=True)
        contexts = (((own,), 0), ((own, certain), 0), ((certain.with_(seeded=True), own), 1),
                    ((pad, own), 1))
        yield BatchCase("seeds", (own,), (0,), contexts)


def search_batch(kernel: BatchKernel | Callable[..., Any], *,
                 vocab_sizes: Sequence[int] = (2, 3), budget: Any = None,
                 progress: Callable[[int], None] | None = None,
                 **_unused: Any) -> SearchResult:
    """Judge every property on the panel (see the module doc), exactly; the witness is
    the first failing case in ascending ``(k, V, B)``, its verdict a
    :class:`~specexact.torch.batch_check.BatchVerdict`.  ``covered`` names each
    property's verdict and count of cases."""
    if not isinstance(kernel, BatchKernel):
        kernel = BatchKernel(kernel)
    how = convention(kernel.convention)
    seeds = how.takes_generators(kernel.fn)
    low, high = vocab_sizes[0], vocab_sizes[-1]
    report = BatchReport()
    if not how.padded:
        report.not_applicable["padding"] = f"every row of the {how.name} shape drafts k tokens"
    if not seeds:
        report.not_applicable["seeds"] = f"the {how.name} function takes no generators"
    crashed: tuple[str, str] | None = None
    unjudged: set[str] = set()
    done = 0
    undecided: Undecided | None = None
    first: BatchVerdict | None = None
    runs: list[BatchRun] = []
    laws = JointLaws(kernel.fn)
    for k in range(1, kernel.k + 1):
        runs = [BatchRun(k=k, dtype=kernel.dtype, budget=budget, calling=how.name)]
        if kernel.faithful:
            runs.append(BatchRun(k=k, dtype=kernel.dtype, uniform="dtype",
                                 semantics=kernel.semantics,  # type: ignore[arg-type]
                                 budget=budget, calling=how.name))
        for v in range(max(low, 2), high + 1):
            for case in batch_cases(k, v, padded=how.padded, seeds=seeds):
                if case.property in report.failed or case.property in unjudged:
                    continue
                for run in runs:
                    try:
                        verdict = check_batch_case(kernel.fn, case, run, laws)
                    except Undecided as error:
                        undecided = undecided or error
                        report.undecided.setdefault(case.property, error)
                        break
                    if not verdict.passed:
                        said = _crash_line(verdict)
                        if said is not None and crashed is not None and said == crashed[1]:
                            # The crash already reported raised again: this property
                            # could not be judged, which is not a second finding.
                            unjudged_error = Undecided(
                                f"{case.property}: not judged: the kernel raised as reported "
                                f"for {crashed[0]}")
                            undecided = undecided or unjudged_error
                            report.undecided.setdefault(case.property, unjudged_error)
                            unjudged.add(case.property)
                            break
                        if said is not None and crashed is None:
                            crashed = (case.property, said)
                        report.failed[case.property] = verdict
                        first = first or verdict
                        break
                done += 1
                report.cases[case.property] = report.cases.get(case.property, 0) + 1
                if progress is not None:
                    progress(done)
    covered = (f"{done} exact cases of the batch panel, k = 1..{kernel.k} drafts, "
               f"V = {max(low, 2)}..{high}, B = 1..3; each run "
               + " and ".join(run.line() for run in runs) + ". " + report.line())
    if first is not None:
        return SearchResult("fail", done, BatchWitness(first, report), first, None, covered)
    if undecided is not None:
        return SearchResult("undecided", done, None, None, undecided, covered)
    return SearchResult("pass", done, BatchWitness(None, report), None, None, covered)


def _crash_line(verdict: BatchVerdict) -> str | None:
    """The first line of the error a crashing verdict reports (None: no crash)."""
    if verdict.crash is None:
        return None
    return str(verdict.crash).splitlines()[0]


@dataclass(frozen=True)
class BatchWitness:
    """A batch audit's witness: the failing verdict (None for a pass) and every
    property's tally."""

    verdict: BatchVerdict | None
    report: BatchReport
