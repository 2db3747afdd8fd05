"""Searching for exact counterexamples: edge cases, then Hypothesis, then shrinking.

:func:`search_sampler` answers "is this rule right at all?" for a sampler:
it checks the hand-picked edge cases, runs a seeded Hypothesis search over
exact (p, q) pairs, and shrinks the first failure to a small exact witness.
Every case is an exact enumeration, so a failure is a proof of bias and a
pass means "no bias in any of the N exact cases covered".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, final

import hypothesis
from hypothesis import HealthCheck, Verbosity, given
from hypothesis import settings as Settings

from properties.edge_cases import EDGE_FAMILIES, sampler_edge_cases
from properties.strategies import PAIR_FAMILIES, pq_pairs, vocab_range
from verifier.errors import BudgetExceeded, InvalidArgument, Undecided
from verifier.exact.tree import Budget
from verifier.exact.verdict import Verdict, check_sampler

__all__ = [
    "DEFAULT_SAMPLER_EXAMPLES",
    "SamplerWitness",
    "SearchResult",
    "largest_tv",
    "search_sampler",
    "shrink_pair",
]

Probs = tuple[Fraction, ...]
Status = Literal["pass", "fail", "undecided"]
Progress = Callable[[int], None]

DEFAULT_SAMPLER_EXAMPLES = 200
# Once this many cases came out undecided, stop computing: the verdict can
# no longer be "pass", and the cause (hidden randomness, an unsupported
# operation) is usually the same everywhere.
_UNDECIDED_LIMIT = 5
# Checks the exact shrinker may spend after Hypothesis has shrunk.
_SHRINK_CHECKS = 300


@final
@dataclass(frozen=True)
class SamplerWitness:
    """An exact (p, q) on which a sampler does not preserve p."""

    p: Probs
    q: Probs


@final
@dataclass(frozen=True)
class SearchResult:
    """What a search found: a verdict status, the minimal witness, and what was covered.

    ``status`` is "fail" with ``witness`` and its exact ``verdict`` when a
    case failed; "undecided" with ``error`` when some case could not be
    decided and none failed; "pass" when every case passed exactly.
    """

    status: Status
    cases: int
    witness: Any
    verdict: Any
    error: Undecided | None
    covered: str

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def __str__(self) -> str:
        if self.status == "pass":
            return f"PASS: no counterexample in {self.cases} exact cases. {self.covered}"
        if self.status == "undecided":
            return f"UNDECIDED after {self.cases} exact cases: {self.error}\n{self.covered}"
        return f"{self.verdict}\nfound after {self.cases} exact cases. {self.covered}"


class _Found(Exception):
    """Raised inside the Hypothesis test to report a failing case (and shrink it)."""

    def __init__(self, case: Any, verdict: Any) -> None:
        super().__init__("counterexample")
        self.case = case
        self.verdict = verdict


class _Checker:
    """Runs exact checks, counts them, reports progress and remembers the first Undecided."""

    def __init__(self, check: Callable[[Any], Any], progress: Progress | None) -> None:
        self._check = check
        self._progress = progress
        self.cases = 0
        self.error: Undecided | None = None
        self.undecided = 0

    def __call__(self, case: Any) -> Any | None:
        """The verdict when ``case`` fails, None when it passes or is undecided."""
        self.cases += 1
        try:
            verdict = self._check(case)
        except Undecided as exc:
            self.undecided += 1
            if self.error is None:
                self.error = exc
            if isinstance(exc, BudgetExceeded) and exc.limit == "max_seconds":
                # A case that ran out of wall-clock time usually means code that
                # never ends; retrying on more cases would only multiply the wait.
                self.undecided = max(self.undecided, _UNDECIDED_LIMIT)
            return None
        finally:
            if self._progress is not None:
                self._progress(self.cases)
        return None if verdict.passed else verdict

    @property
    def exhausted(self) -> bool:
        return self.undecided >= _UNDECIDED_LIMIT


def _settings(settings: Settings | None, examples: int) -> Settings | None:
    """The Hypothesis settings of a search; None when it generates no examples."""
    forced: dict[str, Any] = {"suppress_health_check": list(HealthCheck),
                              "report_multiple_bugs": False, "deadline": None}
    if settings is None:
        if examples == 0:  # edge cases only (Hypothesis refuses max_examples=0)
            return None
        return Settings(max_examples=examples, database=None, verbosity=Verbosity.quiet,
                        **forced)
    return Settings(settings, **forced)


def _check_examples(examples: int) -> None:
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 0:
        msg = f"examples={examples!r} must be an integer >= 0"
        raise InvalidArgument(msg)


def run_hypothesis(strategy: Any, checker: _Checker, *, settings: Settings, seed: int,
                   key: str, steer: Callable[[Any, Any], None]) -> tuple[Any, Any] | None:
    """Run a seeded Hypothesis search; the shrunk (case, verdict) of a failure, or None."""
    found_any = False

    def test(case: Any) -> None:
        nonlocal found_any
        if checker.exhausted and not found_any:
            return
        verdict = checker(case)
        steer(case, verdict)
        if verdict is not None:
            found_any = True
            raise _Found(case, verdict)

    # hypothesis.given is typed by overloads mypy cannot resolve for an Any strategy.
    given_: Any = given
    wrapped: Any = settings(given_(strategy)(test))
    # What ``hypothesis.seed`` does, minus its switching the example database off:
    # the search stays reproducible and still replays stored failures first.
    wrapped._hypothesis_internal_use_seed = seed
    # Distinct rules (and search options) get distinct keys in the example database.
    wrapped._hypothesis_internal_database_key = key.encode()
    try:
        wrapped()
    except _Found as found:
        return found.case, found.verdict
    return None


def _rule_key(rule: Any, extra: str) -> str:
    name = getattr(rule, "__qualname__", None) or type(rule).__qualname__
    return f"{getattr(rule, '__module__', '?')}.{name}|{extra}"


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


def _simpler_pairs(p: Probs, q: Probs, min_size: int) -> Iterator[tuple[Probs, Probs]]:
    v = len(p)
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


def _sampler_checker(sampler: Any, uniform_bits: int | None, budget: Budget | None,
                     progress: Progress | None) -> _Checker:
    def check(pair: tuple[Probs, Probs]) -> Verdict:
        return check_sampler(sampler, pair[0], pair[1], uniform_bits=uniform_bits,
                             budget=budget)

    return _Checker(check, progress)


def _steer_sampler(pair: tuple[Probs, Probs], verdict: Verdict | None) -> None:
    # Only a real bias is worth climbing: targeting TV(p, q), or a TV that is 0
    # everywhere, sends Hypothesis's target phase hill-climbing on a plateau
    # for thousands of executions on a correct rule.
    if verdict is not None and verdict.tv:
        hypothesis.target(float(verdict.tv), label="TV(output, p)")


def covered_sentence(sizes: str, edge: int, edge_families: Sequence[str],
                     settings: Settings | None, seed: int, cases: int,
                     families: Sequence[str], edge_total: int | None = None) -> str:
    """One sentence saying what a search covered (``settings`` None: Hypothesis never ran).

    ``edge`` is the number of hand-picked cases tried, ``edge_total`` the
    number there were (the search stops at the first failure).
    """
    if edge_total is not None and edge < edge_total:
        tried = (f"{edge} of the {edge_total} hand-picked edge cases "
                 f"({', '.join(edge_families)}), stopping at the first failure")
    else:
        tried = f"{edge} hand-picked edge cases ({', '.join(edge_families)})"
    text = f"Covered vocabulary sizes {sizes}: {tried}"
    if settings is not None:
        text += (f", then up to {settings.max_examples} Hypothesis examples (seed {seed}; "
                 f"families: {', '.join(families)})")
    return f"{text}; {cases} exact cases in all."


def _sizes(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}..{high}"


def search_sampler(sampler: Any, *, vocab_sizes: int | Sequence[int] = (2, 4),
                   examples: int = DEFAULT_SAMPLER_EXAMPLES, seed: int = 0,
                   uniform_bits: int | None = None, budget: Budget | None = None,
                   settings: Settings | None = None,
                   progress: Progress | None = None) -> SearchResult:
    """Search for an exact (p, q) on which ``sampler(p, q, rng)`` does not preserve p.

    Tries the hand-picked edge cases, then ``examples`` Hypothesis examples
    (seeded; ``settings`` overrides, for example to use an example
    database), then shrinks the first failure to a minimal exact witness.

    >>> from counterexamples.samplers import naive_resample
    >>> result = search_sampler(naive_resample)
    >>> result.status, result.witness.p, result.witness.q
    ('fail', (Fraction(1, 2), Fraction(1, 2)), (Fraction(0, 1), Fraction(1, 1)))
    """
    low, high = vocab_range(vocab_sizes)
    _check_examples(examples)
    hyp_settings = _settings(settings, examples)
    checker = _sampler_checker(sampler, uniform_bits, budget, progress)
    edge = sampler_edge_cases(low, high)
    failure: tuple[Any, Any] | None = None
    ran: Settings | None = None
    tried = 0
    for pair in edge:
        tried += 1
        verdict = checker(pair)
        if verdict is not None:
            failure = (pair, verdict)
            break
        if checker.exhausted:
            break
    if failure is None and not checker.exhausted and hyp_settings is not None:
        ran = hyp_settings
        failure = run_hypothesis(pq_pairs(vocab_sizes=(low, high)), checker,
                                 settings=hyp_settings, seed=seed,
                                 key=_rule_key(sampler, f"sampler {low}-{high} {uniform_bits}"),
                                 steer=_steer_sampler)
    if failure is None:
        covered = covered_sentence(_sizes(low, high), tried, EDGE_FAMILIES, ran, seed,
                                   checker.cases, PAIR_FAMILIES, len(edge))
        if checker.error is not None:
            return SearchResult("undecided", checker.cases, None, None, checker.error, covered)
        return SearchResult("pass", checker.cases, None, None, None, covered)
    pair = shrink_pair(failure[0], checker, min_size=low)
    verdict = check_sampler(sampler, pair[0], pair[1], uniform_bits=uniform_bits, budget=budget)
    covered = covered_sentence(_sizes(low, high), tried, EDGE_FAMILIES, ran, seed,
                               checker.cases, PAIR_FAMILIES, len(edge))
    return SearchResult("fail", checker.cases, SamplerWitness(*pair), verdict, None, covered)


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


def largest_tv(sampler: Any, *, vocab_sizes: int | Sequence[int] = (2, 4),
               examples: int = 500, seed: int = 0, uniform_bits: int | None = None,
               budget: Budget | None = None, climb_steps: int = 40
               ) -> tuple[Fraction, SamplerWitness | None, int]:
    """The largest exact TV(output, p) found for a lossy-by-design sampler.

    Returns ``(tv, witness, cases)``.  The edge cases and ``examples``
    Hypothesis examples are measured, then the best pair is improved by
    exact hill climbing (moving one unit of mass in p or q).  Hypothesis's
    own target phase is left out: on the plateaus lossy rules produce it
    can spend minutes.  Crashes and undecided cases count as TV 0.
    """
    low, high = vocab_range(vocab_sizes)
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

    for pair in sampler_edge_cases(low, high):
        measure(pair)

    @Settings(max_examples=examples, database=None, deadline=None, verbosity=Verbosity.quiet,
              suppress_health_check=list(HealthCheck),
              phases=(hypothesis.Phase.explicit, hypothesis.Phase.generate))
    @hypothesis.seed(seed)
    @given(pq_pairs(vocab_sizes=(low, high)))
    def test(pair: tuple[Probs, Probs]) -> None:
        hypothesis.target(float(measure(pair)), label="TV(output, p)")

    test()
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
