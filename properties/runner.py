"""The one search runner: edge cases, then Hypothesis, then shrinking.

Every search here (samplers, steps, float code) is the same run in named
phases, as Hypothesis's engine names them:

* ``explicit``: the hand-picked edge cases, in order;
* ``generate``: seeded Hypothesis examples;
* ``target``: the adapter's score (a TV) handed to ``hypothesis.target``
  where there is a real bias to climb (listed when it was);
* ``shrink``: Hypothesis's shrinking, then the adapter's exact shrinker.

A search differs only by its :class:`Adapter`: a case type, a check
function, a strategy, a shrinker and a score.  The run ends with an
:class:`ExitReason`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, final

import hypothesis
from hypothesis import HealthCheck, Verbosity, given
from hypothesis import settings as Settings
from hypothesis.database import ExampleDatabase

from specexact.collect import Collector
from specexact.errors import BudgetExceeded, Undecided
from specexact.exact.verdict import support_finding
from specexact.validation import check_integer

__all__ = [
    "MIN_CASES_PER_SIZE",
    "Adapter",
    "ExactOnly",
    "ExitReason",
    "KeyedDatabase",
    "Phase",
    "SearchResult",
    "SearchRun",
    "classifying",
    "covered_sentence",
    "run_search",
    "search",
    "wide_sentence",
]

Status = Literal["pass", "fail", "undecided"]
Progress = Callable[[int], None]
C = TypeVar("C", bound=Hashable)

# Once this many cases came out undecided, stop computing: the verdict can
# no longer be "pass", and the cause (hidden randomness, an unsupported
# operation) is usually the same everywhere.
_UNDECIDED_LIMIT = 5


class Phase(enum.Enum):
    """The phases of a search, named as Hypothesis names its own."""

    explicit = "explicit"
    generate = "generate"
    target = "target"
    #: Larger vocabularies (block-structured edge cases), after the small search.
    wide = "wide"
    shrink = "shrink"


class ExitReason(enum.Enum):
    """Why a search stopped."""

    finished = "every case passed or was undecided"
    found = "a case failed; it was shrunk"
    undecided = "too many cases were undecided to go on"
    out_of_time = "a case ran out of wall-clock time"
    out_of_budget = "a case ran out of its counted budget (operations, executions, CPU)"


@final
@dataclass(frozen=True)
class SearchResult:
    """What a search found: a verdict status, the minimal witness, and what was covered.

    ``status`` is "fail" with ``witness`` and its exact ``verdict`` when a
    case failed; "undecided" with ``error`` when some case could not be
    decided and none failed; "pass" when every case passed exactly.
    ``phases`` are the phases that ran and ``exit_reason`` why the run stopped.
    """

    status: Status
    cases: int
    witness: Any
    verdict: Any
    error: Undecided | None
    covered: str
    phases: tuple[Phase, ...] = ()
    exit_reason: ExitReason = ExitReason.finished
    #: Step searches: the horizon every case was judged at.
    horizon: int | None = None
    #: What is proven about the witness's minimality (a
    #: :class:`specexact.properties.minimal.Minimality`), None when it was only shrunk greedily.
    minimality: Any = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def __str__(self) -> str:
        if self.status == "pass":
            return f"PASS: no counterexample in {self.cases} exact cases. {self.covered}"
        if self.status == "undecided":
            return f"UNDECIDED after {self.cases} exact cases: {self.error}\n{self.covered}"
        return f"{self.verdict}\nfound after {self.cases} exact cases. {self.covered}"


@final
@dataclass(frozen=True)
class ExactOnly:
    """A case whose exact run shows a support finding (or a crash) that the code's
    dtype run does not produce: it passes, and the audit reports it as a note.

    ``exact`` is the exact run's verdict (the finding), ``dtype`` the clean
    verdict of the dtype run on the same case.
    """

    exact: Any
    dtype: Any

    @property
    def passed(self) -> bool:
        return True

    @property
    def tv(self) -> None:
        return None


#: Where :func:`with_variants` records exact-only cases; None: no classification.
_exact_only: Collector[ExactOnly] = Collector("specexact_exact_only")


def classifying() -> AbstractContextManager[list[ExactOnly]]:
    """Classify findings against the faithful variants while the block runs.

    Inside it the variants of :func:`with_variants` are taken as the code's
    dtype run (torch code in dtype semantics): an exact-run support finding or
    crash that every variant is clean of is *exact-only*, a passing case,
    appended (in search order) to the list this yields.
    """
    return _exact_only.collecting()


def with_variants(check: Callable[[C], Any], variants: Sequence[Callable[[C], Any]]
                  ) -> Callable[[C], Any]:
    """``check``, then each faithful variant's check, judged by :func:`support_finding`.

    The exact verdict comes first (a structural bias is reported as such);
    when it passes, the first variant with a support finding is the verdict.
    Inside :func:`classifying`, a failing exact verdict is an :class:`ExactOnly`
    pass when every variant's law is the target's exactly, or when it fails only
    by a support finding or a crash that no variant shows.
    """
    if not variants:
        return check

    def checked(case: C) -> Any:
        verdict = check(case)
        if not verdict.passed:
            notes = _exact_only.current()
            if notes is not None:
                others = [variant(case) for variant in variants]
                # the dtype run's law is the target's exactly, or the exact finding is
                # only support (or a crash) and the dtype run has none
                if all(other.passed for other in others) or (_support_only(verdict) and not any(
                        support_finding(other) for other in others)):
                    noted = ExactOnly(verdict, others[0])
                    notes.append(noted)
                    return noted
            return verdict
        for variant in variants:
            other = variant(case)
            if support_finding(other):
                return other
        return verdict

    return checked


def _support_only(verdict: Any) -> bool:
    """A failing verdict whose finding is a crash, or mass where the target has none
    with no other deviation (a bias beyond that mass is structural)."""
    if verdict.crash is not None:
        return True
    comparison = verdict.comparison
    if comparison is None or not support_finding(verdict):
        return False
    return bool(comparison.tv == comparison.support_violation + comparison.invalid_mass)


def rule_checks(make_check: Callable[[Any, int | None], Callable[[C], Any]], rule: Any,
                uniform_bits: int | None, support_variants: Sequence[tuple[Any, int | None]]
                ) -> Callable[[C], Any]:
    """A search's check: ``make_check(rule, uniform_bits)``, then each
    ``(variant, bits)`` of ``support_variants`` checked the same way (see
    :func:`with_variants`)."""
    return with_variants(make_check(rule, uniform_bits),
                         [make_check(variant, bits) for variant, bits in support_variants])


def tv_score(verdict: Any) -> float:
    """The score the target phase climbs: the verdict's exact TV, as a float."""
    return float(verdict.tv or 0)


