"""The exact joint law of a multi-step decode, composed from per-prefix step laws.

A decoding step is ``step(target, draft, prefix, rng) -> tuple[int, ...]``: it
reads next-token laws from ``target(prefix)`` and ``draft(prefix)`` and returns
the tokens it appends (at least one).  Running it repeatedly from the empty
prefix emits a random sequence; :func:`decode_distribution` gives the exact law
of its first ``horizon`` tokens.

Instead of replaying whole decodes, the law of one step is enumerated once per
reachable *state* (the prefix, plus the models' caches when they are stateful)
and the states are composed level by level: a step always emits at least one
token, so processing states by prefix length visits each exactly once.
Tokens the step returns untouched stay lazy and are folded without branching;
output beyond the horizon is cut off before folding, so a lazy token past the
horizon is never expanded.  A model row whose prefix holds a token nobody has
inspected yet is looked up only when read (see ``specexact.steps.models``), so
drafts after a rejection are not branched on.  The per-prefix enumeration is
:mod:`specexact.steps.enumeration`, an adapter of the one enumerator
(:mod:`specexact.exact.enumerator`).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specexact.distribution import Distribution
from specexact.errors import BudgetExceeded, InvalidArgument
from specexact.exact.tree import METER, Budget
from specexact.numbers import ONE, ZERO
from specexact.steps.enumeration import enumerate_step
from specexact.steps.levels import LevelEvidence, level_executor, split_level
from specexact.steps.models import CachedModel, RecordingModel, StatefulModel
from specexact.steps.processors import ProcessorPipeline
from specexact.validation import check_integer, fail

__all__ = [
    "CacheDivergence",
    "DecodeClock",
    "DecodeRun",
    "ModelSide",
    "Step",
    "accepts_processors",
    "check_horizon",
    "check_processors",
    "compose_decode",
    "compose_levels",
    "decode_distribution",
    "prepare_sides",
    "recorded_target_law",
    "run_decode",
    "step_law",
    "target_distribution",
]

Prefix = tuple[int, ...]
#: A decode's state: the prefix emitted and the two caches (None when stateless).
State = tuple[Prefix, Prefix | None, Prefix | None]
#: ``step(target, draft, prefix, rng) -> tuple of tokens``.
Step = Callable[[Any, Any, Prefix, Any], Any]


@dataclass(frozen=True)
class CacheDivergence:
    """A stateful model whose cache did not hold exactly the emitted prefix after a step."""

    model: str
    prefix: Prefix
    emitted: Prefix
    cache: Prefix
    probability: Fraction

    def __str__(self) -> str:
        return (f"after the step at prefix {self.prefix} emitted {self.emitted} "
                f"(probability {self.probability}), the {self.model} cache held "
                f"{self.cache} instead of {self.prefix + self.emitted}")


class ModelSide:
    """One model as the engine handles it: what the step gets, and how rows are recorded.

    Made by :func:`prepare_sides`."""

    def __init__(self, model: Any, name: str, vocab_size: int | None) -> None:
        self.name = name
        self.original = model
        self.stateful = False
        self.recorder: RecordingModel | None = None
        if isinstance(model, CachedModel):
            self.recorder = RecordingModel(model.model, name=name, vocab_size=vocab_size)
            self.handed: Any = model.with_model(self.recorder)
            self.stateful = True
        elif isinstance(model, StatefulModel):
            # A stateful model of the user's own: reset and read its cache, and
            # record through its stateless view when it has one.
            self.handed = model
            self.stateful = True
            if callable(model):
                self.recorder = RecordingModel(model, name=name, vocab_size=vocab_size)
        elif callable(model):
            self.recorder = RecordingModel(model, name=name, vocab_size=vocab_size)
            self.handed = self.recorder
        else:
            msg = (f"{name}={model!r} is not a model; give a callable prefix -> "
                   "probabilities, or a stateful model such as specexact.steps.models.CachedModel")
            raise InvalidArgument(msg)

    @property
    def rows(self) -> dict[Prefix, tuple[Fraction, ...]]:
        return {} if self.recorder is None else self.recorder.asked

    def witness_rows(self) -> dict[Prefix, tuple[Fraction, ...]]:
        """The rows read, and those asked but never read (a concrete replay needs them)."""
        return {} if self.recorder is None else self.recorder.witness_rows()

    def cache(self) -> Prefix | None:
        return tuple(self.handed.cache) if self.stateful else None

    def start_cache(self) -> Prefix | None:
        return () if self.stateful else None

    def reset(self, cache: Prefix | None) -> None:
        if self.stateful:
            self.handed.reset(cache or ())


@dataclass
class DecodeRun:
    """Everything one decode produced: the law, the rows asked, the cache check."""

    law: Distribution
    horizon: int
    vocab_size: int
    target_rows: dict[Prefix, tuple[Fraction, ...]]
    draft_rows: dict[Prefix, tuple[Fraction, ...]]
    divergence: CacheDivergence | None = None
    #: Step laws enumerated: one per reachable state (prefix, and caches if stateful).
    states: int = 0


def check_horizon(horizon: Any) -> int:
    """``horizon`` as an int >= 1, or InvalidArgument saying what is valid."""
    try:
        return check_integer(horizon, "horizon", min_value=1)
    except InvalidArgument:
        fail("horizon", horizon, "an integer >= 1 (the number of tokens to decode)")


class DecodeClock:
    """One time budget across the many enumerations of a decode.

    ``next_budget(resolved)`` is the budget of the next enumeration: ``budget`` with
    ``max_seconds`` cut to what is left, or :class:`~specexact.errors.BudgetExceeded`
    (``"{what} exceeded max_seconds=..."``, with the mass resolved so far) when
    nothing is left.  Shared by the decodes of :mod:`specexact.steps` and
    :mod:`specexact.crossvocab`.
    """

    def __init__(self, budget: Budget | None, what: str = "decoding") -> None:
        self.budget = budget or Budget()
        self.what = what
        limit = self.budget.max_seconds
        self.deadline = None if limit is None else time.monotonic() + limit
        self.start = METER.operations

    def next_budget(self, resolved: Fraction, where: Hashable = None) -> Budget:
        """The next enumeration's budget; ``resolved`` is the mass of the decode settled
        so far, ``where`` the decoding state the next enumeration starts from (for the
        report)."""
        path = None if where is None else (f"decoding state {where!r}",)
        budget = self.budget
        used = METER.operations - self.start
        left_ops = budget.max_total_operations - used
        if left_ops <= 0:
            msg = (f"{self.what} needed more than max_total_operations="
                   f"{budget.max_total_operations} operations on random values in all")
            raise BudgetExceeded(msg, resolved_mass=resolved, limit="max_total_operations",
                                 path=path)
        if self.deadline is None:
            return budget if used == 0 else \
                dataclasses.replace(budget, max_total_operations=left_ops)
        left = self.deadline - time.monotonic()
        if left <= 0:
            msg = f"{self.what} exceeded max_seconds={self.budget.max_seconds}"
            raise BudgetExceeded(msg, resolved_mass=resolved, limit="max_seconds",
                                 path=path)
        return dataclasses.replace(budget, max_seconds=left, max_total_operations=left_ops)


def accepts_processors(step: Any) -> bool:
    """Whether ``step`` takes the ``processors`` keyword (or any keyword)."""
    try:
        parameters = inspect.signature(step).parameters.values()
    except (TypeError, ValueError):
        return False
    return any((p.name == "processors" and p.kind != p.POSITIONAL_ONLY)
               or p.kind == p.VAR_KEYWORD for p in parameters)


def check_processors(processors: Any) -> ProcessorPipeline | None:
    """The pipeline the engine applies: None for none or an identity pipeline."""
    if processors is None:
        return None
    if not isinstance(processors, ProcessorPipeline):
        fail("processors", processors, "a specexact.ProcessorPipeline or None")
    return None if processors.identity else processors


def _bind(step: Step, processors: ProcessorPipeline | None) -> Step:
    """The step as the engine calls it: with ``processors=`` when there are some and
    it takes them (a step that does not take them ignores them, and is judged so)."""
    if processors is None or not accepts_processors(step):
        return step

    def bound(target: Any, draft: Any, prefix: Prefix, rng: Any) -> Any:
        return step(target, draft, prefix, rng, processors=processors)  # type: ignore[call-arg]

    return bound


def _enumerate_step(step: Step, target: ModelSide, draft: ModelSide, prefix: Prefix,
                    caches: tuple[Prefix | None, Prefix | None], budget: Budget,
                    uniform_bits: int | None, vocab_size: int, keep: int | None
                    ) -> dict[Hashable, Fraction]:
    """The law of one step's output at one state, cut to ``keep`` tokens when stateless
    (when stateful: ``(tokens, target cache, draft cache)``, never cut)."""
    stateful = target.stateful or draft.stateful
    t_handed, d_handed = target.handed, draft.handed

    recorders = [side.recorder for side in (target, draft) if side.recorder is not None]

    def run(rng: Any) -> Any:
        if not stateful:
            out = step(t_handed, d_handed, prefix, rng)
            for recorder in recorders:
                recorder.settle()
            return out
        target.reset(caches[0])
        draft.reset(caches[1])
        out = step(t_handed, d_handed, prefix, rng)
        for recorder in recorders:
            recorder.settle()
        return (out, target.cache(), draft.cache())

    context: dict[str, Any] = {"prefix": prefix}
    if target.stateful:
        context["target cache"] = caches[0]
    if draft.stateful:
        context["draft cache"] = caches[1]

    def input_error() -> BaseException | None:
        for side in (target, draft):
            if side.recorder is not None and side.recorder.error is not None:
                return side.recorder.error
        return None

    return enumerate_step(run, prefix=prefix, vocab_size=vocab_size,
                          keep=None if stateful else keep, stateful=stateful,
                          budget=budget, uniform_bits=uniform_bits, context=context,
                          input_error=input_error)


def prepare_sides(target: Any, draft: Any) -> tuple[ModelSide, ModelSide, int]:
    """Both models as the engine handles them (the draft defaults to the target) and the
    vocabulary size read off the target's first row."""
    if draft is None:
        draft = target
    t = ModelSide(target, "target", None)
    if t.recorder is None:
        msg = ("the target must answer target(prefix) so that its own law can be computed; "
               f"{target!r} is stateful without a stateless view (CachedModel has one)")
        raise InvalidArgument(msg)
    vocab_size = len(t.recorder.row(()))
    d = ModelSide(draft, "draft", vocab_size)
    return t, d, vocab_size


