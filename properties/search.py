"""Searching a sampler for exact counterexamples: edge cases, then Hypothesis, then shrinking.

:func:`search_sampler` answers "is this rule right at all?" for a sampler:
it checks the hand-picked edge cases, runs a seeded Hypothesis search over
exact (p, q) pairs, and shrinks the first failure to a small exact witness
(:func:`shrink_pair`), all through :func:`specexact.properties.runner.run_search`.
Every case is an exact enumeration, so a failure is a proof of bias and a
pass means "no bias in any of the N exact cases covered".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any, final

import hypothesis
from hypothesis import Verbosity
from hypothesis import settings as Settings

from specexact.errors import Undecided
from specexact.exact.tree import Budget
from specexact.exact.verdict import Verdict, check_sampler
from specexact.properties.constants import code_constants, constant_pairs, constants_family
from specexact.properties.edge_cases import (
    BLOCK_FAMILIES,
    BLOCK_VOCAB_SIZES,
    EDGE_FAMILIES,
    block_edge_cases,
    sampler_edge_cases,
)
from specexact.properties.minimal import minimise_pair
from specexact.properties.runner import (
    Adapter,
    Progress,
    SearchResult,
    rule_key,
    run_search,
    search,
    search_settings,
    tv_score,
    with_variants,
)
from specexact.properties.strategies import PAIR_FAMILIES, pq_pairs, vocab_range
from specexact.validation import check_integer
from specexact.witness import SamplerWitness

__all__ = [
    "DEFAULT_SAMPLER_EXAMPLES",
    "DEFAULT_SAMPLER_VOCAB_SIZES",
    "WIDE_CASE_BUDGET",
    "SamplerWitness",
    "SearchResult",
    "capped_budget",
    "largest_tv",
    "search_sampler",
    "shrink_pair",
]

Probs = tuple[Fraction, ...]
Pair = tuple[Probs, Probs]

DEFAULT_SAMPLER_EXAMPLES = 200
#: Vocabulary sizes a sampler search covers by default: 5 is the smallest where
#: a residual can have four positive entries next to a zero.
DEFAULT_SAMPLER_VOCAB_SIZES = (2, 5)
#: The budget of one wide (large-vocabulary) case: a rule that needs more there
#: (several drafts enumerated jointly at V = 64, an optimal coupling solved over every
#: set of drafts) is judged at the smaller sizes only, and the coverage sentence says
#: which were not judged.  The work is counted; one execution's CPU time (read on the
#: enumerating thread's own clock) bounds deterministic work that touches no random value.
WIDE_CASE_BUDGET = Budget(max_total_operations=250_000, max_execution_cpu_seconds=1.0)
# Checks the exact shrinker may spend after Hypothesis has shrunk.
_SHRINK_CHECKS = 300


# --------------------------------------------------------------------------
# Exact shrinking of (p, q)
# --------------------------------------------------------------------------


def _complexity(pair: tuple[Probs, Probs]) -> tuple[int, int, int, Probs, Probs]:
    p, q = pair
    denominators = [x.denominator for x in (*p, *q)]
    return (len(p), math.lcm(*denominators), sum(x.numerator for x in (*p, *q)), p, q)


def _renormalised(values: Sequence[Fraction]) -> Probs | None:
    total = sum(values, Fraction(0))
    return None if total == 0 else tuple(v / total for v in values)


def _rounded(values: Probs, denominator: int) -> Probs:
    """``values`` rounded to multiples of 1/denominator, summing to 1 (largest remainder)."""
    scaled = [v * denominator for v in values]
    floors = [math.floor(s) for s in scaled]
    short = denominator - sum(floors)
    order = sorted(range(len(values)), key=lambda i: (floors[i] - scaled[i], i))
    for i in order[:short]:
        floors[i] += 1
    return tuple(Fraction(f, denominator) for f in floors)


#: Above this size the shrinker first drops aligned chunks of tokens (a wide witness).
_CHUNKED_ABOVE = 5


def _dropped_chunks(p: Probs, q: Probs, min_size: int) -> Iterator[tuple[Probs, Probs]]:
    """Pairs without one aligned chunk of tokens, the largest chunks first (half the
    vocabulary, a quarter, ...): a witness at V = 64 shrinks in a few steps, as in
    delta debugging, where dropping tokens one at a time would spend the checks."""
    v = len(p)
    size = v // 2
    while size >= 1:
        for start in range(0, v - size + 1, size):
            if v - size < min_size:
                break
            rest_p = _renormalised(p[:start] + p[start + size:])
            rest_q = _renormalised(q[:start] + q[start + size:])
            if rest_p is not None and rest_q is not None:
                yield rest_p, rest_q
        size //= 2


def _simpler_pairs(p: Probs, q: Probs, min_size: int) -> Iterator[tuple[Probs, Probs]]:
    v = len(p)
    if v > _CHUNKED_ABOVE:
        yield from _dropped_chunks(p, q, max(min_size, _CHUNKED_ABOVE))
    for i in range(v):  # one-hot laws are the simplest of all
        hot = tuple(Fraction(int(t == i)) for t in range(v))
        yield hot, q
        yield p, hot
    for i in range(v if v > min_size else 0):  # drop token i
        rest_p = _renormalised(p[:i] + p[i + 1:])
        rest_q = _renormalised(q[:i] + q[i + 1:])
        if rest_p is not None and rest_q is not None:
            yield rest_p, rest_q
    for i in range(v if v > min_size else 0):  # merge tokens i and j
        for j in range(i + 1, v):
            yield (tuple(p[i] + p[j] if t == i else p[t] for t in range(v) if t != j),
                   tuple(q[i] + q[j] if t == i else q[t] for t in range(v) if t != j))
    yield q, q
    yield p, p
    for denominator in range(1, 13):
        rp, rq = _rounded(p, denominator), _rounded(q, denominator)
        yield rp, q
        yield p, rq
        yield rp, rq


def shrink_pair(pair: tuple[Probs, Probs], fails: Callable[[tuple[Probs, Probs]], Any],
                *, min_size: int = 1, max_checks: int = _SHRINK_CHECKS) -> tuple[Probs, Probs]:
    """Greedily replace a failing (p, q) by simpler failing ones.

    Simpler means fewer tokens (never below ``min_size``), then a smaller
    common denominator, then smaller numerators.  ``fails(pair)`` returns a
    truthy value when the pair still shows the failure.
    """
    best = pair
    checks = 0
    improved = True
    while improved and checks < max_checks:
        improved = False
        for candidate in _simpler_pairs(*best, min_size):
            if _complexity(candidate) >= _complexity(best):
                continue
            checks += 1
            if fails(candidate):
                best = candidate
                improved = True
                break
            if checks >= max_checks:
                break
    return best


# --------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------


def capped_budget(budget: Budget | None, cap: Budget) -> Budget:
    """``budget`` (the default one when None) with each limit at most ``cap``'s."""
    base = budget if budget is not None else Budget()
    limits: dict[str, Any] = {
        name: min(getattr(base, name), getattr(cap, name))
        for name in ("max_executions", "max_choices", "max_operations",
                     "max_total_operations")}
    for name in ("max_execution_cpu_seconds", "max_seconds"):
        mine, theirs = getattr(base, name), getattr(cap, name)
        limits[name] = theirs if mine is None else mine if theirs is None else min(mine, theirs)
    return dataclasses.replace(base, **limits)


