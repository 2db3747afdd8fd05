"""One level of a decode, split over the current executor.

The states of a level (prefixes of one length) are independent: each one's step
law is enumerated on its own, and the laws are folded into the next level by
exact addition.  :func:`split_level` enumerates the laws of a large level's
states in batches on the executor of :func:`specexact.using_executor`, and
hands them back **in the level's own order**, so the caller folds them exactly
as the serial decode does: the law, the states, the rows recorded and the
report are the same, byte for byte, for any number of workers and any executor.

It answers None, and the caller enumerates the level in its own process, where
that is the only way to be sure of the serial outcome: a state failed or ran out
of budget (the serial run then raises the same error at the same state), a task
was lost, or the work could not be sent (a model that cannot be pickled for a
remote cluster).  Work counts towards ``max_total_operations`` as in the serial
decode: a level is kept only when every one of its states finished within what
the serial decode would have left it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from specexact.exact.guards import real_monotonic
from specexact.exact.tree import METER, Budget
from specexact.executors import Executor, Lost, current

__all__ = ["MIN_SPLIT", "LevelEvidence", "level_executor", "split_level"]

#: A level with fewer states is enumerated serially: a fork costs more than it saves.
#: A constant, not a function of the workers, although the result never depends on it.
MIN_SPLIT = 64

#: ``law(state, keep, budget)``: one state's step law.
LawAt = Callable[[Any, int, Budget], Mapping[Hashable, Fraction]]


class LevelEvidence(Protocol):
    """What the step's enumerations record besides their laws (the model rows read),
    taken in a worker after its batch and merged into the parent's record."""

    def mark(self) -> Any:
        """In the parent, before the level is sent: the record's current extent."""

    def taken(self, mark: Any) -> Any:
        """In a worker, after its batch: what was recorded beyond ``mark``."""

    def merge(self, taken: Any) -> None:
        """In the parent: add what a worker recorded."""


@dataclass(frozen=True)
class _Batch:
    laws: list[dict[Hashable, Fraction]]
    operations: list[int]
    evidence: Any


def level_executor(states: int) -> Executor | None:
    """The executor to split a level of ``states`` states over, or None (serial)."""
    executor = current()
    if executor is None or executor.workers <= 1 or states < MIN_SPLIT:
        return None
    return executor


def _batches(count: int, workers: int) -> list[range]:
    """About four batches per worker, so that a slow batch does not hold up the rest."""
    size = max(1, -(-count // (4 * workers)))
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


@dataclass(frozen=True)
class _Level:
    """What every batch of a level needs: sent to each worker once."""

    law_at: LawAt
    keep: int
    budget: Budget
    evidence: LevelEvidence
    mark: Any


def _run_batch(level: _Level, states: Sequence[Any]) -> _Batch | None:
    """In a worker: the laws of ``states`` and what they recorded (None if one failed)."""
    law_at, keep, budget, evidence = level.law_at, level.keep, level.budget, level.evidence
    laws: list[dict[Hashable, Fraction]] = []
    operations: list[int] = []
    start = real_monotonic()
    for state in states:
        before = METER.operations
        try:
            if budget.max_seconds is not None:  # what is left of it, as serially
                left = budget.max_seconds - (real_monotonic() - start)
                if left <= 0:
                    return None
                budget = dataclasses.replace(budget, max_seconds=left)
            law = law_at(state, keep, budget)
        except Exception:  # the parent redoes the level and raises it as serial does
            return None
        laws.append(dict(law))
        operations.append(METER.operations - before)
    return _Batch(laws, operations, evidence.taken(level.mark))


def split_level(executor: Executor, states: Sequence[Any], keep: int, law_at: LawAt,
                budget: Budget, left_operations: int, evidence: LevelEvidence
                ) -> list[Mapping[Hashable, Fraction]] | None:
    """The step laws of ``states`` (in order), enumerated on ``executor``, or None.

    ``budget`` is the budget the level's first state would get serially;
    ``left_operations`` what is left of the decode's ``max_total_operations`` then.
    """
    mark = evidence.mark()
    batches = _batches(len(states), executor.workers)
    try:
        # One object, so that the step's models and the evidence's recorders stay one
        # object graph wherever it is unpickled (Dask pickles a tuple's items apart).
        level = _Level(law_at, keep, budget, evidence, mark)
        answers = executor.map(_run_batch, [([states[i] for i in batch],) for batch in batches],
                               shared=(level,))
    except Exception:  # the work could not travel (a closure over something unpicklable)
        return None
    if any(answer is None or isinstance(answer, Lost) for answer in answers):
        return None
    laws: list[Mapping[Hashable, Fraction]] = []
    used = 0
    for answer in answers:
        for law, work in zip(answer.laws, answer.operations, strict=True):
            # Serially, this state starts with left_operations - used and must not
            # run past it; otherwise the serial run stops here, so redo it that way.
            if used >= left_operations or work > left_operations - used:
                return None
            used += work
            laws.append(law)
    for answer in answers:
        evidence.merge(answer.evidence)
    METER.operations += used
    return laws
