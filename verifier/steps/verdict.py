"""Comparing a decode's joint law with the target's, and the verdict on a step."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, final

from specexact.distribution import Distribution
from specexact.errors import SamplerFailure
from specexact.exact.tree import Budget
from specexact.exact.verdict import ComparedVerdict, LawComparison, is_valid_output
from specexact.numbers import ZERO
from specexact.steps.decode import (
    CacheDivergence,
    DecodeClock,
    DecodeRun,
    Step,
    check_horizon,
    check_processors,
    compose_decode,
    prepare_sides,
    recorded_target_law,
)
from specexact.steps.models import format_prefix
from specexact.steps.processors import ProcessorPipeline, ProcessorsExhausted
from specexact.tables import exact_text, omit_identical, render_table, signed
from specexact.witness import step_witness_json

__all__ = [
    "DecodeComparison",
    "SequenceComparison",
    "StepVerdict",
    "check_step",
    "compare_decodes",
    "first_differing_prefix",
]

Prefix = tuple[int, ...]


def _by_prefix(law: Mapping[Hashable, Fraction], length: int,
               view: Callable[[Any], Any]) -> dict[Any, Fraction]:
    """Marginal law of the first ``length`` items of ``view(outcome)``."""
    out: dict[Any, Fraction] = {}
    for outcome, prob in law.items():
        key = view(outcome)[:length]
        out[key] = out.get(key, ZERO) + prob
    return out


def _same(outcome: Any) -> Any:
    return outcome


def _shortest_first(outcome: Hashable) -> tuple[int, str]:
    return (len(outcome) if isinstance(outcome, tuple) else 0, repr(outcome))


def first_differing_prefix(expected: Mapping[Hashable, Fraction],
                           actual: Mapping[Hashable, Fraction],
                           as_sequence: Callable[[Any], Any] | None = None
                           ) -> tuple[Any, Fraction, Fraction]:
    """The shortest prefix whose probability differs between two laws over sequences.

    Returns ``(prefix, expected probability, actual probability)`` for the
    smallest differing prefix of the least length (the laws agree on every
    shorter one), ``(None, 0, 0)`` when no prefix differs.  ``as_sequence``
    turns an outcome into the sequence whose prefixes are compared (``str``
    for texts); by default the outcome itself (a tuple of token ids).

    >>> half = Fraction(1, 2)
    >>> first_differing_prefix({(0, 0): Fraction(1)}, {(0, 1): half, (1, 0): half})
    ((0,), Fraction(1, 1), Fraction(1, 2))
    """
    view = _same if as_sequence is None else as_sequence
    longest = max((len(view(k)) for k in (*expected, *actual)), default=0)
    for length in range(1, longest + 1):
        e, a = _by_prefix(expected, length, view), _by_prefix(actual, length, view)
        differing = sorted(k for k in set(e) | set(a) if e.get(k, ZERO) != a.get(k, ZERO))
        if differing:
            first = differing[0]
            return first, e.get(first, ZERO), a.get(first, ZERO)
    return None, ZERO, ZERO


def _conditional(law: Mapping[Prefix, Fraction], context: Prefix) -> Distribution:
    """The law of the token after ``context`` given that the sequence starts with it."""
    n = len(context)
    mass: dict[Hashable, Fraction] = {}
    for seq, prob in law.items():
        if len(seq) > n and seq[:n] == context:
            mass[seq[n]] = mass.get(seq[n], ZERO) + prob
    total = sum(mass.values(), ZERO)
    return Distribution({k: v / total for k, v in mass.items()}) if total else Distribution()


@dataclass(frozen=True)
class SequenceComparison(LawComparison):
    """An exact comparison of two laws over sequences, with where they first part.

    ``first_difference`` is the shortest sequence prefix whose probability
    differs (the laws agree on every shorter one), ``None`` when the laws are
    equal; ``first_expected`` / ``first_actual`` are its two probabilities.
    """

    first_difference: Any = field(init=False)
    first_expected: Fraction = field(init=False)
    first_actual: Fraction = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        first, fe, fa = None, ZERO, ZERO
        if self.difference:
            first, fe, fa = first_differing_prefix(self.expected, self.actual, self.as_sequence)
        set_ = object.__setattr__
        set_(self, "first_difference", first)
        set_(self, "first_expected", fe)
        set_(self, "first_actual", fa)

    def as_sequence(self, outcome: Any) -> Any:
        """The sequence whose prefixes are compared: the outcome itself (token ids)."""
        return outcome


@final
@dataclass(frozen=True)
class DecodeComparison(SequenceComparison):
    """The exact comparison of a decode's joint law with the target's.

    ``first_difference`` is the shortest sequence whose probability differs
    (the laws agree on every shorter prefix), ``None`` when the laws are
    equal; ``context`` is that sequence without its last token, and
    ``expected_next`` / ``actual_next`` the two next-token laws after it.
    """

    vocab_size: int

    def is_valid(self, outcome: Hashable) -> bool:
        """Whether ``outcome`` is a sequence of token ids of the vocabulary."""
        return is_valid_output(outcome, self.vocab_size)

    @property
    def context(self) -> Prefix | None:
        return None if self.first_difference is None else self.first_difference[:-1]

    @property
    def expected_next(self) -> Distribution | None:
        ctx = self.context
        return None if ctx is None else _conditional(self.expected, ctx)  # type: ignore[arg-type]

    @property
    def actual_next(self) -> Distribution | None:
        ctx = self.context
        return None if ctx is None else _conditional(self.actual, ctx)  # type: ignore[arg-type]


def compare_decodes(expected: Mapping[Hashable, Any], actual: Mapping[Hashable, Any],
                    vocab_size: int) -> DecodeComparison:
    """Compare two laws over token sequences (the target's and a decode's)."""
    e = expected if isinstance(expected, Distribution) else Distribution(expected)
    a = actual if isinstance(actual, Distribution) else Distribution(actual)
    return DecodeComparison(e, a, vocab_size)


@final
@dataclass(frozen=True)
class StepVerdict(ComparedVerdict):
    """Whether a decoding step preserved the target's joint law over ``horizon`` tokens.

    ``passed`` only after the full exact comparison, with no cache divergence
    and no crash.  ``target_rows`` / ``draft_rows`` hold every prefix the run
    asked each model for (and the prefixes the target's own law needed),
    including rows asked but never read, so that the step can be replayed
    concretely on these tables (at most a couple of thousand such rows).
    """

    target: Any
    draft: Any
    horizon: int
    vocab_size: int
    comparison: DecodeComparison | None
    crash: SamplerFailure | None = None
    cache_divergence: CacheDivergence | None = None
    target_rows: Mapping[Prefix, tuple[Fraction, ...]] = field(default_factory=dict)
    draft_rows: Mapping[Prefix, tuple[Fraction, ...]] = field(default_factory=dict)
    #: The processors and stopping the step was judged under (None: the plain target).
    processors: ProcessorPipeline | None = None

    @property
    def passed(self) -> bool:
        return self.cache_divergence is None and super().passed

    @property
    def reason(self) -> str:
        """One line: why it failed (or that it preserves the target)."""
        if self.crash is not None:
            return self.crash_reason()
        parts = []
        if self.cache_divergence is not None:
            parts.append(f"cache not in step with the output: {self.cache_divergence}")
        c = self.comparison
        assert c is not None
        if not c.equal:
            first = c.first_difference
            tokens = "1 token" if self.horizon == 1 else f"{self.horizon} tokens"
            under = "" if self.processors is None else f" under {self.processors}"
            if c.support_violation:
                # As for samplers: mass where the target has none fails whatever its size;
                # the sequence named is the first one the target never emits.
                what = (f"mass {exact_text(c.support_violation)} on sequences the "
                        f"target{under} never emits (joint law of {tokens}), ")
                outside = min((k for k, w in c.actual.items()
                               if w and not c.expected.prob(k)),
                              key=_shortest_first, default=None)
                parts.append(f"{what}TV = {exact_text(c.tv)}; first such sequence "
                             f"{outside}: actual {exact_text(c.actual.prob(outside))}"
                             if outside is not None else f"{what}TV = {exact_text(c.tv)}")
            else:
                what = f"joint law of {tokens}{under} biased, "
                parts.append(f"{what}TV = {exact_text(c.tv)}; first differs at {first}: "
                             f"expected {exact_text(c.first_expected)}, actual "
                             f"{exact_text(c.first_actual)}")
        if parts:
            return "; ".join(parts)
        if self.processors is not None:
            return (f"preserves the processed target's joint law over {self.horizon} tokens "
                    f"({self.processors})")
        return f"preserves the target's joint law over {self.horizon} tokens"

    def table(self, *, verbose: bool = True) -> str:
        """The witness: each sequence with expected, actual and difference, exactly.

        ``verbose=False`` cuts the identical sequences beyond the first few.
        """
        rows = []
        same = []
        if self.comparison is not None:
            e, a = self.comparison.expected, self.comparison.actual
            keys = list(e) + [k for k in a if k not in e]
            for k in sorted(keys):  # type: ignore[type-var]
                pe, pa = e.prob(k), a.prob(k)
                rows.append((format_prefix(k), exact_text(pe), exact_text(pa), signed(pa - pe)))  # type: ignore[arg-type]
                same.append(pe == pa)
        shown, footer = omit_identical(rows, same, verbose=verbose, what="sequences")
        return render_table(("sequence", "expected", "actual", "actual - expected"), shown,
                            footer=footer)

    def to_json(self) -> dict[str, Any]:
        """The witness as JSON-ready data: fractions as strings, prefixes as ``"0,1"``."""
        return step_witness_json(self.target_rows, self.draft_rows, self.horizon,
                                 self.expected, self.actual, self.processors)

    def __str__(self) -> str:
        head = "PASS" if self.passed else "FAIL"
        text = f"{head}: {self.reason}\n{self.table()}"
        if self.processors is not None:
            text += f"\nprocessors: {self.processors}"
        if self.comparison is not None and self.comparison.context is not None:
            c = self.comparison
            text += (f"\nafter {c.context}: expected next-token law {dict(c.expected_next or {})}"
                     f", actual {dict(c.actual_next or {})}")
        if self.crash is not None:
            text += "\n" + str(self.crash)
        return text


def check_step(step: Step, target: Any, draft: Any, horizon: int, *,
               budget: Budget | None = None, uniform_bits: int | None = None,
               processors: ProcessorPipeline | None = None) -> StepVerdict:
    """Decode exactly with ``step`` and compare the joint law with the target's own.

    With ``processors`` (a :class:`~specexact.steps.processors.ProcessorPipeline`)
    the reference is the processed target's joint law, where a sequence that
    stopped (EOS, a stop sequence, max_new_tokens) ends; the step is called with
    ``processors=pipeline`` (a step without that parameter ignores them) and must
    apply them at every position it emits and stop where the sequence stops.
    Where the processors leave no token on the processed target's own path (also
    past the horizon, where a step reads its bonus row),
    :class:`~specexact.steps.processors.ProcessorsExhausted` is raised.

    A step that raises, or returns something that is not a non-empty tuple
    of token ids, gives a failing verdict with ``crash`` set; a stateful
    model whose cache is not exactly the emitted prefix after some step sets
    ``cache_divergence``.  Undecidable runs raise
    :class:`~specexact.errors.Undecided`; malformed models raise
    :class:`~specexact.errors.InvalidInput`.
    """
    horizon = check_horizon(horizon)
    pipeline = check_processors(processors)
    clock = DecodeClock(budget)
    t, d, vocab_size = prepare_sides(target, draft)
    assert t.recorder is not None
    expected = recorded_target_law(t.recorder, horizon, clock, pipeline)
    run = DecodeRun(Distribution(), horizon, vocab_size, t.rows, d.rows)

    def verdict(comparison: DecodeComparison | None, crash: SamplerFailure | None = None
                ) -> StepVerdict:
        return StepVerdict(target, draft, horizon, vocab_size, comparison, crash,
                           run.divergence, t.witness_rows(), d.witness_rows(), pipeline)

    try:
        compose_decode(step, t, d, run, clock, uniform_bits, pipeline)
    except SamplerFailure as failure:
        cause = failure.__cause__
        if isinstance(cause, ProcessorsExhausted) and pipeline is not None \
                and pipeline.reaches(t.recorder.row, cause.emitted):
            # Past the horizon, on a path the processed target takes: the models and
            # processors have no law there, whatever the step does.
            raise cause from None
        return verdict(None, failure)
    return verdict(compare_decodes(expected, run.law, vocab_size))
