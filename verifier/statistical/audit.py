"""Black-box statistical audit, for samplers that use their own randomness.

The sampler is called as ``fn(p, q, rng)`` with numpy float64 arrays and a
``numpy.random.Generator`` that also has specexact's ``categorical`` and
``bernoulli`` (:func:`statistical_random`), many times on each case of a panel (edge cases
plus generated pairs).  Its empirical counts are compared with the exact p:

* any draw on a token with p = 0, any id outside the vocabulary, any
  non-integer result and any exception fail the case outright: under a
  correct sampler they have probability 0, so these verdicts are certain;
* otherwise a G-test (Williams-corrected, cells with expected count < 5
  pooled) gives a p-value, and Holm's procedure over the panel keeps the
  family-wise false-positive rate at ``alpha``.

A pass means "no deviation large enough to detect at this sample size": each
case reports the TV it detects with 99% power.  Exact mode proves; this mode
only fails to refute.  numpy and scipy are imported when an audit runs.
"""

from __future__ import annotations

import functools
import importlib
import math
import operator
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

from specexact.errors import InvalidArgument, MissingDependency, Undecided
from specexact.numbers import as_distribution, check_same_vocabulary, cumulative_index
from specexact.tables import render_table
from specexact.validation import check_integer

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_SAMPLES",
    "DETECTION_POWER",
    "Case",
    "CaseResult",
    "Draws",
    "StatisticalReport",
    "default_panel",
    "detectable_tv",
    "g_test_cells",
    "judge_counts",
    "require_module",
    "scipy_stats",
    "statistical_audit",
    "statistical_random",
]

#: Draws per case: enough to detect a TV of about 0.02 with 99% power on the
#: default panel (see ``benchmarks/bench_statistical.py`` for the measured figures).
DEFAULT_SAMPLES = 30_000
#: Family-wise false-positive rate over the whole panel.
DEFAULT_ALPHA = Fraction(1, 1000)
#: The power at which ``detectable_tv`` is stated.
DETECTION_POWER = 0.99

_EDGE_CASES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("worked example", ("1/5", "1/2", "3/10"), ("1/2", "3/10", "1/5")),
    ("same top token, A = 3/5", ("1/2", "3/10", "1/5"), ("9/10", "1/20", "1/20")),
    ("two tokens swapped", ("1/3", "2/3"), ("2/3", "1/3")),
    ("p = q", ("1/5", "1/2", "3/10"), ("1/5", "1/2", "3/10")),
    ("q one-hot inside p's support", ("1/2", "1/2"), ("1", "0")),
    ("disjoint supports", ("1/2", "1/2", "0"), ("0", "0", "1")),
    ("p one-hot, q elsewhere", ("1", "0"), ("0", "1")),
    ("zeros in p and in q", ("0", "1/4", "3/4"), ("1/2", "0", "1/2")),
    ("near-equal, small residual", ("13/40", "7/20", "13/40"), ("7/20", "13/40", "13/40")),
)
_GENERATED = 7
_PANEL_SEED = 20240607


@final
@dataclass(frozen=True)
class Case:
    """One (p, q) of the panel, exact."""

    name: str
    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    #: How outcomes are shown in tables (default: the token id); chain cases
    #: label each sequence of tokens.
    labels: tuple[str, ...] | None = None

    def label(self, i: int) -> str:
        return str(i) if self.labels is None else self.labels[i]

    @classmethod
    def of(cls, name: str, p: Sequence[Any], q: Sequence[Any]) -> Case:
        """Validate p and q as distributions over one vocabulary."""
        pf = as_distribution(p, name=f"{name}: p")
        qf = as_distribution(q, name=f"{name}: q")
        check_same_vocabulary(pf, qf)
        return cls(name, pf, qf)