def pair_search(check: Callable[[Pair], Any], *, low: int, high: int, examples: int,
                seed: int, settings: Settings | None, progress: Progress | None, key: str,
                score: Callable[[Any], float] | None = tv_score,
                extra: tuple[Sequence[Pair], Any, str] | None = None,
                constants: Sequence[Fraction] = (),
                wide: tuple[Sequence[Pair], Callable[[Pair], Any]] | None = None
                ) -> SearchResult:
    """The search over exact (p, q) pairs that sampler and float audits share.

    ``check(pair)`` returns a verdict with ``passed`` (an exact
    :class:`~specexact.Verdict`, a float-mode verdict); the witness of a
    failure is a :class:`~specexact.witness.SamplerWitness`.  ``extra`` is
    ``(edge cases, strategy, label)`` of more cases (float rows with rounding
    hazards): its edge cases follow the others, its strategy is drawn as
    often as the exact pairs.  ``constants`` are the code's thresholds
    (:func:`specexact.properties.constants.code_constants`): pairs on them join the edge cases.
    ``wide`` is ``(pairs, check)``: larger vocabularies judged after Hypothesis by
    ``check`` (under a smaller counted budget, see :data:`WIDE_CASE_BUDGET`).
    """
    edge = sampler_edge_cases(low, high, constants)
    strategy: Any = pq_pairs(vocab_sizes=(low, high))
    edge_families: tuple[str, ...] = EDGE_FAMILIES
    if constant_pairs(constants, low, high):
        edge_families += (constants_family(constants),)
    families: tuple[str, ...] = PAIR_FAMILIES
    if extra is not None:
        edge = [*edge, *extra[0]]
        strategy = strategy | extra[1]
        edge_families += (extra[2],)
        families += (extra[2],)
    adapter: Adapter[Pair] = Adapter(
        edge_cases=edge, strategy=strategy, check=check,
        shrink=lambda pair, fails: shrink_pair(pair, fails, min_size=low),
        witness=lambda pair, verdict: SamplerWitness(*pair), key=key,
        size_of=lambda pair: (len(pair[0]),),
        edge_families=edge_families, families=families, score=score,
        score_label="TV(output, p)",
        minimise=lambda pair, fails: minimise_pair(pair, fails, low=low),
        wide_cases=wide[0] if wide is not None else (),
        wide_check=wide[1] if wide is not None else None)
    return search(adapter, low=low, high=high, examples=examples, settings=settings,
                  seed=seed, progress=progress,
                  wide_note=f"block-structured edge cases ({', '.join(BLOCK_FAMILIES)})")


