"""Auditing one sampler or step: hand-picked edge cases, then the Hypothesis search.

This is what ``specexact audit TARGET`` and :func:`specexact.assert_preserves_target`
run.  The result is an :class:`AuditResult`: pass, or the first (smallest)
counterexample with its exact witness.  An undecidable run (budget, hidden
randomness) raises :class:`~specexact.errors.Undecided`; it is never a pass.
"""

from __future__ import annotations

import dis
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal, final

from specexact.crossvocab import check_crossvocab_step
from specexact.distribution import Distribution
from specexact.errors import InvalidArgument, SpecexactError, Undecided
from specexact.exact.tree import Budget
from specexact.exact.verdict import Verdict, check_sampler, support_finding
from specexact.steps.decode import accepts_processors
from specexact.steps.processors import ProcessorPipeline
from specexact.steps.verdict import check_step
from specexact.validation import (
    check_choice,
    check_integer,
    check_optional_integer,
    check_type,
    fail,
)

__all__ = [
    "AuditOptions",
    "AuditResult",
    "CrossVocabCounterexample",
    "FloatCounterexample",
    "SamplerCounterexample",
    "StepCounterexample",
    "audit",
    "describe_callable",
    "detect_kind",
    "parse_vocab_sizes",
]

Kind = Literal["sampler", "step", "cross-vocab"]
KINDS: tuple[str, ...] = ("sampler", "step", "cross-vocab")

#: Default vocabularies: 2..5 for samplers (5 is the smallest size where a residual has
#: four positive entries next to a zero), 2..3 for steps, whose horizon is chosen from
#: the step itself (see :func:`specexact.properties.search_step`) unless given; cross-vocab: 2..4
#: tokens per vocabulary.
DEFAULT_VOCAB_SIZES: Mapping[str, tuple[int, int]] = {"sampler": (2, 5), "step": (2, 3),
                                                      "cross-vocab": (2, 4)}
#: The horizon of torch ``decode`` loops (max_new_tokens) and of cross-vocab audits
#: (characters of text) when none is given; step searches choose theirs from the step.
DEFAULT_HORIZON = 3
DEFAULT_SEED = 0
#: The grid every default audit also checks: torch.rand in float32, k / 2**24.
FLOAT32_UNIFORM_BITS = 24
#: ... and numpy's ``Generator.random()`` / torch.rand in float64, k / 2**53.
FLOAT64_UNIFORM_BITS = 53
_GRID_NAMES = {FLOAT32_UNIFORM_BITS: "float32 uniforms (rng.random() on k/2^24, as torch.rand "
                                     "draws it)",
               FLOAT64_UNIFORM_BITS: "float64 uniforms (rng.random() on k/2^53, as numpy's "
                                     "random() draws it)"}


