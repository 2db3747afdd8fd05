"""What an audit covers (:class:`AuditOptions`), what it found (:class:`AuditResult`,
:class:`Finding`), and the one protocol every verdict a finding holds follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol, final, runtime_checkable

from specexact.audit.kinds import kind_of
from specexact.distribution import Distribution
from specexact.errors import InvalidArgument
from specexact.exact.tree import Budget
from specexact.steps.processors import ProcessorPipeline
from specexact.uniform import Uniform
from specexact.validation import (
    check_choice,
    check_integer,
    check_optional_integer,
    check_type,
    fail,
)

__all__ = [
    "DEFAULT_SEED",
    "FINDING_CLASSES",
    "AuditOptions",
    "AuditResult",
    "Finding",
    "Judgement",
    "KindName",
    "parse_integer",
    "parse_vocab_sizes",
]

#: The classes of a finding on code judged with its dtype run, and what each means.
FINDING_CLASSES: dict[str, str] = {
    "structural": "shows in exact arithmetic and in the dtype",
    "float-only": "reachable only through the dtype's rounding",
    "exact-only": "an exact-arithmetic deviation the dtype does not produce: a note, "
                  "not a FAIL",
}

#: A kind's name: "sampler", "step", "cross-vocab", "float" or a registered one.
KindName = str

DEFAULT_SEED = 0


@runtime_checkable
class Judgement(Protocol):
    """What every exact verdict says, whatever its kind: the protocol reports read."""

    @property
    def passed(self) -> bool: ...

    @property
    def expected(self) -> Distribution | None: ...

    @property
    def actual(self) -> Distribution | None: ...

    @property
    def tv(self) -> Fraction | None: ...

    @property
    def reason(self) -> str: ...

    @property
    def crash(self) -> Any: ...

    def table(self, *, verbose: bool = True) -> str: ...


@final
@dataclass(frozen=True)
class AuditOptions:
    """What an audit covers.  ``None`` fields take the kind's defaults.

    ``examples`` is the number of generated cases the Hypothesis search
    tries (``None``: the search's own default); ``seed`` makes the search
    reproducible; ``uniform`` is what ``rng.random()`` returns (a
    :class:`~specexact.uniform.Uniform`; None: the kind's default, the ideal
    uniform with every passing case run again on the float32 and float64
    grids).  ``uniform_bits`` and ``grid_check`` are the older spelling of
    ``uniform``: ``uniform_bits=K`` is a K-bit grid (for a step: each case
    judged with the ideal uniform and run again on the grid), ``grid_check=False``
    the ideal uniform alone.
    """

    kind: KindName = "sampler"
    vocab_sizes: tuple[int, int] | None = None
    horizon: int | None = None
    examples: int | None = None
    seed: int | None = DEFAULT_SEED
    uniform_bits: int | None = None
    budget: Budget | None = None
    #: A ``hypothesis.settings`` object (its database, phases, max_examples), or None.
    settings: Any = None
    #: Steps: hand the step stateful models (:class:`specexact.steps.models.CachedModel`).
    stateful: bool = False
    #: Steps: draw one-hot target rows only (greedy rules are exact only there).
    one_hot_target: bool = False
    #: Samplers: judge float code (:func:`specexact.properties.search_floats`) on inputs of
    #: this format ("float64" or "float32"), as numpy arrays with ``arrays``.
    floats: str | None = None
    arrays: bool = False
    #: Faithful variants of the code judged on every case after the exact check passes,
    #: for crashes, support violations and invalid ids only: pairs ``(variant, None)``,
    #: e.g. torch code under ``torch.rand`` on its dtype's grid.  They replace the
    #: uniform's rechecks.
    support_variants: tuple[tuple[Any, int | None], ...] = ()
    #: The support variants are the code's dtype run (torch code in dtype semantics):
    #: each finding is classified (structural, float-only, exact-only), and an
    #: exact-only one is a note on a passing case, not a failure.
    classify: bool = False
    #: The older spelling of ``uniform=CONTINUOUS`` (False) and of the default (True).
    grid_check: bool = True
    #: Steps: the processors and stopping (a :class:`specexact.ProcessorPipeline`) the
    #: step is called with; the reference is then the processed target's law.
    processors: Any = None
    #: What ``rng.random()`` returns; None: from ``uniform_bits``/``grid_check``.
    uniform: Uniform | None = field(default=None)

    def __post_init__(self) -> None:
        check_type(self.kind, "kind", str, "a kind's name, e.g. 'sampler' or 'step'")
        if self.vocab_sizes is not None:
            _check_vocab_pair(self.vocab_sizes)
        check_optional_integer(self.horizon, "horizon", min_value=1)
        check_optional_integer(self.examples, "examples", min_value=0)
        check_optional_integer(self.seed, "seed")
        check_optional_integer(self.uniform_bits, "uniform_bits", min_value=1)
        if self.budget is not None:
            check_type(self.budget, "budget", Budget, "a specexact.Budget or None")
        check_type(self.stateful, "stateful", bool, "True or False")
        check_type(self.one_hot_target, "one_hot_target", bool, "True or False")
        check_choice(self.floats, "floats", ("float64", "float32", None))
        check_type(self.arrays, "arrays", bool, "True or False")
        check_type(self.support_variants, "support_variants", tuple,
                   "a tuple of (callable, uniform_bits or None) pairs")
        check_type(self.grid_check, "grid_check", bool, "True or False")
        check_type(self.classify, "classify", bool, "True or False")
        if self.classify and not self.support_variants:
            msg = "classify=True needs support_variants (the code's dtype run)"
            raise InvalidArgument(msg)
        if self.uniform is not None:
            check_type(self.uniform, "uniform", Uniform, "a specexact.Uniform or None")
        if self.processors is not None:
            check_type(self.processors, "processors", ProcessorPipeline,
                       "a specexact.ProcessorPipeline or None")
        if self.arrays and self.floats is None:
            msg = "arrays=True needs floats='float64' or 'float32'"
            raise InvalidArgument(msg)
        # The kind's record: its name is registered, and the options given apply to it.
        kind_of(self).check_options(self)


@final
@dataclass(frozen=True)
class Finding:
    """A counterexample: the kind's exact witness and the verdict judged on it.

    Every report reads it through :class:`Judgement`; what is particular to a
    kind (rows, vocabularies, the float split) is in ``witness`` and in the
    kind's record (:mod:`specexact.audit.kinds`).
    """

    kind: str
    witness: Any
    verdict: Any

    @property
    def expected(self) -> Distribution | None:
        law: Distribution | None = self.verdict.expected
        return law

    @property
    def actual(self) -> Distribution | None:
        law: Distribution | None = self.verdict.actual
        return law

    @property
    def tv(self) -> Fraction | None:
        tv: Fraction | None = self.verdict.tv
        return tv

    @property
    def reason(self) -> str:
        return str(self.verdict.reason)

    @property
    def crash(self) -> str | None:
        crash = self.verdict.crash
        return None if crash is None else str(crash)

    def table(self, *, verbose: bool = True) -> str:
        return str(self.verdict.table(verbose=verbose))


@final
@dataclass(frozen=True)
class AuditResult:
    """The outcome of an audit: pass, or the first counterexample found."""

    kind: str
    name: str
    options: AuditOptions
    cases: int
    counterexample: Finding | None
    #: What was covered, in words ("27 edge cases and 200 generated cases, V = 2..4").
    coverage: str = ""
    #: Steps: the horizon the joint law was judged at (given, or chosen from the step).
    horizon: int | None = None
    #: Samplers: what is proven about the witness's minimality
    #: (:class:`specexact.properties.minimal.Minimality`), None when only shrunk greedily.
    minimality: Any = None
    #: Float audits: the mode in words ("floats (float64)", "grid (24-bit uniform)").
    mode: str | None = None
    #: What the kind's search reports beyond the witness (batches: each property's tally).
    details: Any = None
    #: With ``options.classify``: the class of the counterexample's finding (one of
    #: :data:`FINDING_CLASSES`), None otherwise.
    finding_class: str | None = None
    #: With ``options.classify``: the exact-only findings, each a note (never a FAIL).
    notes: tuple[Finding, ...] = ()

    @property
    def passed(self) -> bool:
        return self.counterexample is None


def _check_vocab_pair(sizes: Any) -> None:
    valid = "a pair (low, high) of integers with 1 <= low <= high"
    try:
        low, high = sizes
        check_integer(low, "low", min_value=1)
        check_integer(high, "high", min_value=low)
    except (TypeError, ValueError):
        fail("vocab_sizes", sizes, valid)


def parse_vocab_sizes(text: str) -> tuple[int, int]:
    """``"2..4"`` -> (2, 4); ``"3"`` -> (3, 3).  Raises InvalidArgument otherwise."""
    raw = text.strip()
    low_text, sep, high_text = raw.partition("..")
    if not sep:
        low_text = high_text = raw
    try:
        low, high = int(low_text), int(high_text)
    except ValueError:
        msg = f"vocabulary sizes {text!r} must look like 'A..B' (for example '2..4') or 'N'"
        raise InvalidArgument(msg) from None
    if not 1 <= low <= high:
        msg = f"vocabulary sizes {text!r} need 1 <= A <= B"
        raise InvalidArgument(msg)
    return low, high


def parse_integer(text: str, minimum: int) -> int:
    """``"3"`` -> 3; ValueError saying what is wrong (not an integer, below ``minimum``)."""
    try:
        value = int(text)
    except ValueError:
        msg = f"{text!r} is not an integer"
        raise ValueError(msg) from None
    if value < minimum:
        msg = f"{value} must be >= {minimum}"
        raise ValueError(msg)
    return value