def search_sampler(sampler: Any, *,
                   vocab_sizes: int | Sequence[int] = DEFAULT_SAMPLER_VOCAB_SIZES,
                   examples: int = DEFAULT_SAMPLER_EXAMPLES, seed: int = 0,
                   uniform_bits: int | None = None, budget: Budget | None = None,
                   settings: Settings | None = None,
                   progress: Progress | None = None,
                   support_variants: Sequence[tuple[Any, int | None]] = ()) -> SearchResult:
    """Search for an exact (p, q) on which ``sampler(p, q, rng)`` does not preserve p.

    Tries the hand-picked edge cases, then ``examples`` Hypothesis examples
    (seeded; ``settings`` overrides, for example to use an example
    database), then shrinks the first failure to a minimal exact witness.
    ``support_variants`` are ``(sampler, uniform_bits)`` pairs judged on each
    case after the exact check passes, for crashes, support violations and
    invalid ids only (rounding of a grid uniform is not a finding): the same
    code under float32 uniforms, say.

    >>> from specexact.counterexamples.samplers import naive_resample
    >>> result = search_sampler(naive_resample)
    >>> result.status, result.witness.p, result.witness.q
    ('fail', (Fraction(1, 2), Fraction(1, 2)), (Fraction(0, 1), Fraction(1, 1)))
    """
    low, high = vocab_range(vocab_sizes)

    def checks(limits: Budget | None) -> Callable[[Pair], Verdict]:
        def one(rule: Any, bits: int | None) -> Callable[[Pair], Verdict]:
            return lambda pair: check_sampler(rule, pair[0], pair[1], uniform_bits=bits,
                                              budget=limits)

        return with_variants(one(sampler, uniform_bits),
                             [one(v, bits) for v, bits in support_variants])

    variants = " ".join(str(bits) for _, bits in support_variants)
    wide = None
    if (low, high) == DEFAULT_SAMPLER_VOCAB_SIZES and BLOCK_VOCAB_SIZES:
        # The default sizes reach the vocabulary-parallel bugs too (sizes given are the
        # sizes searched).
        wide = (block_edge_cases(BLOCK_VOCAB_SIZES),
                checks(capped_budget(budget, WIDE_CASE_BUDGET)))
    return pair_search(checks(budget), low=low, high=high, examples=examples, seed=seed,
                       settings=settings, progress=progress,
                       key=rule_key(sampler, f"sampler {low}-{high} {uniform_bits} {variants}"),
                       constants=code_constants(sampler), wide=wide)