@final
@dataclass(frozen=True)
class AuditOptions:
    """What an audit covers.  ``None`` fields take the kind's defaults.

    ``examples`` is the number of generated cases the Hypothesis search
    tries (``None``: the search's own default); ``seed`` makes the search
    reproducible; ``uniform_bits`` models ``rng.random()`` as a K-bit grid.
    """

    kind: Kind = "sampler"
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
    #: Samplers: judge float code (:func:`specexact.properties.search_floats`) on inputs of this
    #: format ("float64" or "float32"), as numpy arrays with ``arrays``.
    floats: str | None = None
    arrays: bool = False
    #: Faithful variants of the rule judged on every case after the exact check
    #: passes, for crashes, support violations and invalid ids only: pairs
    #: ``(variant, uniform_bits)``, e.g. torch code under float32 ``torch.rand``.
    support_variants: tuple[tuple[Any, int | None], ...] = ()
    #: With no ``uniform_bits`` and no ``support_variants``: judge each case passing
    #: exactly again with ``rng.random()`` on the float32 grid (as torch.rand draws
    #: it), for crashes and mass where the target has none.  False: ideal uniform only.
    grid_check: bool = True
    #: Steps: the processors and stopping (a :class:`specexact.ProcessorPipeline`) the
    #: step is called with; the reference is then the processed target's law.
    processors: Any = None

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", KINDS)
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
        if self.kind == "sampler" and (self.stateful or self.one_hot_target):
            msg = "stateful and one_hot_target apply to steps, not samplers"
            raise InvalidArgument(msg)
        if self.processors is not None:
            check_type(self.processors, "processors", ProcessorPipeline,
                       "a specexact.ProcessorPipeline or None")
            if self.kind != "step":
                msg = (f"processors apply to steps, not to kind={self.kind!r} (for a "
                       "sampler, give the processed p instead)")
                raise InvalidArgument(msg)
        if self.kind != "sampler" and self.floats is not None:
            msg = f"floats applies to samplers, not to kind={self.kind!r}"
            raise InvalidArgument(msg)
        if self.kind == "cross-vocab" and (self.stateful or self.one_hot_target):
            msg = "stateful and one_hot_target apply to same-vocabulary steps, not cross-vocab"
            raise InvalidArgument(msg)
        if self.arrays and self.floats is None:
            msg = "arrays=True needs floats='float64' or 'float32'"
            raise InvalidArgument(msg)

    @property
    def sizes(self) -> tuple[int, int]:
        return self.vocab_sizes or DEFAULT_VOCAB_SIZES[self.kind]



@final
@dataclass(frozen=True)
class SamplerCounterexample:
    """An exact (p, q) on which a sampler does not preserve p, with its verdict."""

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    verdict: Verdict

    @property
    def expected(self) -> Distribution:
        return self.verdict.expected

    @property
    def actual(self) -> Distribution | None:
        return self.verdict.actual

    @property
    def tv(self) -> Fraction | None:
        return self.verdict.tv

    @property
    def reason(self) -> str:
        return self.verdict.reason

    def table(self, *, verbose: bool = True) -> str:
        return self.verdict.table(verbose=verbose)


@dataclass(frozen=True)
class _JointLawCounterexample:
    """What the step and cross-vocab counterexamples share: a view of their verdict."""

    verdict: Any

    @property
    def horizon(self) -> int:
        return int(self.verdict.horizon)

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
    def crash(self) -> str | None:
        crash = self.verdict.crash
        return None if crash is None else str(crash)

    @property
    def reason(self) -> str:
        return str(self.verdict.reason)

    def table(self, *, verbose: bool = True) -> str:
        return str(self.verdict.table(verbose=verbose))


@final
@dataclass(frozen=True)
class StepCounterexample(_JointLawCounterexample):
    """Models on which a step's joint law over ``horizon`` tokens differs from the target's.

    Wraps the step verdict of :func:`specexact.check_step`; ``target`` and
    ``draft`` map every prefix the failing run asked for to its row.
    """

    @property
    def target(self) -> Mapping[tuple[int, ...], tuple[Fraction, ...]]:
        rows: Mapping[tuple[int, ...], tuple[Fraction, ...]] = self.verdict.target_rows
        return rows

    @property
    def draft(self) -> Mapping[tuple[int, ...], tuple[Fraction, ...]]:
        rows: Mapping[tuple[int, ...], tuple[Fraction, ...]] = self.verdict.draft_rows
        return rows

    @property
    def first_difference(self) -> tuple[int, ...] | None:
        comparison = self.verdict.comparison
        return None if comparison is None else comparison.first_difference

    @property
    def processors(self) -> Any:
        """The processors and stopping the step was judged under (None: none)."""
        return getattr(self.verdict, "processors", None)


@final
@dataclass(frozen=True)
class FloatCounterexample:
    """An exact (p, q) on which float code deviates beyond rounding, with its float verdict.

    ``verdict`` is a :class:`~specexact.floats.check.FloatVerdict`: the
    deviation split into structure and rounding, and what it found.
    """

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    verdict: Any

    @property
    def expected(self) -> Distribution:
        return Distribution.from_probabilities(self.p)

    @property
    def actual(self) -> Distribution | None:
        law: Distribution | None = self.verdict.actual
        return law

    @property
    def tv(self) -> Fraction:
        tv: Fraction = self.verdict.total_tv
        return tv

    @property
    def reason(self) -> str:
        return str(self.verdict.headline())

    def table(self, *, verbose: bool = True) -> str:
        """The split of the deviation, the findings and the laws (never cut: a few tokens).

        The headline is left out: it is :attr:`reason`.
        """
        _, _, rest = str(self.verdict.format()).partition("\n")
        return rest