def run_decode(step: Step, target: Any, draft: Any, horizon: int, *,
               budget: Budget | None = None, uniform_bits: int | None = None,
               processors: ProcessorPipeline | None = None) -> DecodeRun:
    """Decode exactly and keep the evidence (rows asked, cache check) with the law.

    :func:`decode_distribution` returns only ``.law``; :func:`check_step`
    uses the rest for its witness.
    """
    horizon = check_horizon(horizon)
    pipeline = check_processors(processors)
    clock = DecodeClock(budget)
    t, d, vocab_size = prepare_sides(target, draft)
    run = DecodeRun(Distribution(), horizon, vocab_size, t.rows, d.rows)
    compose_decode(step, t, d, run, clock, uniform_bits, pipeline)
    return run


def compose_levels(start: Hashable, horizon: int, clock: DecodeClock,
                   step_law: Callable[[Any, int, Budget], Mapping[Hashable, Fraction]],
                   advance: Callable[[Any, Any, Fraction], tuple[int | None, Hashable]],
                   evidence: LevelEvidence | None = None
                   ) -> tuple[dict[Hashable, Fraction], int]:
    """The law of a decode's finished outcomes, composed level by level from ``start``.

    ``step_law(state, keep, budget)`` is the law of one step's outcome at ``state``
    (``keep`` is how many tokens the horizon still wants); ``advance(state, outcome,
    weight)`` says where the outcome goes: ``(level, next_state)`` while the decode goes
    on (``level`` > the state's own, below ``horizon``), ``(None, key)`` when it is
    finished under ``key``.  Each state is enumerated once, as every step moves the
    decode at least one level on.  Returns the finished law and the states enumerated.
    The one composition of :mod:`specexact.steps` (levels are tokens) and
    :mod:`specexact.crossvocab` (levels are characters).

    With ``evidence`` (what ``step_law`` records besides the law) and an executor
    made current by :func:`specexact.using_executor`, a large level's laws are
    enumerated on the executor (:mod:`specexact.steps.levels`) and folded here in
    the level's order: the result is the serial one, byte for byte.
    """
    levels: list[dict[Hashable, Fraction]] = [{} for _ in range(horizon)]
    levels[0][start] = ONE
    final: dict[Hashable, Fraction] = {}
    resolved = ZERO
    states = 0
    for length in range(horizon):
        states_here = levels[length]
        laws = None if evidence is None else _split(states_here, horizon - length, clock,
                                                      resolved, step_law, evidence)
        for index, (state, mass) in enumerate(states_here.items()):
            if laws is not None:
                law = laws[index]
            else:
                try:
                    law = step_law(state, horizon - length,
                                   clock.next_budget(resolved, state))
                except BudgetExceeded as exc:  # say where the decode stopped, and its mass
                    exc.resolved_mass = resolved
                    exc.path = (f"decoding state {state!r}", *(exc.path or ()))
                    raise
            states += 1
            for outcome, prob in law.items():
                weight = mass * prob
                level, key = advance(state, outcome, weight)
                if level is None:
                    final[key] = final.get(key, ZERO) + weight
                    resolved += weight
                else:
                    nxt = levels[level]
                    nxt[key] = nxt.get(key, ZERO) + weight
        levels[length] = {}
    return final, states