def default_panel() -> tuple[Case, ...]:
    """The edge cases plus pairs generated from a fixed seed (vocabularies of 3 to 8).

    Generated pairs use small integer weights, so some entries are 0 (q = 0 < p
    and p = 0 < q both occur) and every nonzero p is at least 1/72.
    """
    import random

    cases = [Case.of(name, p, q) for name, p, q in _EDGE_CASES]
    gen = random.Random(_PANEL_SEED)
    while len(cases) < len(_EDGE_CASES) + _GENERATED:
        size = gen.randint(3, 8)
        p = [gen.choice((0, 1, 2, 3, 5, 9)) for _ in range(size)]
        q = [gen.choice((0, 1, 2, 3, 5, 9)) for _ in range(size)]
        if sum(p) == 0 or sum(q) == 0 or p == q:
            continue
        cases.append(Case(f"generated V={size} #{len(cases) - len(_EDGE_CASES) + 1}",
                          tuple(Fraction(w, sum(p)) for w in p),
                          tuple(Fraction(w, sum(q)) for w in q)))
    return tuple(cases)


@final
@dataclass(frozen=True)
class Draws:
    """What a sampler returned on one case: counts per token, and everything else."""

    counts: tuple[int, ...]
    invalid: int = 0
    invalid_examples: tuple[str, ...] = ()
    crash: str | None = None
    #: What the invalid draws did ("were not tokens of the vocabulary").
    invalid_what: str = "were not tokens of the vocabulary"


@final
@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case.  ``p_value`` is 0 for certain failures."""

    case: Case
    samples: int
    counts: tuple[int, ...]
    invalid: int
    invalid_examples: tuple[str, ...]
    crash: str | None
    statistic: float
    df: int
    p_value: float
    threshold: float
    rejected: bool
    detectable_tv: float
    #: What the invalid draws did (see :class:`Draws`).
    invalid_what: str = "were not tokens of the vocabulary"

    @property
    def drawn(self) -> int:
        """Draws actually made (fewer than ``samples`` after a crash)."""
        return sum(self.counts) + self.invalid

    @property
    def observed(self) -> tuple[Fraction, ...]:
        """The observed law: counts / draws, token by token."""
        n = self.drawn
        return tuple(Fraction(c, n) if n else Fraction(0) for c in self.counts)

    @property
    def observed_tv(self) -> Fraction:
        n = self.drawn
        if not n:
            return Fraction(0)
        off = sum((abs(o - p) for o, p in zip(self.observed, self.case.p, strict=True)),
                  Fraction(0))
        return (off + Fraction(self.invalid, n)) / 2

    @property
    def support_violation(self) -> int:
        """Draws on tokens where p = 0."""
        return sum(c for c, p in zip(self.counts, self.case.p, strict=True) if not p)

    @property
    def reason(self) -> str:
        if self.crash is not None:
            return f"the sampler raised: {self.crash}"
        if self.invalid:
            return (f"{self.invalid} draws {self.invalid_what} "
                    f"({', '.join(self.invalid_examples)})")
        if self.support_violation:
            return f"{self.support_violation} draws on tokens where p = 0"
        verdict = "biased" if self.rejected else "consistent with p"
        return (f"{verdict}: G = {self.statistic:.2f}, df = {self.df}, "
                f"p-value = {self.p_value:.3g} (level {self.threshold:.3g})")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.case.name, "p": [str(x) for x in self.case.p],
            "q": [str(x) for x in self.case.q], "samples": self.samples,
            "counts": list(self.counts), "observed": [str(x) for x in self.observed],
            "observed_tv": str(self.observed_tv), "invalid": self.invalid,
            "invalid_examples": list(self.invalid_examples), "crash": self.crash,
            "support_violation": self.support_violation, "statistic": self.statistic,
            "df": self.df, "p_value": self.p_value, "threshold": self.threshold,
            "rejected": self.rejected, "detectable_tv": self.detectable_tv,
        }


@final
@dataclass(frozen=True)
class StatisticalReport:
    """The audit of a panel.  ``passed`` means no case was rejected."""

    cases: tuple[CaseResult, ...]
    alpha: Fraction
    samples: int
    seed: int
    elapsed: float
    #: How the code was called: "per-call" or the batched layout.
    mode: str = "per-call"

    @property
    def passed(self) -> bool:
        return not any(c.rejected for c in self.cases)

    @property
    def detectable(self) -> float:
        """The TV every case detects with 99% power (the worst case's figure)."""
        return max((c.detectable_tv for c in self.cases), default=0.0)

    @property
    def verdict(self) -> str:
        """"pass" only with the power the report states (every case detects some TV below
        1 with 99% power); "undecided" when no case deviated but the draws were too few
        for that; "fail" when a case deviated."""
        if not self.passed:
            return "fail"
        return "undecided" if self.detectable >= 1 else "pass"

    @property
    def exit_code(self) -> int:
        """``specexact audit``'s convention: 0 pass, 1 violation, 2 no verdict."""
        return {"pass": 0, "fail": 1, "undecided": 2}[self.verdict]

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        return tuple(c for c in self.cases if c.rejected)

    def format(self) -> str:
        """Headline, then one line per case and the observed law of each failure."""
        worst = self.detectable
        if self.verdict == "undecided":
            head = (f"UNDECIDED (statistical): no bias detected, but {self.samples} draws "
                    "per case are too few to detect even the largest bias with 99% power "
                    "on every case; raise --samples")
        elif self.passed:
            head = (f"PASS (statistical): no bias detected at TV >= {worst:.3g} with 99% "
                    "power on every case (a statistical bound, not a proof of exactness)")
        else:
            crashed = sum(1 for c in self.failures if c.crash is not None)
            deviate = len(self.failures) - crashed
            parts = ([f"{deviate} of {len(self.cases)} cases deviate from p"] if deviate
                     else []) + ([f"the sampler raised on {crashed} of {len(self.cases)} "
                                  "cases"] if crashed else [])
            head = "FAIL (statistical): " + "; ".join(parts)
        lines = [head, f"  {self.mode}: {len(self.cases)} cases x {self.samples} draws, "
                       f"seed {self.seed}, "
                       f"family-wise false-positive rate {float(self.alpha):.3g} (Holm)"]
        for c in self.cases:
            mark = "FAIL" if c.rejected else "ok  "
            detectable = f"{c.detectable_tv:.3g}" if c.detectable_tv < 1 else "none (too few draws)"
            lines.append(f"  {mark} {c.case.name}: {c.reason}; detectable TV {detectable}")
        for c in self.failures:
            lines.append(f"\n  {c.case.name}: observed law over {c.drawn} draws")
            lines.extend("    " + row for row in _law_table(c).splitlines())
        return "\n".join(lines)

    __str__ = format

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "verdict": self.verdict, "alpha": str(self.alpha),
                "samples": self.samples,
                "seed": self.seed, "mode": self.mode,
                "detectable_tv": self.detectable,
                "cases": [c.to_json() for c in self.cases]}


