"""The verdict on a cross-vocabulary step: the law of the emitted text against the target's."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, final

from specexact.crossvocab.decode import (
    CrossVocabRun,
    CrossVocabStep,
    check_horizon,
    new_clock,
    prepare_models,
    run_crossvocab,
)
from specexact.crossvocab.models import VocabModel, continuation_law
from specexact.distribution import Distribution
from specexact.errors import SamplerFailure
from specexact.exact.tree import Budget
from specexact.exact.verdict import ComparedVerdict
from specexact.numbers import ZERO
from specexact.steps.models import format_prefix
from specexact.steps.verdict import SequenceComparison
from specexact.tables import exact_text, omit_identical, render_table, signed
from specexact.witness import fraction_text, rows_json

__all__ = ["CrossVocabVerdict", "TextComparison", "check_crossvocab_step", "compare_texts"]

Ids = tuple[int, ...]
Rows = Mapping[Ids, tuple[Fraction, ...]]


@final
@dataclass(frozen=True)
class TextComparison(SequenceComparison):
    """The exact comparison of two laws over texts of ``horizon`` characters.

    ``support_violation`` is the actual mass on texts the target never
    generates; ``first_difference`` the shortest text whose probability
    differs (the laws agree on every shorter one), None when they are equal.
    """

    def as_sequence(self, outcome: Any) -> str:
        """The text whose prefixes are compared."""
        return str(outcome)


def compare_texts(expected: Mapping[Hashable, Any], actual: Mapping[Hashable, Any]
                  ) -> TextComparison:
    """Compare two laws over texts (the target's and a decode's)."""
    e = expected if isinstance(expected, Distribution) else Distribution(expected)
    a = actual if isinstance(actual, Distribution) else Distribution(actual)
    return TextComparison(e, a)


def _chars(n: int) -> str:
    return f"{n} character" if n == 1 else f"{n} characters"


def _texts_json(law: Mapping[Hashable, Fraction] | None, keys: list[Hashable]
                ) -> dict[str, str]:
    """``{text: probability}``, every text of ``keys`` listed (0 when absent)."""
    out = {str(k): "0" for k in keys}
    for text, prob in (law or {}).items():
        out[str(text)] = fraction_text(prob)
    return out


def _row_text(row: tuple[Fraction, ...]) -> str:
    return "(" + ", ".join(str(x) for x in row) + ")"


@final
@dataclass(frozen=True)
class CrossVocabVerdict(ComparedVerdict):
    """Whether a cross-vocabulary step preserved the target's law over ``horizon`` characters.

    ``passed`` only after the full exact comparison and no crash.
    ``target_rows`` / ``draft_rows`` hold every row the run read (prefixes
    of target ids, of draft ids), so the step can be replayed on tables.
    """

    target: VocabModel
    draft: VocabModel
    horizon: int
    comparison: TextComparison | None
    crash: SamplerFailure | None = None
    target_rows: Rows = field(default_factory=dict)
    draft_rows: Rows = field(default_factory=dict)
    run: CrossVocabRun | None = field(default=None, compare=False)

    @property
    def reason(self) -> str:
        if self.crash is not None:
            return self.crash_reason()
        c = self.comparison
        assert c is not None
        if c.equal:
            return f"preserves the target's law over the first {_chars(self.horizon)} of text"
        extra = ""
        if c.support_violation:
            extra = f"; mass {exact_text(c.support_violation)} on text the target never emits"
        return (f"law of the first {_chars(self.horizon)} of text biased, TV = "
                f"{exact_text(c.tv)}; first differs at {c.first_difference!r}: expected "
                f"{exact_text(c.first_expected)}, actual {exact_text(c.first_actual)}{extra}")

    def table(self, *, verbose: bool = True) -> str:
        """Each text with expected, actual and difference, exactly."""
        rows, same = [], []
        if self.comparison is not None:
            e, a = self.comparison.expected, self.comparison.actual
            for k in sorted({*e, *a}, key=str):
                pe, pa = e.prob(k), a.prob(k)
                rows.append((repr(k), exact_text(pe), exact_text(pa), signed(pa - pe)))
                same.append(pe == pa)
        shown, footer = omit_identical(rows, same, verbose=verbose, what="texts")
        return render_table(("text", "expected", "actual", "actual - expected"), shown,
                            footer=footer)

    def models_lines(self) -> list[str]:
        """The vocabularies and the rows the run read, one prefix a line."""
        lines = []
        for name, model, rows in (("target", self.target, self.target_rows),
                                  ("draft", self.draft, self.draft_rows)):
            lines.append(f"  {name} vocabulary {model.vocab.tokens!r}:")
            for prefix in sorted(rows, key=lambda p: (len(p), p)):
                shown = model.vocab.decode(prefix)
                label = f"after {format_prefix(prefix) or '()'} ({shown!r})"
                lines.append(f"    {label:<26} {_row_text(rows[prefix])}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The witness as JSON-ready data: vocabularies, rows, both laws of text."""
        expected, actual = self.expected, self.actual
        keys = sorted({*(expected or {}), *(actual or {})}, key=str)
        return {
            "target_vocab": list(self.target.vocab.tokens),
            "draft_vocab": list(self.draft.vocab.tokens),
            "target": rows_json(self.target_rows),
            "draft": rows_json(self.draft_rows),
            "horizon": self.horizon,
            "expected": _texts_json(expected, keys),
            "actual": None if actual is None else _texts_json(actual, keys),
            "tv": None if self.tv is None else fraction_text(self.tv),
            "first_difference": None if self.comparison is None
            else self.comparison.first_difference,
        }

    def __str__(self) -> str:
        head = "PASS" if self.passed else "FAIL"
        text = f"{head}: {self.reason}\n" + "\n".join(self.models_lines())
        text += "\n" + self.table()
        if self.crash is not None:
            text += "\n" + str(self.crash)
        return text