def _split(level: dict[Hashable, Fraction], keep: int, clock: DecodeClock,
           resolved: Fraction, step_law: Callable[[Any, int, Budget], Mapping[Hashable, Fraction]],
           evidence: LevelEvidence) -> list[Mapping[Hashable, Fraction]] | None:
    """The level's laws from the current executor, or None to enumerate it here."""
    executor = level_executor(len(level))
    if executor is None:
        return None
    try:
        budget = clock.next_budget(resolved)
    except BudgetExceeded:
        return None  # the serial loop raises it, naming the state
    used = METER.operations - clock.start
    return split_level(executor, list(level), keep, step_law, budget,
                       clock.budget.max_total_operations - used, evidence)


class _Rows:
    """The rows the two models' recorders read: the evidence a split level sends back."""

    def __init__(self, sides: tuple[ModelSide, ...]) -> None:
        self.recorders = [side.recorder for side in sides if side.recorder is not None]
        #: In a worker: how far each recorder's rows were already sent back (a worker
        #: runs several batches on the same recorders; each sends only its new rows).
        self.sent: list[tuple[int, frozenset[Any]]] | None = None

    def mark(self) -> Any:
        return [(len(r.asked), frozenset(r.deferred)) for r in self.recorders]

    def taken(self, mark: Any) -> Any:
        out = []
        sent = []
        for recorder, (asked, deferred), before in zip(self.recorders, mark,
                                                      self.sent or mark, strict=True):
            recorder.settle()
            start = max(asked, before[0])
            rows = list(itertools.islice(recorder.asked.items(), start, None))
            out.append((rows, recorder.deferred - deferred - before[1]))
            sent.append((len(recorder.asked), frozenset(recorder.deferred)))
        self.sent = sent
        return out

    def merge(self, taken: Any) -> None:
        for recorder, (rows, deferred) in zip(self.recorders, taken, strict=True):
            for prefix, row in rows:
                recorder.asked.setdefault(prefix, row)
            recorder.deferred |= deferred