@final
@dataclass(frozen=True)
class CrossVocabCounterexample(_JointLawCounterexample):
    """Two vocabularies and models on which a cross-vocabulary step's law of text differs
    from the target's (the verdict of :func:`specexact.crossvocab.check_crossvocab_step`)."""

    def model_lines(self) -> list[str]:
        lines: list[str] = self.verdict.models_lines()
        return lines


Counterexample = (SamplerCounterexample | StepCounterexample | FloatCounterexample
                  | CrossVocabCounterexample)


@final
@dataclass(frozen=True)
class AuditResult:
    """The outcome of an audit: pass, or the first counterexample found."""

    kind: Kind
    name: str
    options: AuditOptions
    cases: int
    counterexample: Counterexample | None
    #: What was covered, in words ("27 edge cases and 200 generated cases, V = 2..4").
    coverage: str = ""
    #: Steps: the horizon the joint law was judged at (given, or chosen from the step).
    horizon: int | None = None
    #: Samplers: what is proven about the witness's minimality
    #: (:class:`specexact.properties.minimal.Minimality`), None when only shrunk greedily.
    minimality: Any = None

    @property
    def passed(self) -> bool:
        return self.counterexample is None


# --------------------------------------------------------------------------
# Options and kinds
# --------------------------------------------------------------------------


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


_STEP_NAMES = frozenset({"target", "draft", "prefix", "target_model", "draft_model"})
_SAMPLER_NAMES = frozenset({"p", "q"})


def _binds(signature: inspect.Signature, count: int) -> bool:
    # A step may take the processors (specexact.ProcessorPipeline) as a fifth argument.
    extra = {"processors": None} if count == 4 and "processors" in signature.parameters \
        else {}
    try:
        signature.bind(*range(count), **extra)
    except TypeError:
        return False
    return True


def detect_kind(fn: Callable[..., Any]) -> Kind | None:
    """Guess 'sampler' or 'step' from ``fn``'s signature; None when it cannot tell.

    A sampler takes ``(p, q, rng)``, a step ``(target, draft, prefix, rng)``;
    extra parameters with defaults (a draft length, a tree width) are ignored.
    The number of arguments decides first, so a sampler written as
    ``(target, draft, rng)`` is a sampler; names decide only when both fit.
    A step whose code reads an attribute ``.vocab`` (``target.vocab``) is a
    cross-vocabulary step: same-vocabulary models have no vocabulary to read.
    """
    kind = _kind_from_signature(fn)
    if kind == "step" and _reads_vocab(fn):
        return "cross-vocab"
    return kind


def _reads_vocab(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s code (its nested functions and comprehensions included)
    reads an attribute named ``vocab``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(inspect.unwrap(fn), "__code__", None)
    stack = [code] if code is not None else []
    while stack:
        current = stack.pop()
        for instruction in dis.get_instructions(current):
            if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") \
                    and instruction.argval == "vocab":
                return True
        stack.extend(c for c in current.co_consts if inspect.iscode(c))
    return False


def _kind_from_signature(fn: Callable[..., Any]) -> Kind | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    three, four = _binds(signature, 3), _binds(signature, 4)
    if three != four:
        return "sampler" if three else "step"
    if not three:
        return None
    positional = [param for param in signature.parameters.values()
                  if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)]
    names = {param.name for param in positional}
    if "prefix" in names:
        return "step"
    if names >= _SAMPLER_NAMES:
        return "sampler"
    required = [param for param in positional if param.default is param.empty]
    if len(required) == 3:  # (target, draft, rng, temperature=1.0) is a sampler
        return "sampler"
    if names & _STEP_NAMES:
        return "step"
    return None