def check_crossvocab_step(step: CrossVocabStep, target: Any, draft: Any, horizon: int, *,
                          budget: Budget | None = None,
                          uniform_bits: int | None = None) -> CrossVocabVerdict:
    """Decode exactly with ``step`` and compare the law of the first ``horizon`` characters
    of text with the target's own (summed over its tokenizations).

    A step that raises, or returns something that is not a non-empty tuple
    of target ids, gives a failing verdict with ``crash`` set.  Undecidable
    runs raise :class:`~specexact.errors.Undecided`; malformed models raise
    :class:`~specexact.errors.InvalidInput`.

    >>> from specexact.crossvocab.models import context_free_model
    >>> def plain(target, draft, prefix, rng):
    ...     return (rng.categorical(target(prefix)),)
    >>> t = context_free_model(("a", "b", "ab"), ["1/2", "1/4", "1/4"])
    >>> d = context_free_model(("a", "b"), ["1/2", "1/2"])
    >>> check_crossvocab_step(plain, t, d, 2).passed
    True
    """
    horizon = check_horizon(horizon)
    clock = new_clock(budget)
    models = prepare_models(target, draft)
    law = continuation_law(models.target, (), horizon, tick=lambda: clock.next_budget(ZERO))
    expected = Distribution(law.items())

    def verdict(comparison: TextComparison | None, crash: SamplerFailure | None = None,
                run: CrossVocabRun | None = None) -> CrossVocabVerdict:
        return CrossVocabVerdict(target, draft, horizon, comparison, crash,
                                 models.target_recorder.witness_rows(),
                                 models.draft_recorder.witness_rows(), run)

    try:
        run = run_crossvocab(step, models, horizon, clock=clock, uniform_bits=uniform_bits)
    except SamplerFailure as failure:
        return verdict(None, failure)
    return verdict(compare_texts(expected, run.text_law), run=run)