def _neighbours(values: Probs) -> Iterator[Probs]:
    """Laws one small step away: a unit of mass (at the law's resolution) moved between tokens."""
    for scale in (1, 2):
        d = math.lcm(*(x.denominator for x in values)) * scale
        for i, a in enumerate(values):
            if a == 0:
                continue
            for j in range(len(values)):
                if j != i:
                    moved = list(values)
                    moved[i] -= Fraction(1, d)
                    moved[j] += Fraction(1, d)
                    yield tuple(moved)


@final
class _Measured:
    """The verdict of a measurement: it always "passes", so the search goes on."""

    passed = True


_MEASURED = _Measured()


def largest_tv(sampler: Any, *, vocab_sizes: int | Sequence[int] = (2, 4),
               examples: int = 500, seed: int = 0, uniform_bits: int | None = None,
               budget: Budget | None = None, climb_steps: int = 40
               ) -> tuple[Fraction, SamplerWitness | None, int]:
    """The largest exact TV(output, p) found for a lossy-by-design sampler.

    Returns ``(tv, witness, cases)``.  The edge cases and ``examples``
    Hypothesis examples are measured, then the best pair is improved by
    exact hill climbing (moving one unit of mass in p or q).  Crashes and
    undecided cases count as TV 0.
    """
    low, high = vocab_range(vocab_sizes)
    check_integer(examples, "examples", min_value=0)
    best: list[Any] = [Fraction(0), None]
    cases = 0

    def measure(pair: tuple[Probs, Probs]) -> Fraction:
        nonlocal cases
        cases += 1
        try:
            verdict = check_sampler(sampler, pair[0], pair[1], uniform_bits=uniform_bits,
                                    budget=budget)
        except Undecided:
            return Fraction(0)
        tv = verdict.tv or Fraction(0)
        if tv > best[0] or (tv == best[0] and best[1] is not None
                            and _complexity(pair) < _complexity((best[1].p, best[1].q))):
            best[0], best[1] = tv, SamplerWitness(*pair)
        return tv

    def check(pair: Pair) -> _Measured:
        tv = measure(pair)
        if hypothesis.currently_in_test_context():
            # Recorded, not climbed (no target phase); it still steers generation.
            hypothesis.target(float(tv), label="TV(output, p)")
        return _MEASURED

    # A measurement never fails, so the run goes through every edge case and
    # example.  Hypothesis's target phase is left out: on the plateaus lossy
    # rules produce it can spend minutes.
    settings = None if examples == 0 else Settings(
        max_examples=examples, database=None, verbosity=Verbosity.quiet,
        phases=(hypothesis.Phase.explicit, hypothesis.Phase.generate))
    adapter: Adapter[Pair] = Adapter(
        edge_cases=sampler_edge_cases(low, high), strategy=pq_pairs(vocab_sizes=(low, high)),
        check=check, shrink=lambda pair, fails: pair, witness=lambda pair, _: pair,
        key=rule_key(sampler, f"largest_tv {low}-{high} {uniform_bits}"),
        edge_families=EDGE_FAMILIES, families=PAIR_FAMILIES, score=None)
    run_search(adapter, settings=search_settings(settings, examples), seed=seed)
    for _ in range(climb_steps):
        if best[1] is None:
            break
        before = best[0]
        p, q = best[1].p, best[1].q
        for candidate in [(n, q) for n in _neighbours(p)] + [(p, n) for n in _neighbours(q)]:
            measure(candidate)
        if best[0] == before:
            break
    return best[0], best[1], cases