def describe_callable(fn: Callable[..., Any]) -> str:
    """A short name for reports: ``chain``, or ``chain(gamma=2)`` for a partial."""
    if isinstance(fn, functools.partial):
        bound = [repr(a) for a in fn.args] + [f"{k}={v!r}" for k, v in fn.keywords.items()]
        return f"{describe_callable(fn.func)}({', '.join(bound)})"
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


def describe_arity_problem(fn: Callable[..., Any], kind: Kind) -> str | None:
    """A message when ``fn`` cannot be called with the kind's arguments, else None."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    args = ("p", "q", "rng") if kind == "sampler" else ("target", "draft", "prefix", "rng")
    extra = {"processors": None} if kind == "step" and "processors" in signature.parameters \
        else {}
    try:
        signature.bind(*args, **extra)
    except TypeError as exc:
        return (f"a {kind} is called as fn({', '.join(args)}), but this function's "
                f"signature is {signature}: {exc}")
    return None


# --------------------------------------------------------------------------
# Running an audit
# --------------------------------------------------------------------------


def audit(fn: Callable[..., Any], options: AuditOptions | None = None, *,
          name: str | None = None,
          progress: Callable[[int], None] | None = None) -> AuditResult:
    """Audit ``fn`` (a sampler or a step, per ``options.kind``): edge cases, then search.

    Returns a passing :class:`AuditResult` or the shrunk counterexample.
    Raises :class:`~specexact.errors.Undecided` when some case could not be
    decided and no violation was found, and
    :class:`~specexact.errors.InvalidArgument` when ``fn`` cannot be called
    with the kind's arguments.  ``progress(cases_done)`` is called as exact
    cases are checked.
    """
    opts = options or AuditOptions()
    label = name or describe_callable(fn)
    problem = describe_arity_problem(fn, opts.kind)
    if problem is not None:
        raise InvalidArgument(problem)
    kwargs: dict[str, Any] = {"vocab_sizes": opts.sizes, "seed": opts.seed,
                              "budget": opts.budget, "settings": opts.settings,
                              "progress": progress}
    if opts.examples is not None:
        kwargs["examples"] = opts.examples
    variants = opts.support_variants
    note = ""
    if not variants and opts.kind == "step" and opts.uniform_bits is not None:
        # A step has no rounding tolerance: judged exactly with an ideal uniform, and on
        # the K-bit grid for what no rounding explains (crash, support, invalid ids).
        bits = opts.uniform_bits
        variants = ((fn, bits),)
        note = (f" Each case passing exactly was run again with rng.random() on the "
                f"{bits}-bit grid k/2^{bits} (0 included) and judged for crashes and mass "
                "where the target has none.")
    elif not variants and opts.grid_check and opts.uniform_bits is None \
            and opts.floats is None:
        # Faithful by default: rng.random() as torch.rand draws a float32, the grid
        # k / 2**24 with 0 included, where `u <= p / q` accepts a token with p = 0.
        variants = ((fn, FLOAT32_UNIFORM_BITS), (fn, FLOAT64_UNIFORM_BITS))
        note = (" Each case passing exactly was run again with rng.random() on the "
                "float32 grid k/2^24 and on the float64 grid k/2^53 (0 included, as "
                "torch.rand and numpy draw them) and judged for crashes and mass where the "
                "target has none.")
    if opts.floats is not None:
        from specexact.properties import search_floats

        result = search_floats(fn, fmt=opts.floats, arrays=opts.arrays,
                               uniform_bits=opts.uniform_bits, **kwargs)
    elif opts.kind == "sampler":
        from specexact.properties import search_sampler

        result = search_sampler(fn, uniform_bits=opts.uniform_bits,
                                support_variants=variants, **kwargs)
    elif opts.kind == "cross-vocab":
        from specexact.properties import search_crossvocab

        depth = opts.horizon if opts.horizon is not None else DEFAULT_HORIZON
        result = search_crossvocab(fn, horizon=depth, uniform_bits=opts.uniform_bits,
                                   support_variants=variants, **kwargs)
        result = replace(result, horizon=depth)
    else:
        from specexact.properties import search_processed_step, search_step

        # A step that takes processors and was given none is judged under a panel of
        # pipelines (one per processor kind, and stopping).
        search = search_processed_step if opts.processors is None \
            and accepts_processors(fn) else search_step
        step_options = {} if search is search_processed_step \
            else {"processors": opts.processors}
        result = search(fn, horizon=opts.horizon, stateful=opts.stateful,
                        one_hot_target=opts.one_hot_target, support_variants=variants,
                        **step_options, **kwargs)
    if result.status == "undecided":
        error = result.error
        if isinstance(error, BaseException):
            raise error
        msg = f"the audit of {label} could not reach a verdict: {result.covered}"
        raise Undecided(msg)
    covered = result.covered + note
    grids = [bits for variant, bits in variants if variant is fn and bits is not None]
    grid = _only_on_the_grid(fn, opts, result, grids) \
        if note and grids and result.status == "fail" else None
    if grid is not None:
        name = _GRID_NAMES.get(grid, f"{grid}-bit uniforms (rng.random() on k/2^{grid})")
        covered += f" The failure shows only under {name}, not with an ideal uniform."
    elif result.status == "fail" and any(variant is not fn and bits is None
                                         for variant, bits in variants) \
            and _only_on_the_grid(fn, opts, result, [0]) is not None:
        # Torch mode: the faithful variant draws torch.rand on its dtype's grid.
        covered += (" The failure shows only under torch.rand's grid for the dtype "
                    "(k/2^24 for float32, 0 included), not with an ideal uniform.")
    if result.status == "pass":
        return AuditResult(opts.kind, label, opts, result.cases, None, covered, result.horizon)
    found: Counterexample
    if opts.floats is not None:
        found = FloatCounterexample(result.witness.p, result.witness.q, result.verdict)
    elif opts.kind == "sampler":
        found = _sampler_counterexample(result)
    elif opts.kind == "cross-vocab":
        found = CrossVocabCounterexample(result.verdict)
    else:
        found = _step_counterexample(result)
    return AuditResult(opts.kind, label, opts, result.cases, found, covered, result.horizon,
                       result.minimality)


def _only_on_the_grid(fn: Callable[..., Any], opts: AuditOptions, result: Any,
                      grids: Sequence[int]) -> int | None:
    """The first of ``grids`` (bits) whose uniforms alone make the witness fail, or None.

    None when the witness fails with an ideal uniform too (or cannot be re-run);
    with one grid, that grid whenever the witness passes with an ideal uniform.
    """
    witness = result.witness
    if witness is None:
        return None

    def verdict(bits: int | None) -> Any:
        if opts.kind == "sampler":
            return check_sampler(fn, witness.p, witness.q, budget=opts.budget,
                                 uniform_bits=bits)
        if opts.kind == "cross-vocab":
            return check_crossvocab_step(fn, witness.target, witness.draft, witness.horizon,
                                         budget=opts.budget, uniform_bits=bits)
        return check_step(fn, witness.target, witness.draft, witness.horizon,
                          budget=opts.budget, uniform_bits=bits,
                          processors=getattr(witness, "processors", None) or opts.processors)

    try:
        if not verdict(None).passed:
            return None
        # A grid moves acceptance probabilities by rounding; only a finding counts.
        for bits in grids[:-1]:
            if support_finding(verdict(bits)):
                return bits
        return grids[-1]
    except SpecexactError:  # no verdict with the ideal uniform: say nothing more
        return None


def _sampler_counterexample(result: Any) -> SamplerCounterexample:
    verdict = result.verdict
    witness = result.witness
    p = tuple(witness.p) if witness is not None else tuple(verdict.p)
    q = tuple(witness.q) if witness is not None else tuple(verdict.q)
    return SamplerCounterexample(p, q, verdict)


def _step_counterexample(result: Any) -> StepCounterexample:
    return StepCounterexample(result.verdict)
