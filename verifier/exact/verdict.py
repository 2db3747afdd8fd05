"""Comparing an exact law with the target: the verdict and its witness table."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, final

from specexact.distribution import Distribution, InvalidToken, total_variation
from specexact.errors import SamplerFailure
from specexact.exact.engine import Sampler, output_distribution
from specexact.exact.tree import Budget
from specexact.numbers import ZERO, as_distribution, check_same_vocabulary
from specexact.tables import exact_text, omit_identical, render_table, signed

__all__ = [
    "ComparedVerdict",
    "Comparison",
    "LawComparison",
    "Verdict",
    "check_sampler",
    "compare_laws",
    "format_table",
    "is_valid_output",
    "support_finding",
]


def is_valid_output(outcome: Hashable, vocab_size: int) -> bool:
    """Whether ``outcome`` is a token id of the vocabulary, or a tuple of valid outputs."""
    if isinstance(outcome, tuple):
        return all(is_valid_output(o, vocab_size) for o in outcome)
    return isinstance(outcome, int) and 0 <= outcome < vocab_size


@dataclass(frozen=True)
class LawComparison:
    """The exact comparison of an actual law with the expected one: what every kind shares.

    ``support_violation`` is the actual mass on valid outcomes the expected
    law gives probability 0 (for a sampler: tokens with p = 0);
    ``invalid_mass`` is the mass on outcomes that are not valid (see
    :meth:`is_valid`).  Both fail the check whatever their size.
    """

    expected: Distribution
    actual: Distribution
    difference: Mapping[Hashable, Fraction] = field(init=False)
    tv: Fraction = field(init=False)
    support_violation: Fraction = field(init=False)
    invalid_mass: Fraction = field(init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "difference", self.actual.difference(self.expected))
        set_(self, "tv", total_variation(self.actual, self.expected))
        invalid = ZERO
        support = ZERO
        for outcome, prob in self.actual.items():
            if not self.is_valid(outcome):
                invalid += prob
            elif outcome not in self.expected:
                support += prob
        set_(self, "support_violation", support)
        set_(self, "invalid_mass", invalid)

    def is_valid(self, outcome: Hashable) -> bool:
        """Whether ``outcome`` is something the code may emit at all (here: anything)."""
        return True

    @property
    def equal(self) -> bool:
        """True iff the two laws are identical."""
        return not self.difference


@final
@dataclass(frozen=True)
class Comparison(LawComparison):
    """The exact comparison of a sampler's law with p over ``vocab_size`` tokens.

    ``invalid_mass`` is the mass on outcomes that are not tokens of the
    vocabulary (ids out of range, non-integers).
    """

    vocab_size: int

    def is_valid(self, outcome: Hashable) -> bool:
        """Whether ``outcome`` is a token id (or a tuple of them) of the vocabulary."""
        return is_valid_output(outcome, self.vocab_size)

    @property
    def invalid_outcomes(self) -> tuple[Hashable, ...]:
        return tuple(o for o in self.actual if not is_valid_output(o, self.vocab_size))


class ComparedVerdict:
    """What every verdict reads off its exact comparison (``None`` after a crash)."""

    __slots__ = ()
    comparison: Any
    crash: SamplerFailure | None

    @property
    def passed(self) -> bool:
        """True only after the full exact comparison found the laws equal, with no crash."""
        return self.crash is None and self.comparison is not None and self.comparison.equal

    @property
    def expected(self) -> Distribution | None:
        return None if self.comparison is None else self.comparison.expected

    @property
    def actual(self) -> Distribution | None:
        return None if self.comparison is None else self.comparison.actual

    @property
    def tv(self) -> Fraction | None:
        return None if self.comparison is None else self.comparison.tv

    def crash_reason(self) -> str:
        """The one-line reason of a crash on valid input."""
        return f"crash on valid input: {str(self.crash).splitlines()[0]}"


@final
@dataclass(frozen=True)
class Verdict(ComparedVerdict):
    """Whether a sampler preserved p on one exact (p, q), with the evidence.

    ``passed`` is True only when the full exact law equals p.  When the
    sampler raised on this valid input, ``crash`` holds the finding and
    ``comparison`` is None.
    """

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    comparison: Comparison | None
    crash: SamplerFailure | None = None

    @property
    def expected(self) -> Distribution:
        return Distribution.from_probabilities(self.p)

    @property
    def reason(self) -> str:
        """One line: why it failed (or 'preserves p')."""
        if self.crash is not None:
            return self.crash_reason()
        assert self.comparison is not None
        c = self.comparison
        if c.equal:
            return "preserves p exactly"
        parts = []
        if c.invalid_mass:
            parts.append(f"mass {exact_text(c.invalid_mass)} on ids outside the vocabulary "
                         "or non-tokens")
        if c.support_violation:
            parts.append(f"mass {exact_text(c.support_violation)} on tokens where p = 0")
        parts.append(f"biased, TV = {exact_text(c.tv)}")
        return "; ".join(parts)

    def table(self, *, verbose: bool = True) -> str:
        """The witness as a table of exact fractions (``verbose=False`` cuts identical rows)."""
        return format_table(self.p, self.q, self.actual, verbose=verbose)

    def __str__(self) -> str:
        head = "PASS" if self.passed else "FAIL"
        text = f"{head}: {self.reason}\n{self.table()}"
        if self.crash is not None:
            text += "\n" + str(self.crash)
        return text


def format_table(p: Sequence[Fraction], q: Sequence[Fraction] | None,
                 actual: Mapping[Hashable, Fraction] | None, *, verbose: bool = True) -> str:
    """Token | p | q | expected | actual | difference, in exact fractions.

    ``verbose=False`` leaves out the tokens without a difference beyond the
    first few, as pytest cuts a long diff.
    """
    rows: list[tuple[str, ...]] = []
    same: list[bool] = []
    keys: list[Hashable] = list(range(len(p)))
    if actual is not None:
        keys += [k for k in actual if k not in range(len(p))]
    for k in keys:
        inside = isinstance(k, int) and 0 <= k < len(p)
        idx = k if isinstance(k, int) else 0
        pk = p[idx] if inside else Fraction(0)
        qk = exact_text(q[idx]) if inside and q is not None else ""
        act = actual.get(k, Fraction(0)) if actual is not None else None
        label = str(k) if not isinstance(k, InvalidToken) else repr(k)
        if inside:
            label = str(k)
        elif isinstance(k, int):
            label = f"{k} (outside vocabulary)"
        rows.append((label, exact_text(pk) if inside else "", qk, exact_text(pk),
                     "" if act is None else exact_text(act),
                     "" if act is None else signed(act - pk)))
        same.append(act is not None and act == pk)
    if actual is None:  # a crash: there is no output law to show, only the input
        return render_table(("token", "p", "q"), [r[:3] for r in rows],
                            footer=["(no output law: the code crashed on this input)"])
    shown, footer = omit_identical(rows, same, verbose=verbose, what="tokens")
    return render_table(("token", "p", "q", "expected", "actual", "actual - expected"), shown,
                        footer=footer)


def compare_laws(expected: Mapping[Hashable, Any], actual: Mapping[Hashable, Any],
                 vocab_size: int) -> Comparison:
    """Compare two exact laws; ``vocab_size`` decides which outcomes are valid tokens."""
    e = expected if isinstance(expected, Distribution) else Distribution(expected)
    a = actual if isinstance(actual, Distribution) else Distribution(actual)
    return Comparison(e, a, vocab_size)


def check_sampler(sampler: Sampler, p: Sequence[Any], q: Sequence[Any], *,
                  uniform_bits: int | None = None, budget: Budget | None = None) -> Verdict:
    """Enumerate ``sampler`` exactly on (p, q) and compare its law with p.

    A sampler that raises on this valid input gives a failing verdict with
    ``crash`` set; an undecidable run (budget, hidden randomness,
    unsupported operation) raises :class:`~specexact.errors.Undecided`.

    >>> def textbook(p, q, rng):
    ...     x = rng.categorical(q)
    ...     if rng.random() * q[x] < p[x]:
    ...         return x
    ...     return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
    >>> check_sampler(textbook, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]).passed
    True
    """
    pf = as_distribution(p, name="p")
    qf = as_distribution(q, name="q")
    check_same_vocabulary(pf, qf)
    try:
        actual = output_distribution(sampler, pf, qf, uniform_bits=uniform_bits, budget=budget)
    except SamplerFailure as failure:
        return Verdict(pf, qf, None, failure)
    return Verdict(pf, qf, compare_laws(Distribution.from_probabilities(pf),
                                        tokens_only(actual), len(pf)))


def tokens_only(law: Distribution) -> Distribution:
    """A sampler's law with every tuple outcome marked as not a token.

    A sampler returns one token; ``(x,)`` is a sequence (what a step
    returns), so it must count as invalid output rather than as a valid
    outcome missing from p, and must not print as token ``x``.
    """
    if not any(isinstance(outcome, tuple) for outcome in law):
        return law
    return law.map(lambda o: InvalidToken(o) if isinstance(o, tuple) else o)


def support_finding(verdict: Any) -> bool:
    """Whether a verdict shows a finding that no rounding explains.

    Used for a rule's *faithful variants* (the same code under float32 or
    float64 uniforms, as ``torch.rand`` draws them): the grid moves each
    acceptance probability by up to 2**-K, which is rounding, but a crash,
    mass on a token the target gives probability 0, or an id outside the
    vocabulary is a real bug whatever its size.
    """
    if verdict.passed:
        return False
    if verdict.crash is not None or getattr(verdict, "cache_divergence", None) is not None:
        return True
    comparison = verdict.comparison
    return comparison is not None and (comparison.support_violation > 0
                                       or comparison.invalid_mass > 0)