@dataclass(frozen=True)
class Adapter(Generic[C]):
    """One kind of search: what a case is, how it is checked, generated and shrunk.

    ``check(case)`` returns a verdict with ``passed`` (or raises
    :class:`~specexact.errors.Undecided`); ``shrink(case, fails)`` returns a
    simpler failing case, where ``fails(candidate)`` is truthy when the
    candidate still fails; ``score(verdict)`` is the value Hypothesis's
    target phase climbs on a failing case (None: no target phase).
    ``key`` names the rule and options in the example database;
    ``witness(case, verdict)`` is what a failure reports.  ``edge_families``
    and ``families`` name what the edge cases and the strategy cover.
    """

    edge_cases: Sequence[C]
    strategy: Any
    check: Callable[[C], Any]
    shrink: Callable[[C, Callable[[C], Any]], C]
    witness: Callable[[C, Any], Any]
    key: str
    edge_families: Sequence[str]
    families: Sequence[str]
    score: Callable[[Any], float] | None = tv_score
    score_label: str = "TV"
    #: After shrinking: ``minimise(case, fails) -> (case, minimality or None)``.
    minimise: Callable[[C, Callable[[C], Any]], tuple[C, Any]] | None = None
    #: The vocabulary sizes a case is judged at (two for two vocabularies), so that a
    #: pass can say every size asked for was judged; None: not counted.
    size_of: Callable[[C], Sequence[int]] | None = None
    #: Cases beyond the sizes searched (larger vocabularies), tried after Hypothesis,
    #: smallest first, by ``wide_check`` (the check under a smaller counted budget): a
    #: case over that budget is not judged and is counted in ``SearchRun.wide_skipped``,
    #: and so are the cases after it at its size and larger ones (they cost more).
    wide_cases: Sequence[C] = ()
    wide_check: Callable[[C], Any] | None = None