def _law_table(c: CaseResult) -> str:
    rows: list[tuple[str, ...]] = []
    n = c.drawn
    for i, (p, q, k) in enumerate(zip(c.case.p, c.case.q, c.counts, strict=True)):
        rows.append((c.case.label(i), str(p), str(q), str(k), f"{float(p) * n:.1f}",
                     f"{k / n - float(p):+.4f}" if n else ""))
    if c.invalid:
        rows.append(("other", "", "", str(c.invalid), "0", f"+{c.invalid / n:.4f}"))
    first = "token" if c.case.labels is None else "outcome"
    return render_table((first, "p", "q", "count", "expected", "observed - p"), rows,
                        rule=False)


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


def require_module(module: str) -> Any:
    """``module`` imported, or MissingDependency saying which package to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency.of(module.partition(".")[0], "the statistical audit") \
            from None


def scipy_stats() -> Any:
    """``scipy.stats``, or MissingDependency saying how to install scipy."""
    return require_module("scipy.stats")


def g_test_cells(probs: Sequence[Fraction], n: int) -> list[list[int]]:
    """Tokens with p > 0 grouped into G-test cells: the smallest pooled until each
    expects >= 5 of ``n`` draws; a small remainder joins the last cell.

    The grouping depends on p and n only, never on the counts.
    """
    order = sorted((i for i, p in enumerate(probs) if p), key=lambda i: (probs[i], i))
    cells: list[list[int]] = []
    current: list[int] = []
    acc = 0.0
    for i in order:
        current.append(i)
        acc += float(probs[i]) * n
        if acc >= 5:
            cells.append(current)
            current, acc = [], 0.0
    if current:
        if cells:
            cells[-1].extend(current)
        else:
            cells.append(current)
    return cells


def _pooled(counts: Sequence[int], probs: Sequence[Fraction], n: int
            ) -> tuple[list[int], list[float]]:
    """Observed and expected counts of the G-test cells (see :func:`g_test_cells`)."""
    cells = g_test_cells(probs, n)
    observed = [sum(counts[i] for i in cell) for cell in cells]
    expected = [sum(float(probs[i]) * n for i in cell) for cell in cells]
    return observed, expected


def _g_test(observed: Sequence[int], expected: Sequence[float]) -> tuple[float, int, float]:
    """Williams-corrected G statistic, its degrees of freedom, and the p-value.

    ``scipy.stats.power_divergence`` (the log-likelihood statistic) computes G;
    Williams' factor ``1 + (k + 1) / (6 n)`` then divides it, and the p-value is
    the chi-square tail at ``k - 1`` degrees of freedom.
    """
    k = len(observed)
    if k < 2:
        return 0.0, 0, 1.0
    stats = scipy_stats()
    n = sum(observed)
    g = float(stats.power_divergence(observed, expected, lambda_="log-likelihood").statistic)
    g /= 1.0 + (k + 1) / (6.0 * n)
    return g, k - 1, float(stats.chi2.sf(g, k - 1))


@functools.lru_cache(maxsize=256)
def detectable_tv(samples: int, df: int, level: float, power: float = DETECTION_POWER) -> float:
    """The smallest TV the G-test detects with ``power`` at ``level``, any direction.

    A deviation d with TV delta has noncentrality ``N * sum(d_i**2 / p_i) >=
    4 N delta**2`` (Cauchy-Schwarz), so solving ``4 N delta**2 = lambda*``,
    where lambda* gives the noncentral chi-square the wanted power, bounds
    the worst direction.  Asymptotic, like the test.
    """
    if samples < 1:
        msg = f"samples={samples!r} must be positive"
        raise InvalidArgument(msg)
    if df < 1:
        # One possible token: any deviation is mass elsewhere, seen at the
        # first draw that lands there.
        return -math.log1p(-power) / samples
    stats = scipy_stats()
    from scipy.optimize import brentq

    crit = float(stats.chi2.isf(level, df))
    lam = brentq(lambda x: float(stats.ncx2.sf(crit, df, x)) - power, 1e-9, 1e6)
    return math.sqrt(lam / (4.0 * samples))


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


@functools.cache
def _random_class() -> type:
    np = _numpy()

    class StatisticalRandom(np.random.Generator):  # type: ignore[misc,name-defined]
        """A ``numpy.random.Generator`` that also speaks specexact's rng protocol."""

        def categorical(self, weights: Sequence[Any]) -> int:
            ws = _float_weights(weights, "categorical")
            return cumulative_index(ws, float(self.random()) * math.fsum(ws))

        def bernoulli(self, prob: Any) -> bool:
            p = float(prob)
            if not 0.0 <= p <= 1.0:
                msg = f"bernoulli(prob={prob!r}): prob must lie in [0, 1]"
                raise ValueError(msg)
            return bool(self.random() < p)

    return StatisticalRandom


