"""Searching for exact counterexamples to a decoding step's joint law.

The same run as :func:`specexact.properties.search_sampler`
(:func:`specexact.properties.runner.run_search`), with models for cases: hand-picked model pairs
first (context-free pairs from the sampler edge cases, and context-dependent
ones where the target changes after one token), then a seeded Hypothesis
search over :class:`~specexact.properties.step_strategies.ModelSpec`, then shrinking:
a shorter horizon, fewer prefix overrides, then simpler rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from hypothesis import settings as Settings

from specexact.errors import SpecexactError
from specexact.exact.tree import Budget
from specexact.properties.constants import code_constants, constant_pairs, constants_family
from specexact.properties.edge_cases import sampler_edge_cases
from specexact.properties.runner import (
    Adapter,
    Progress,
    SearchResult,
    rule_checks,
    rule_key,
    search,
)
from specexact.properties.search import shrink_pair
from specexact.properties.step_strategies import STEP_MODEL_KINDS, ModelSpec, model_specs
from specexact.properties.strategies import vocab_range
from specexact.steps import step_law
from specexact.steps.processors import ProcessorPipeline, ProcessorsExhausted
from specexact.steps.verdict import StepVerdict, check_step
from specexact.validation import check_integer
from specexact.witness import StepWitness

__all__ = [
    "DEFAULT_STEP_EXAMPLES",
    "DEFAULT_STEP_VOCAB_SIZES",
    "FULL_VOCAB_SIZE",
    "LATE_TOKEN_HORIZON",
    "MAX_AUTO_HORIZON",
    "MIN_AUTO_HORIZON",
    "StepWitness",
    "choose_horizon",
    "full_depth_specs",
    "late_token_specs",
    "search_step",
    "step_edge_cases",
]

Probs = tuple[Fraction, ...]
DEFAULT_STEP_EXAMPLES = 60
#: The horizon chosen from a step is its longest output on the edge cases, within these
#: bounds (position-dependent edge cases judge one call more, see DEEP_HORIZON).
MIN_AUTO_HORIZON = 3
MAX_AUTO_HORIZON = 4
DEFAULT_STEP_VOCAB_SIZES = (2, 3)
#: Larger vocabularies tried as context-free edge cases, on the first WIDE_HORIZON tokens,
#: when the search has the default sizes.
WIDE_VOCAB_SIZES = (4, 5)
WIDE_HORIZON = 2
#: At most how deep position-dependent edge cases judge a step (its longest output + 1).
DEEP_HORIZON = 5
#: The vocabulary at which every token of a step is judged by default (the whole
#: horizon: gamma + 1 tokens of a chain, a tree's deepest level), on FULL_CASES cases.
FULL_VOCAB_SIZE = 4
#: A step whose calls emit more than MAX_AUTO_HORIZON tokens (a gamma = 4 chain) is also
#: judged on all of them, up to this many, at FULL_VOCAB_SIZE on the late-token cases
#: (:func:`late_token_specs`, drafts of one token keep them cheap).  Measured on a chain:
#: about 0.5 CPU s a case at 5 tokens, 3 s at 6, 12 s at 7 (the prefixes grow as 4^n).
LATE_TOKEN_HORIZON = 6

_STEP_EDGE_FAMILIES = ("context-free sheet examples", "p = q", "zeros in q", "disjoint",
                       "one-hot", "vocabulary 3", "fine differences (2^-10, 2^-20, 2^-30)",
                       "target changing after token 0")


@dataclass(frozen=True)
class _Case:
    spec: ModelSpec
    horizon: int


def _hot(v: int, i: int) -> Probs:
    return tuple(Fraction(int(t == i)) for t in range(v))


def step_edge_cases(low: int, high: int, *, one_hot_target: bool = False,
                    constants: Sequence[Fraction] = ()) -> list[ModelSpec]:
    """Hand-picked model pairs for vocabularies in ``[low, high]`` (at most 3 tokens);
    context-free pairs at the step's ``constants`` come last."""
    top = min(high, 3)
    specs: list[ModelSpec] = []
    for p, q in sampler_edge_cases(low, top):
        if one_hot_target and sorted(p)[-1] != 1:
            continue
        specs.append(ModelSpec((p, q)))
    for v in range(max(low, 2), top + 1):
        ramp = tuple(Fraction(i + 1, v * (v + 1) // 2) for i in range(v))
        uniform = tuple(Fraction(1, v) for _ in range(v))
        if one_hot_target:
            specs.append(ModelSpec((_hot(v, 0), uniform), (((0,), _hot(v, v - 1), uniform),)))
            continue
        # The target changes after token 0 (stale contexts, wrong positions, caches).
        specs.append(ModelSpec((uniform, ramp), (((0,), ramp[::-1], ramp),)))
        specs.append(ModelSpec((ramp, ramp), (((0,), uniform, uniform),)))
        specs.append(ModelSpec((uniform, _hot(v, 0)), (((1,), _hot(v, 1), uniform),)))
    for p, q in constant_pairs(constants, low, top):
        if not one_hot_target:
            specs.append(ModelSpec((p, q)))
    return specs


def full_depth_specs(v: int = FULL_VOCAB_SIZE) -> list[ModelSpec]:
    """Models at ``v`` tokens judged on a step's whole output: rows with ``v`` distinct
    positive entries (a top-k cut of fewer than ``v`` changes them), equal rows (every
    draft accepted, so the bonus token is drawn), a zero in the draft, and a target
    that changes after the first token and after a rejection's token."""
    ramp = tuple(Fraction(i + 1, v * (v + 1) // 2) for i in range(v))
    uniform = tuple(Fraction(1, v) for _ in range(v))
    zero_q = tuple(Fraction(int(i > 0), v - 1) for i in range(v))
    return [
        ModelSpec((ramp, ramp)),
        ModelSpec((ramp, uniform)),
        ModelSpec((uniform, ramp)),
        ModelSpec((ramp[::-1], zero_q)),
        ModelSpec((ramp, ramp), (((0,), ramp[::-1], ramp[::-1]),)),
        ModelSpec((uniform, ramp), (((0,), ramp[::-1], ramp), ((v - 1,), ramp, uniform))),
    ]


def late_token_specs(v: int = FULL_VOCAB_SIZE) -> list[ModelSpec]:
    """Models at ``v`` tokens on which a long step's every token is cheap to judge: equal
    rows with ``v`` distinct entries (every draft accepted, the bonus drawn from a row a
    top-k cut changes), a one-hot draft on the target's largest entry and on its smallest
    (each draft accepted or rejected, against a full target row, at every position), and a
    target that reverses after that token, with the draft moving to the other end.  A
    one-hot draft makes one draft path a call, so the joint law of 5 or 6 tokens costs
    about what the full-depth cases cost at 4."""
    ramp = tuple(Fraction(i + 1, v * (v + 1) // 2) for i in range(v))
    return [
        ModelSpec((ramp, ramp)),
        ModelSpec((ramp, _hot(v, v - 1))),
        ModelSpec((ramp, _hot(v, 0))),
        ModelSpec((ramp, _hot(v, v - 1)), (((v - 1,), ramp[::-1], _hot(v, 0)),)),
    ]


def _positional_specs(length: int) -> list[ModelSpec]:
    """Two-token models whose rows depend on the position only, alternating, for every
    prefix shorter than ``length`` (the default row beyond)."""
    third, half = Fraction(1, 3), Fraction(1, 2)
    quarter = Fraction(1, 4)
    rows = [((2 * third, third), (half, half), (third, 2 * third), (half, half)),
            ((half, half), (3 * quarter, quarter), (quarter, 3 * quarter), (half, half))]
    specs = []
    for even_p, even_q, odd_p, odd_q in rows:
        overrides = []
        for n in range(length):
            for prefix in itertools.product(range(2), repeat=n):
                p, q = (even_p, even_q) if n % 2 == 0 else (odd_p, odd_q)
                overrides.append((prefix, p, q))
        default = (even_p, even_q) if length % 2 == 0 else (odd_p, odd_q)
        specs.append(ModelSpec(default, tuple(overrides)))
    return specs


def _simpler_specs(spec: ModelSpec) -> list[ModelSpec]:
    out = [ModelSpec(spec.default)] if spec.overrides else []
    for i in range(len(spec.overrides)):
        out.append(replace(spec, overrides=spec.overrides[:i] + spec.overrides[i + 1:]))
    for i, (prefix, a, b) in enumerate(spec.overrides):
        if len(prefix) > 1:
            shorter = (prefix[:-1], a, b)
            if all(o[0] != prefix[:-1] for o in spec.overrides):
                out.append(replace(spec, overrides=(*spec.overrides[:i], shorter,
                                                    *spec.overrides[i + 1:])))
    return out


def _shrink_case(case: _Case, fails: Callable[[_Case], Any], low: int) -> _Case:
    best = case
    for horizon in range(1, best.horizon):
        if fails(_Case(best.spec, horizon)):
            best = _Case(best.spec, horizon)
            break
    improved = True
    while improved:
        improved = False
        for spec in _simpler_specs(best.spec):
            if fails(_Case(spec, best.horizon)):
                best = _Case(spec, best.horizon)
                improved = True
                break
    if best.spec.context_free:
        pair = shrink_pair(best.spec.default,
                           lambda pq: fails(_Case(ModelSpec(pq), best.horizon)),
                           min_size=low, max_checks=150)
        best = _Case(ModelSpec(pair), best.horizon)
    return best


def choose_horizon(step: Any, specs: Sequence[ModelSpec], *, stateful: bool = False,
                   budget: Budget | None = None,
                   processors: ProcessorPipeline | None = None) -> tuple[int, int | None]:
    """The horizon a search of ``step`` uses by default, and the longest output it saw.

    One call of the step is enumerated exactly on each of the ``specs`` (the
    edge cases); the horizon is the longest output seen (so a gamma = 3
    chain is judged on its bonus token, the 4th), at least
    ``MIN_AUTO_HORIZON`` (a bug in the second call shows) and at most
    ``MAX_AUTO_HORIZON`` (the joint law grows as V^horizon).  Cases the step
    cannot run are skipped here; the search reports them.  The longest
    output is None when no case ran.
    """
    longest: int | None = None
    for spec in specs:
        target, draft = spec.models(stateful=stateful)
        try:
            law = step_law(step, target, draft, budget=budget, processors=processors)
        except SpecexactError:
            continue
        size = max(len(out) for out, prob in law.items() if prob and isinstance(out, tuple))
        longest = size if longest is None else max(longest, size)
        if longest > MAX_AUTO_HORIZON:
            break
    horizon = MIN_AUTO_HORIZON if longest is None else longest
    return min(max(horizon, MIN_AUTO_HORIZON), MAX_AUTO_HORIZON), longest


def _horizon_note(horizon: int, longest: int | None, given: bool, late: bool = False) -> str:
    if given:
        return f" with horizon {horizon}"
    if longest is None:
        return f" with horizon {horizon} (the default: no edge case ran the step)"
    if longest > horizon:
        where = " on every case" if late else ""
        later = ("; its later tokens are judged on the late-token cases at "
                 f"V = {FULL_VOCAB_SIZE} below") if late else ""
        return (f" with horizon {horizon} (chosen from the step: it emits up to {longest} "
                f"tokens a call, capped at {MAX_AUTO_HORIZON} to keep the joint law small"
                f"{later}; pass horizon={longest} (--horizon {longest}) to judge all of them"
                f"{where})")
    tokens = "1 token" if longest == 1 else f"{longest} tokens"
    if longest < horizon:
        return (f" with horizon {horizon} (the smallest chosen: the step's longest output on "
                f"the edge cases is {tokens}, and {horizon} tokens span two or more calls)")
    return (f" with horizon {horizon} (chosen from the step: its longest output on the edge "
            f"cases is {tokens})")


def search_step(step: Any, *, vocab_sizes: int | Sequence[int] = DEFAULT_STEP_VOCAB_SIZES,
                horizon: int | None = None,
                examples: int = DEFAULT_STEP_EXAMPLES, seed: int = 0,
                budget: Budget | None = None, settings: Settings | None = None,
                progress: Progress | None = None, stateful: bool = False,
                one_hot_target: bool = False, kinds: Sequence[str] | None = None,
                uniform_bits: int | None = None,
                support_variants: Sequence[tuple[Any, int | None]] = (),
                processors: ProcessorPipeline | None = None) -> SearchResult:
    """Search for exact models on which ``step`` does not preserve the target's joint law.

    Compares the law of the first ``horizon`` tokens (the step run
    repeatedly from the empty prefix) with the target's own; ``horizon``
    None chooses it from the step (:func:`choose_horizon`: its longest
    output on the edge cases, within 3..4), and the coverage sentence says so.  ``stateful``
    wraps the models in :class:`~specexact.steps.models.CachedModel` (steps using
    the cache interface); ``one_hot_target`` draws one-hot target rows only
    (greedy rules); ``kinds`` restricts the row families.  The witness has
    ``target``, ``draft``, ``horizon`` (and the compact ``spec``).
    ``support_variants`` are ``(step, uniform_bits)`` pairs judged after the
    exact check passes, for crashes, cache divergence, support violations and
    invalid ids only (see :func:`specexact.properties.search_sampler`).  ``processors`` (a
    :class:`~specexact.steps.processors.ProcessorPipeline`) makes the reference the
    processed target's law with its stopping; models on which the processors leave
    no token on the target's own path have no such law and are skipped.
    """
    low, high = vocab_range(vocab_sizes)
    given_horizon = horizon
    longest: int | None = None
    constants = () if one_hot_target else code_constants(step)
    specs = step_edge_cases(low, high, one_hot_target=one_hot_target, constants=constants)
    edge_families: tuple[str, ...] = _STEP_EDGE_FAMILIES
    if constant_pairs(constants, low, min(high, 3)):
        edge_families += (constants_family(constants),)
    if horizon is None:
        horizon, longest = choose_horizon(step, specs, stateful=stateful, budget=budget,
                                          processors=processors)
        late = not one_hot_target and (low, high) == DEFAULT_STEP_VOCAB_SIZES
        note = _horizon_note(horizon, longest, False, late)
    else:
        check_integer(horizon, "horizon", min_value=1)
        note = _horizon_note(horizon, None, True)
    depth = horizon

    skipped: set[_Case] = set()

    def checker(candidate: Any, bits: int | None) -> Callable[[_Case], Any]:
        def check(case: _Case) -> Any:
            target, draft = case.spec.models(stateful=stateful)
            try:
                return check_step(candidate, target, draft, case.horizon, budget=budget,
                                  uniform_bits=bits, processors=processors)
            except ProcessorsExhausted:
                skipped.add(case)
                return _NO_LAW
        return check

    edge = [_Case(spec, depth) for spec in specs]
    if not one_hot_target and (low, high) == DEFAULT_STEP_VOCAB_SIZES:
        # A rule inside the step that is wrong only at V >= 4 (a residual cut to its top
        # two entries) shows on the first tokens: context-free pairs there, 2 tokens deep
        # (with the default sizes only: sizes given are the sizes searched).
        wide = [_Case(ModelSpec(pair), min(depth, WIDE_HORIZON))
                for pair in sampler_edge_cases(*WIDE_VOCAB_SIZES)]
        edge += wide
        note += (f"; and vocabularies {WIDE_VOCAB_SIZES[0]}..{WIDE_VOCAB_SIZES[1]} on their "
                 f"first {min(depth, WIDE_HORIZON)} tokens ({len(wide)} context-free edge "
                 "cases)")
    full: list[_Case] = []
    full_note = ""
    if not one_hot_target and (low, high) == DEFAULT_STEP_VOCAB_SIZES:
        # A rule wrong only at V >= 4 and only on a late token (a bonus drawn from a top-k
        # cut of the target row) shows on the whole horizon at V = 4: judged after the
        # small search, so that a bug showing at V = 2..3 keeps its smaller witness.
        full = [_Case(spec, depth) for spec in full_depth_specs()]
        shallow = (f"on all {depth} tokens (rows with {FULL_VOCAB_SIZE} distinct entries, "
                   "equal rows, a zero in the draft, targets changing after a token)")
        full_note = f"edge cases judged {shallow}"
        if given_horizon is None and longest is not None and longest > depth:
            # A gamma = 4 chain's bonus (its 5th token) is past the capped horizon: judged
            # on cases whose drafts keep the joint law of every token small.
            reach = min(longest, LATE_TOKEN_HORIZON)
            deep_cases = [_Case(spec, reach) for spec in late_token_specs()]
            full_note = (f"edge cases: {len(full)} judged {shallow}, and {len(deep_cases)} "
                         f"on all {reach} tokens (equal rows, one-hot drafts, a target "
                         "changing after a token)")
            full += deep_cases
            if longest > reach:
                full_note += (f"; the step emits up to {longest} tokens a call, and tokens "
                              f"past {reach} are not judged by default (--horizon {longest})")
    if given_horizon is None and longest is not None and longest + 1 > depth \
            and low <= 2 <= high and not one_hot_target:
        # A second call's whole output (after a one-token first call) and a long step's
        # last tokens (a gamma = 4 bonus) are outside the horizon.  Rows that change with
        # every position, on two tokens, show an off-by-one or a wrong context there;
        # judged one call deeper, on these cases only (the joint law grows as V^horizon).
        deep = min(longest + 1, DEEP_HORIZON)
        positional = [_Case(spec, deep) for spec in _positional_specs(deep - 1)]
        edge += positional
        note += (f"; and {len(positional)} edge cases with rows that change with every "
                 f"position, on 2 tokens, judged on {deep} tokens")
    strategy = model_specs(vocab_sizes=(low, high), kinds=kinds,
                           one_hot_target=one_hot_target).map(lambda s: _Case(s, depth))
    families = tuple(kinds) if kinds is not None else STEP_MODEL_KINDS
    adapter: Adapter[_Case] = Adapter(
        edge_cases=edge, strategy=strategy,
        size_of=lambda case: (case.spec.vocab_size,),
        check=rule_checks(checker, step, uniform_bits, support_variants),
        shrink=lambda case, fails: _shrink_case(case, fails, low), witness=_witness,
        key=rule_key(step, f"step {low}-{high} h{depth} {stateful} {one_hot_target} "
                          f"{uniform_bits} {len(support_variants)} {processors or ''}"),
        edge_families=edge_families,
        families=(*families, "context-free and context-dependent"),
        score_label="TV(joint law)", wide_cases=full)
    if processors is not None and not processors.identity:
        note += f" under {processors}"
    result = search(adapter, low=low, high=high, examples=examples, settings=settings,
                    seed=seed, progress=progress, sizes_note=note,
                    wide_note=full_note)
    if skipped:
        result = replace(result, covered=f"{result.covered} {len(skipped)} of them had no "
                         "processed law (the processors leave no token on the target's "
                         "path) and were skipped.")
    return replace(result, horizon=depth)


class _NoLaw:
    """A case whose processed target has no law (the processors leave no token): skipped."""

    passed = True
    tv = None


_NO_LAW = _NoLaw()


def _witness(case: _Case, verdict: StepVerdict) -> StepWitness:
    return StepWitness(verdict.target, verdict.draft, case.horizon, case.spec,
                       processors=verdict.processors)