@dataclass
class SearchRun(Generic[C]):
    """The raw outcome of :func:`run_search`, before an adapter words it."""

    cases: int = 0
    error: Undecided | None = None
    edge_tried: int = 0
    hypothesis_settings: Settings | None = None
    case: C | None = None
    verdict: Any = None
    phases: list[Phase] = field(default_factory=list)
    exit_reason: ExitReason = ExitReason.finished
    minimality: Any = None
    #: Cases decided (passed or failed) at each vocabulary size.
    judged: dict[int, int] = field(default_factory=dict)
    #: Wide cases tried, and those over the wide budget (not judged) at each size.
    wide_tried: int = 0
    wide_skipped: dict[int, int] = field(default_factory=dict)

    @property
    def status(self) -> Status:
        if self.case is not None:
            return "fail"
        return "undecided" if self.error is not None else "pass"


class _Found(Exception):
    """Raised inside the Hypothesis test to report a failing case (and shrink it)."""

    def __init__(self, case: Any, verdict: Any) -> None:
        super().__init__("counterexample")
        self.case = case
        self.verdict = verdict


class _Checker(Generic[C]):
    """Runs exact checks, counts them, reports progress and remembers the first Undecided."""

    def __init__(self, check: Callable[[C], Any], run: SearchRun[C],
                 progress: Progress | None,
                 size_of: Callable[[C], Sequence[int]] | None = None) -> None:
        self._check = check
        self._size_of = size_of
        self.run = run
        self._progress = progress
        self.undecided = 0
        self.failing: dict[C, Any] = {}

    def __call__(self, case: C, check: Callable[[C], Any] | None = None) -> Any | None:
        """The verdict when ``case`` fails, None when it passes or is undecided.

        ``check`` replaces the search's check for this case (a wide case's, whose
        budget overrun means "not judged", not "undecided").
        """
        run = self.run
        run.cases += 1
        try:
            verdict = (check or self._check)(case)
        except Undecided as exc:
            if check is not None and isinstance(exc, BudgetExceeded) \
                    and exc.limit != "max_seconds":  # counted, so the same on every run
                for size in self.sizes(case):
                    run.wide_skipped[size] = run.wide_skipped.get(size, 0) + 1
                return None
            self.undecided += 1
            if run.error is None:
                run.error = exc
            if isinstance(exc, BudgetExceeded):
                # A case that ran out of its budget (time, operations, executions)
                # usually means code that never ends or a tree too large for the
                # budget; retrying on more cases would only multiply the wait.
                self.undecided = max(self.undecided, _UNDECIDED_LIMIT)
                run.exit_reason = ExitReason.out_of_time if exc.limit == "max_seconds" \
                    else ExitReason.out_of_budget
            elif self.exhausted:
                run.exit_reason = ExitReason.undecided
            return None
        finally:
            if self._progress is not None:
                self._progress(run.cases)
        for size in self.sizes(case):
            run.judged[size] = run.judged.get(size, 0) + 1
        if verdict.passed:
            return None
        self.failing[case] = verdict
        return verdict

    def sizes(self, case: C) -> set[int]:
        return set(self._size_of(case)) if self._size_of is not None else set()

    @property
    def exhausted(self) -> bool:
        return self.undecided >= _UNDECIDED_LIMIT


def check_examples(examples: Any) -> int:
    """``examples`` as an int >= 0 (a bool is not one)."""
    return check_integer(examples, "examples", min_value=0)


def search_settings(settings: Settings | None, examples: int) -> Settings | None:
    """The Hypothesis settings of a search; None when it generates no examples."""
    forced: dict[str, Any] = {"suppress_health_check": list(HealthCheck),
                              "report_multiple_bugs": False, "deadline": None}
    if settings is None:
        if examples == 0:  # edge cases only (Hypothesis refuses max_examples=0)
            return None
        return Settings(max_examples=examples, database=None, verbosity=Verbosity.quiet,
                        **forced)
    return Settings(settings, **forced)


def rule_key(rule: Any, extra: str) -> str:
    """The example-database key of ``rule`` searched with the options in ``extra``."""
    name = getattr(rule, "__qualname__", None) or type(rule).__qualname__
    return f"{getattr(rule, '__module__', '?')}.{name}|{extra}"