def _float_weights(weights: Sequence[Any], what: str) -> list[float]:
    ws = [float(w) for w in weights]
    if not ws or not all(math.isfinite(w) and w >= 0 for w in ws) or not any(ws):
        msg = (f"{what}(weights={list(weights)!r}): the weights must be finite, "
               "non-negative and not all zero")
        raise ValueError(msg)
    return ws


def statistical_random(seed: Any) -> Any:
    """The rng a statistical audit passes to ``fn(p, q, rng)``.

    It is a ``numpy.random.Generator`` (``PCG64`` seeded with ``seed``, an int
    or a ``numpy.random.SeedSequence``) with specexact's protocol on top:
    ``categorical(weights)`` and ``bernoulli(prob)`` draw from one
    ``random()`` each, as :class:`specexact.exact.SeededRandom` does, so a rule
    written for the exact mode runs here unchanged::

        >>> rng = statistical_random(0)
        >>> rng.categorical([0, 1]), rng.bernoulli(1), int(rng.choice(2, p=[0.0, 1.0]))
        (1, True, 1)
    """
    np = _numpy()
    return _random_class()(np.random.PCG64(seed))


def _rng_protocol_error(exc: AttributeError, rng: Any) -> InvalidArgument | None:
    """A usage error when the sampler asked the rng for a method it does not have."""
    if getattr(exc, "obj", None) is not rng:
        return None
    return InvalidArgument(
        f"the sampler called rng.{getattr(exc, 'name', '?')}, which the statistical "
        "mode's rng does not have: it is a numpy.random.Generator (random, choice, "
        "integers, uniform, ...) with specexact's categorical(weights) and "
        "bernoulli(prob); draw through one of those")