def compose_decode(step: Step, t: ModelSide, d: ModelSide, run: DecodeRun, clock: DecodeClock,
                   uniform_bits: int | None, processors: ProcessorPipeline | None = None
                   ) -> None:
    """Fill ``run`` with the decode's law (and cache check), composing the step laws level
    by level.  With stopping, a sequence that stopped is final; a step output running past
    the stop is kept as emitted (the tokens after the stop are the bug the comparison then
    shows)."""
    step = _bind(step, processors)
    horizon, vocab_size = run.horizon, run.vocab_size
    stateful = t.stateful or d.stateful
    divergence: CacheDivergence | None = None

    def law_at(state: State, keep: int, budget: Budget) -> Mapping[Hashable, Fraction]:
        prefix, tc, dc = state
        return _enumerate_step(step, t, d, prefix, (tc, dc), budget, uniform_bits, vocab_size,
                               keep)

    def advance(state: State, outcome: Any, weight: Fraction) -> tuple[int | None, Hashable]:
        nonlocal divergence
        prefix = state[0]
        out: Prefix
        out, new_tc, new_dc = outcome if stateful else (outcome, None, None)
        emitted = prefix + out
        for side, cache in ((t, new_tc), (d, new_dc)):
            if side.stateful and cache != emitted:
                found = CacheDivergence(side.name, prefix, out, cache or (), weight)
                if divergence is None or _earlier(found, divergence):
                    divergence = found
        stopped = processors is not None \
            and processors.stop_length(emitted, len(prefix)) is not None
        if stopped or len(emitted) >= horizon:
            return None, emitted[:horizon]
        return len(emitted), (emitted, new_tc, new_dc)

    final, run.states = compose_levels(((), t.start_cache(), d.start_cache()), horizon, clock,
                                       law_at, advance, _Rows((t, d)))
    run.law = Distribution(final)
    run.divergence = divergence


def _earlier(a: CacheDivergence, b: CacheDivergence) -> bool:
    ka = (len(a.prefix + a.emitted), a.prefix + a.emitted, a.model)
    kb = (len(b.prefix + b.emitted), b.prefix + b.emitted, b.model)
    return ka < kb