class KeyedDatabase(ExampleDatabase):
    """The entries of ``inner`` whose keys start with ``prefix``, seen without it.

    >>> from hypothesis.database import InMemoryExampleDatabase
    >>> inner = InMemoryExampleDatabase()
    >>> KeyedDatabase(inner, b"rule|").save(b"k", b"v")
    >>> list(inner.fetch(b"rule|.k"))
    [b'v']
    """

    def __init__(self, inner: ExampleDatabase, prefix: bytes) -> None:
        super().__init__()
        self.inner = inner
        self.prefix = prefix + b"."

    def __repr__(self) -> str:
        return f"KeyedDatabase({self.inner!r}, {self.prefix[:-1]!r})"

    def save(self, key: bytes, value: bytes) -> None:
        self.inner.save(self.prefix + key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.inner.fetch(self.prefix + key)

    def delete(self, key: bytes, value: bytes) -> None:
        self.inner.delete(self.prefix + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.inner.move(self.prefix + src, self.prefix + dest, value)


def _run_hypothesis(adapter: Adapter[C], checker: _Checker[C], *, settings: Settings,
                    seed: int) -> tuple[C, Any] | None:
    """Run a seeded Hypothesis search; the shrunk (case, verdict) of a failure, or None."""
    found_any = False
    score = adapter.score

    def test(case: C) -> None:
        nonlocal found_any
        if checker.exhausted and not found_any:
            return
        verdict = checker(case)
        # Only a real bias is worth climbing: targeting TV(p, q), or a TV that
        # is 0 everywhere, sends the target phase hill-climbing on a plateau
        # for thousands of executions on a correct rule.
        if verdict is not None and score is not None:
            value = score(verdict)
            if value:
                hypothesis.target(value, label=adapter.score_label)
                if Phase.target not in checker.run.phases:
                    checker.run.phases.append(Phase.target)
        if verdict is not None:
            found_any = True
            raise _Found(case, verdict)

    if settings.database is not None:
        # Every rule is searched by the same test function: distinct rules (and search
        # options) get distinct keys in the example database through a prefix.
        settings = Settings(settings, database=KeyedDatabase(settings.database,
                                                             adapter.key.encode()))
    # hypothesis.given is typed by overloads mypy cannot resolve for an Any strategy.
    given_: Any = given
    # ``settings`` is applied after ``seed``, which would switch the database off: the
    # search stays reproducible and still replays stored failures first.
    wrapped: Any = settings(hypothesis.seed(seed)(given_(adapter.strategy)(test)))
    try:
        wrapped()
    except _Found as found:
        return found.case, found.verdict
    return None


def run_search(adapter: Adapter[C], *, settings: Settings | None, seed: int,
               progress: Progress | None = None) -> SearchRun[C]:
    """Run the phases in order; stop at the first failure and shrink it.

    ``settings`` None skips Hypothesis (edge cases only).
    """
    run: SearchRun[C] = SearchRun()
    checker = _Checker(adapter.check, run, progress, adapter.size_of)
    failure: tuple[C, Any] | None = None
    run.phases.append(Phase.explicit)
    for case in adapter.edge_cases:
        run.edge_tried += 1
        verdict = checker(case)
        if verdict is not None:
            failure = (case, verdict)
            break
        if checker.exhausted:
            break
    if failure is None and not checker.exhausted and settings is not None:
        run.hypothesis_settings = settings
        run.phases.append(Phase.generate)
        failure = _run_hypothesis(adapter, checker, settings=settings, seed=seed)
    if failure is None and not checker.exhausted and adapter.wide_cases:
        run.phases.append(Phase.wide)
        wide_check = adapter.wide_check or adapter.check
        over: int | None = None  # the smallest size where a wide case ran over its budget
        for case in adapter.wide_cases:
            sizes = checker.sizes(case)
            if over is not None and max(sizes, default=0) >= over:
                # A larger vocabulary costs more: not tried, counted as not judged.
                for size in sizes:
                    run.wide_skipped[size] = run.wide_skipped.get(size, 0) + 1
                continue
            run.wide_tried += 1
            skipped = sum(run.wide_skipped.values())
            verdict = checker(case, wide_check)
            if verdict is not None:
                failure = (case, verdict)
                break
            if checker.exhausted:
                break
            if sum(run.wide_skipped.values()) > skipped:
                over = min(sizes, default=0)
    if failure is None:
        return run
    run.phases.append(Phase.shrink)
    case = adapter.shrink(failure[0], checker)
    if adapter.minimise is not None:
        case, run.minimality = adapter.minimise(case, checker)
    run.case = case
    run.verdict = checker.failing.get(case, failure[1])
    run.exit_reason = ExitReason.found  # whatever the shrinker's candidates ran into
    return run


def covered_sentence(sizes: str, edge: int, edge_families: Sequence[str],
                     settings: Settings | None, seed: int, cases: int,
                     families: Sequence[str], edge_total: int | None = None) -> str:
    """One sentence saying what a search covered (``settings`` None: Hypothesis never ran).

    ``edge`` is the number of hand-picked cases tried, ``edge_total`` the
    number there were (the search stops at the first failure).
    """
    stopped = edge_total is not None and edge < edge_total
    if stopped:
        tried = (f"{edge} of the {edge_total} hand-picked edge cases "
                 f"({', '.join(edge_families)}), stopping at the first failure")
    else:
        tried = f"{edge} hand-picked edge cases ({', '.join(edge_families)})"
    text = f"Covered vocabulary sizes {sizes}: {tried}"
    if settings is not None:
        text += (f", then up to {settings.max_examples} Hypothesis examples (seed {seed}; "
                 f"families: {', '.join(families)})")
    if stopped and settings is None and cases > edge:
        return f"{text}; {cases} exact cases in all, shrinking that failure included."
    return f"{text}; {cases} exact cases in all."


#: A pass needs at least this many exact cases judged at every vocabulary size asked for.
MIN_CASES_PER_SIZE = 1


def _unjudged_sizes(adapter: Adapter[C], run: SearchRun[C], low: int,
                    high: int) -> Undecided | None:
    """Undecided when some size in ``low..high`` had fewer than
    :data:`MIN_CASES_PER_SIZE` exact cases judged: nothing was checked there, so no
    pass can be claimed for it."""
    if adapter.size_of is None:
        return None
    missing = [size for size in range(low, high + 1)
               if run.judged.get(size, 0) < MIN_CASES_PER_SIZE]
    if not missing:
        return None
    shown = sizes_text(missing[0], missing[-1]) if missing == list(
        range(missing[0], missing[-1] + 1)) else ", ".join(map(str, missing))
    msg = (f"no exact case was judged at vocabulary size{'s' if len(missing) > 1 else ''} "
           f"{shown}, and a PASS needs at least {MIN_CASES_PER_SIZE} at every size asked "
           f"for ({sizes_text(low, high)}; {run.cases} exact cases were judged in all); "
           "give more --examples (examples=) or fewer vocabulary sizes")
    return Undecided(msg)


def wide_sentence(adapter: Adapter[C], run: SearchRun[C], high: int, families: str) -> str:
    """What the wide phase judged: " Then V = 8, 16, 64: 21 block-structured edge cases
    (families); 2 at V = 64 over the budget, not judged." ("" when it did not run)."""
    if Phase.wide not in run.phases:
        return ""
    sizes = sorted({size for case in adapter.wide_cases
                    for size in (adapter.size_of(case) if adapter.size_of else ())
                    if size > high})
    judged = [size for size in sizes if run.judged.get(size, 0)]
    word = "vocabulary" if len(sizes) == 1 else "vocabularies"
    text = (f" Then {word} {', '.join(map(str, sizes))}: {run.wide_tried} of the "
            f"{len(adapter.wide_cases)} {families}")
    if run.wide_skipped:
        over = ", ".join(f"{n} at V = {size}" for size, n in sorted(run.wide_skipped.items()))
        text += (f"; over the budget of a wide case and not judged: {over} "
                 f"(judged sizes: {', '.join(map(str, judged)) or 'none'})")
    return text + "."


def sizes_text(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}..{high}"


def search(adapter: Adapter[C], *, low: int, high: int, examples: Any,
           settings: Settings | None, seed: int, progress: Progress | None = None,
           sizes_note: str = "", wide_note: str = "wide edge cases") -> SearchResult:
    """Run ``adapter``'s search over vocabularies ``low..high`` and word its result.

    ``examples`` Hypothesis examples (``settings`` overrides); ``sizes_note``
    follows the sizes in the coverage sentence ("with horizon 3"), ``wide_note``
    names the adapter's wide cases there.
    """
    check_examples(examples)
    run = run_search(adapter, settings=search_settings(settings, examples), seed=seed,
                     progress=progress)
    covered = covered_sentence(sizes_text(low, high) + sizes_note, run.edge_tried,
                               adapter.edge_families, run.hypothesis_settings, seed,
                               run.cases, adapter.families, len(adapter.edge_cases))
    covered += wide_sentence(adapter, run, high, wide_note)
    if run.case is None:
        error = run.error if run.error is not None else _unjudged_sizes(adapter, run, low, high)
        return SearchResult("pass" if error is None else "undecided", run.cases, None, None,
                            error, covered, tuple(run.phases), run.exit_reason)
    return SearchResult("fail", run.cases, adapter.witness(run.case, run.verdict),
                        run.verdict, None, covered, tuple(run.phases), run.exit_reason,
                        minimality=run.minimality)