def _draw(fn: Callable[..., Any], case: Case, samples: int, rng: Any, np: Any,
          deadline: float | None, tick: Callable[[int], None] | None = None) -> Draws:
    vocab = len(case.p)
    p = np.array([float(x) for x in case.p], dtype=np.float64)
    q = np.array([float(x) for x in case.q], dtype=np.float64)
    counts = [0] * vocab
    invalid = 0
    examples: list[str] = []
    for i in range(samples):
        if (i & 1023) == 0:
            if deadline is not None and time.monotonic() > deadline:
                msg = ("the statistical audit ran out of time (max_seconds); lower the "
                       "number of samples or raise the limit -- no verdict")
                raise Undecided(msg)
            if tick is not None:
                tick(i)
        try:
            out = fn(p.copy(), q.copy(), rng)
        except AttributeError as exc:
            usage = _rng_protocol_error(exc, rng)
            if usage is not None:
                raise usage from None
            return Draws(tuple(counts), invalid, tuple(examples),
                         f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            return Draws(tuple(counts), invalid, tuple(examples),
                         f"{type(exc).__name__}: {exc}")
        token = _as_token(out)
        if token is not None and 0 <= token < vocab:
            counts[token] += 1
        else:
            invalid += 1
            if len(examples) < 3 and repr(out) not in examples:
                examples.append(repr(out))
    return Draws(tuple(counts), invalid, tuple(examples))


def _as_token(value: Any) -> int | None:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _numpy() -> Any:
    return require_module("numpy")


def statistical_audit(fn: Callable[..., Any], *, samples: int | None = None, seed: int = 0,
                      alpha: Fraction | float = DEFAULT_ALPHA,
                      cases: Sequence[Case] | None = None,
                      max_seconds: float | None = None,
                      progress: Callable[[int, int, str], None] | None = None
                      ) -> StatisticalReport:
    """Run ``fn(p, q, rng)`` ``samples`` times on each case and test its law against p.

    ``cases`` defaults to :func:`default_panel`; ``seed`` fixes every draw
    (each case gets its own stream from ``numpy.random.SeedSequence(seed)``);
    ``alpha`` is the family-wise false-positive rate.  Raises
    :class:`~specexact.errors.Undecided` if ``max_seconds`` (default: no
    limit) runs out.  ``progress(done, total, detail)`` is called as draws
    advance.  For code that takes whole batches, see
    :func:`specexact.statistical.batched.batched_statistical_audit` (much faster).
    """
    samples = DEFAULT_SAMPLES if samples is None else samples
    check_integer(samples, "samples", min_value=1)
    check_integer(seed, "seed", min_value=0)
    alpha_f = Fraction(alpha)
    if not 0 < alpha_f < 1:
        msg = f"alpha={alpha!r} must lie strictly between 0 and 1"
        raise InvalidArgument(msg)
    if max_seconds is not None and not max_seconds > 0:
        msg = f"max_seconds={max_seconds!r} must be positive or None"
        raise InvalidArgument(msg)
    panel = tuple(default_panel() if cases is None else cases)
    if not panel or not all(isinstance(c, Case) for c in panel):
        msg = "cases must be a non-empty sequence of Case (see Case.of)"
        raise InvalidArgument(msg)
    np = _numpy()
    scipy_stats()  # fail early, before any draw, if scipy or statsmodels is missing
    require_module("statsmodels.stats.multitest")

    start = time.monotonic()
    deadline = None if max_seconds is None else start + max_seconds
    streams = np.random.SeedSequence(seed).spawn(len(panel))
    total = samples * len(panel)

    def ticker(k: int) -> Callable[[int], None] | None:
        if progress is None:
            return None

        def tick(i: int) -> None:
            done = k * samples + i
            elapsed = time.monotonic() - start
            rate = done / elapsed if elapsed > 0 else 0.0
            left = f", ~{(total - done) / rate:.0f} s left" if rate > 0 else ""
            assert progress is not None
            progress(done, total, f"{k}/{len(panel)} cases, {rate:,.0f} draws/s{left}")
        return tick

    draws = [_draw(fn, case, samples, statistical_random(stream), np,
                   deadline, ticker(k))
             for k, (case, stream) in enumerate(zip(panel, streams, strict=True))]
    results = judge_counts(panel, draws, samples=samples, alpha=alpha_f)
    return StatisticalReport(results, alpha_f, samples, seed, time.monotonic() - start)


def judge_counts(cases: Sequence[Case], draws: Sequence[Draws], *, samples: int,
                 alpha: Fraction | float = DEFAULT_ALPHA) -> tuple[CaseResult, ...]:
    """Test counts collected elsewhere (``draws[i]`` on ``cases[i]``) against p.

    This is the decision part of :func:`statistical_audit`: certain failures
    first, then the G-test per case and Holm's procedure over the panel.
    """
    if len(cases) != len(draws) or not cases:
        msg = f"got {len(cases)} cases and {len(draws)} draws; give one Draws per case"
        raise InvalidArgument(msg)
    alpha_f = float(alpha)
    level = alpha_f / len(cases)  # Holm's strictest level: the one detectable_tv assumes
    tests = []
    for case, d in zip(cases, draws, strict=True):
        if len(d.counts) != len(case.p):
            msg = (f"{case.name}: {len(d.counts)} counts for a vocabulary of "
                   f"{len(case.p)} tokens")
            raise InvalidArgument(msg)
        certain = d.crash is not None or d.invalid > 0 or any(
            c for c, p in zip(d.counts, case.p, strict=True) if not p)
        observed, expected = _pooled(d.counts, case.p, sum(d.counts))
        tests.append((0.0, len(expected) - 1, 0.0) if certain
                     else _g_test(observed, expected))
    thresholds, rejected = _holm([t[2] for t in tests], alpha_f)
    return tuple(
        CaseResult(case, samples, d.counts, d.invalid, d.invalid_examples, d.crash,
                   g, df, p_value, thresholds[i], rejected[i],
                   _case_detectable_tv(case, samples, level), d.invalid_what)
        for i, (case, d, (g, df, p_value)) in enumerate(zip(cases, draws, tests, strict=True)))


def _case_detectable_tv(case: Case, samples: int, level: float) -> float:
    """The TV this case's test detects with 99% power, as designed for ``samples`` draws.

    It depends on the design only, so a crash or invalid draws that cut the
    counts short do not shrink it.  Moving mass between tokens pooled into one
    cell is invisible to the test, so the p-mass of every pooled cell is added:
    TV(r, p) <= TV of the pooled laws + sum of p over cells of two or more tokens.
    """
    cells = g_test_cells(case.p, samples)
    pooled_mass = sum((sum((case.p[i] for i in cell), Fraction(0))
                       for cell in cells if len(cell) > 1), Fraction(0))
    return detectable_tv(samples, len(cells) - 1, level) + float(pooled_mass)


def _holm(p_values: Sequence[float], alpha: float) -> tuple[list[float], list[bool]]:
    """Holm's step-down procedure: the level each p-value was held to, and the rejections.

    The rejections are ``statsmodels``' ``multipletests(method="holm")``; the
    level shown for the p-value of rank r (from the smallest, ties in panel
    order) is Holm's ``alpha / (m - r)``.
    """
    multipletests = require_module("statsmodels.stats.multitest").multipletests
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    thresholds = [0.0] * m
    for rank, i in enumerate(order):
        thresholds[i] = alpha / (m - rank)
    rejected = multipletests(list(p_values), alpha=alpha, method="holm")[0]
    return thresholds, [bool(r) for r in rejected]