def decode_distribution(step: Step, target: Any, draft: Any, horizon: int, *,
                        budget: Budget | None = None, uniform_bits: int | None = None,
                        processors: ProcessorPipeline | None = None) -> Distribution:
    """Exact joint law of the first ``horizon`` tokens emitted by running ``step`` repeatedly.

    ``target`` and ``draft`` are models (callables ``prefix -> probabilities``)
    or stateful :class:`~specexact.steps.models.CachedModel` objects.  The result maps
    each tuple of ``horizon`` token ids to its probability.  With ``processors``
    (a :class:`~specexact.steps.processors.ProcessorPipeline`) the step is called with
    ``processors=`` and a sequence that stopped is kept shorter than ``horizon``.

    Raises :class:`~specexact.errors.InvalidOutput` when the step returns an
    empty tuple, a non-token or an id outside the vocabulary,
    :class:`~specexact.errors.SamplerRaised` when it raises (the prefix is in
    the error's context), :class:`~specexact.errors.InvalidDistribution` for a
    malformed model row (naming the prefix), and
    :class:`~specexact.errors.BudgetExceeded` when it does not finish.

    >>> from specexact.steps.models import ContextFreeModel
    >>> def plain(target, draft, prefix, rng):
    ...     return (rng.categorical(target(prefix)),)
    >>> decode_distribution(plain, ContextFreeModel(["1/3", "2/3"]), None, 2)
    Distribution({(0, 0): 1/9, (0, 1): 2/9, (1, 0): 2/9, (1, 1): 4/9})
    """
    return run_decode(step, target, draft, horizon, budget=budget,
                      uniform_bits=uniform_bits, processors=processors).law


def step_law(step: Step, target: Any, draft: Any, prefix: Prefix = (), *,
             budget: Budget | None = None, uniform_bits: int | None = None,
             processors: ProcessorPipeline | None = None) -> Distribution:
    """The exact law of the tuple one call of ``step`` emits at ``prefix`` (validated).

    Stateful models start with their cache holding ``prefix``.
    """
    step = _bind(step, check_processors(processors))
    t, d, vocab_size = prepare_sides(target, draft)
    prefix = tuple(prefix)
    start = (prefix if t.stateful else None, prefix if d.stateful else None)
    law = _enumerate_step(step, t, d, prefix, start, DecodeClock(budget).next_budget(ZERO),
                          uniform_bits, vocab_size, None)
    out: dict[Hashable, Fraction] = {}
    for outcome, prob in law.items():
        emitted = outcome[0] if (t.stateful or d.stateful) else outcome  # type: ignore[index]
        out[emitted] = out.get(emitted, ZERO) + prob
    return Distribution(out)


def target_distribution(target: Any, horizon: int, *, budget: Budget | None = None,
                        processors: ProcessorPipeline | None = None) -> Distribution:
    """The target's own joint law of its first ``horizon`` tokens (plain sampling).

    With ``processors``, each row is the processed law after the emitted prefix and a
    sequence that stopped (EOS, a stop sequence, max_new_tokens) ends there.

    >>> from specexact.steps.models import ContextFreeModel
    >>> target_distribution(ContextFreeModel(["1/2", "1/2"]), 1)
    Distribution({(0,): 1/2, (1,): 1/2})
    """
    horizon = check_horizon(horizon)
    side = ModelSide(target, "target", None)
    if side.recorder is None:
        msg = f"the target {target!r} has no stateless view target(prefix)"
        raise InvalidArgument(msg)
    return recorded_target_law(side.recorder, horizon, DecodeClock(budget),
                               check_processors(processors))


def recorded_target_law(recorder: RecordingModel, horizon: int, clock: DecodeClock,
                        processors: ProcessorPipeline | None = None) -> Distribution:
    """The target's own joint law of ``horizon`` tokens, read through ``recorder``."""
    layer: dict[Prefix, Fraction] = {(): ONE}
    final: dict[Prefix, Fraction] = {}
    for _ in range(horizon):
        nxt: dict[Prefix, Fraction] = {}
        for prefix, mass in layer.items():
            clock.next_budget(ZERO)
            try:
                row: tuple[Fraction, ...] = recorder.row(prefix)
            except LookupError as exc:
                msg = f"computing the target's own law: {exc}"
                raise InvalidArgument(msg) from exc
            if processors is not None:
                row = processors(prefix, row)
            for token, prob in enumerate(row):
                if prob:
                    seq = (*prefix, token)
                    into = final if processors is not None and processors.finished(seq) \
                        else nxt
                    into[seq] = mass * prob
        layer = nxt
    final.update(layer)
    return Distribution(final.items())

