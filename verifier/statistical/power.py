"""The power of a statistical test design: how likely it is to see a known bias.

Engine test suites check samplers with a histogram and a threshold.  Given
the *exact* law a buggy sampler produces (from the exact engine) and the
target p, :func:`test_power` computes the probability that one run of a test
design with N draws flags the bug, and :func:`samples_needed` the N it needs
to flag it with 99% probability.  The designs (``TEST_DESIGNS``):

``"l2"``
    Histogram L2 distance.  With ``threshold=t``: flag when ``||h - p||_2 >
    t``.  Without (the default), vLLM's random-reference design: histograms
    at N = 10, 100, ..., N draws; flag unless the distance to p shrinks from
    the first to the last more than 20 times faster than the average
    distance to 100 random laws softmax(U[0, 1)^V).
``"kl"``
    ``|KL(p || h_spec) - KL(p || h_plain)| >= tol`` (``tol = threshold``,
    default 0.01) with N draws of the sampler and N of plain sampling from p;
    h is floored at 1e-10 so a token never drawn does not give infinity.
``"chi2"``
    Pearson's chi-square against p (tokens with p > 0, no pooling) at level
    ``alpha``; a draw where p = 0 flags (its term is infinite).
``"mean-se"``
    The mean token id (of a sequence: the mean of its ids) within ``k``
    standard errors of p's mean (``k`` default 6, the error from p's spread).
``"g"``
    specexact's own: the Williams-corrected G-test with cells pooled to an
    expected count of 5, at level ``alpha``; a draw where p = 0 flags.

Draws that are not tokens of the vocabulary (ids outside it, crashes: mass
the law puts on such outcomes) flag every design, since the engine test
errors out.  So ``P(flag) = 1 - (1 - b)^N (1 - P(flag | no such draw))``
with b that mass, exactly; the conditional part is computed exactly from
the binomial law when only two outcomes are possible and the design uses one
sample, and otherwise by simulating counts from the exact law (a fixed
seed, ``replicates`` runs), with the half-width of a 99% interval stated as
``error``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

from specexact.errors import InvalidArgument
from specexact.numbers import to_fraction
from specexact.statistical.audit import g_test_cells, require_module
from specexact.validation import check_choice, check_integer

__all__ = [
    "DEFAULT_REPLICATES",
    "TEST_DESIGNS",
    "NeededSamples",
    "Power",
    "samples_needed",
    "test_power",
]

TEST_DESIGNS = ("l2", "kl", "chi2", "mean-se", "g")
DEFAULT_REPLICATES = 2000
_KL_FLOOR = 1e-10
_L2_MULTIPLIER = 20.0
_L2_REFERENCES = 100
_TARGET_POWER = 0.99
_MAX_EXACT_SAMPLES = 2_000_000
_L2_MIN_SAMPLES = 100
#: Designs without a stated level: their N for 99% also keeps false alarms at p <= 1%.
_UNCALIBRATED = ("l2", "kl")


@final
@dataclass(frozen=True)
class Power:
    """P(the design flags the bug) with ``samples`` draws, and how it was computed.

    ``error`` is the half-width of a 99% interval for simulated figures (0 when exact).
    """

    test: str
    samples: int
    probability: float
    method: str
    error: float
    replicates: int

    def to_json(self) -> dict[str, Any]:
        return {"test": self.test, "samples": self.samples, "probability": self.probability,
                "method": self.method, "error": self.error, "replicates": self.replicates}


@final
@dataclass(frozen=True)
class NeededSamples:
    """The draws a design needs to flag the bug with 99% probability (None: never or
    not within ``max_samples``), and why."""

    test: str
    samples: int | None
    note: str

    def text(self) -> str:
        return f"{self.samples:,}" if self.samples is not None else self.note

    def to_json(self) -> dict[str, Any]:
        return {"test": self.test, "samples": self.samples, "note": self.note}


# --------------------------------------------------------------------------
# The laws as float vectors over one list of outcomes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Laws:
    outcomes: tuple[Hashable, ...]  # histogram bins
    p: tuple[Fraction, ...]
    r: tuple[Fraction, ...]  # the law on the bins, conditioned on no bad draw
    bad: Fraction  # mass on outcomes that are not bins (ids outside, crashes)
    scores: tuple[Fraction, ...]


def _is_bin(outcome: Hashable, vocab: int | None) -> bool:
    if isinstance(outcome, bool):
        return False
    if isinstance(outcome, int):
        return vocab is None or 0 <= outcome < vocab
    if isinstance(outcome, tuple) and outcome:
        return all(_is_bin(x, vocab) for x in outcome)
    return False


def _score(outcome: Hashable) -> Fraction:
    if isinstance(outcome, tuple):
        return Fraction(sum(outcome), len(outcome))
    assert isinstance(outcome, int)
    return Fraction(outcome)


def _as_law(value: Any, name: str) -> dict[Hashable, Fraction]:
    items: Any
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = enumerate(value)
    else:
        msg = f"{name}={value!r} must be a mapping outcome -> probability or a sequence"
        raise InvalidArgument(msg)
    out = {k: to_fraction(v, name=f"{name}[{k!r}]") for k, v in items}
    if any(v < 0 for v in out.values()) or sum(out.values(), Fraction(0)) != 1:
        msg = f"{name} must be nonnegative and sum to exactly 1"
        raise InvalidArgument(msg)
    return out


def _laws(law: Any, p: Any) -> _Laws:
    vocab = len(p) if isinstance(p, Sequence) and not isinstance(p, Mapping) else None
    pl = _as_law(p, "p")
    rl = _as_law(law, "law")
    bad_p = [k for k, v in pl.items() if v and not _is_bin(k, vocab)]
    if bad_p:
        msg = f"p gives mass to {bad_p[0]!r}, which is not a token id or a tuple of ids"
        raise InvalidArgument(msg)
    bins = sorted({k for k in pl if _is_bin(k, vocab)}
                  | {k for k, v in rl.items() if v and _is_bin(k, vocab)},
                  key=lambda k: (isinstance(k, tuple), k))
    bad = sum((v for k, v in rl.items() if not _is_bin(k, vocab)), Fraction(0))
    good = 1 - bad
    r = tuple(rl.get(k, Fraction(0)) / good if good else Fraction(0) for k in bins)
    return _Laws(tuple(bins), tuple(pl.get(k, Fraction(0)) for k in bins), r, bad,
                 tuple(_score(k) for k in bins))


# --------------------------------------------------------------------------
# The designs: count matrices [R, bins] -> flagged [R]
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Design:
    test: str
    alpha: float
    threshold: float | None
    k: float
    seed: int


def _off_support(counts: Any, laws: _Laws, np: Any) -> Any:
    zero = np.array([not x for x in laws.p])
    return counts[:, zero].sum(axis=1) > 0 if zero.any() else np.zeros(len(counts), bool)


def _flags_chi2(counts: Any, n: int, laws: _Laws, d: _Design, np: Any, stats: Any) -> Any:
    support = np.array([bool(x) for x in laws.p])
    df = int(support.sum()) - 1
    flagged = _off_support(counts, laws, np)
    if df < 1:
        return flagged
    expected = np.array([float(x) for x in laws.p])[support] * n
    stat = ((counts[:, support] - expected) ** 2 / expected).sum(axis=1)
    return flagged | (stat > float(stats.chi2.isf(d.alpha, df)))


def _flags_g(counts: Any, n: int, laws: _Laws, d: _Design, np: Any, stats: Any) -> Any:
    cells = g_test_cells(laws.p, n)
    flagged = _off_support(counts, laws, np)
    k = len(cells)
    if k < 2:
        return flagged
    obs = np.stack([counts[:, cell].sum(axis=1) for cell in cells], axis=1).astype(float)
    exp = np.array([sum(float(laws.p[i]) for i in cell) * n for cell in cells])
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(obs > 0, obs * np.log(obs / exp), 0.0)
    g = 2.0 * terms.sum(axis=1) / (1.0 + (k + 1) / (6.0 * n))
    return flagged | (g > float(stats.chi2.isf(d.alpha, k - 1)))


def _flags_mean(counts: Any, n: int, laws: _Laws, d: _Design, np: Any) -> Any:
    s = np.array([float(x) for x in laws.scores])
    mu = sum((p * x for p, x in zip(laws.p, laws.scores, strict=True)), Fraction(0))
    var = sum((p * (x - mu) ** 2 for p, x in zip(laws.p, laws.scores, strict=True)),
              Fraction(0))
    mean = counts @ s / n
    if var == 0:
        return np.abs(mean - float(mu)) > 1e-12
    return np.abs(mean - float(mu)) > d.k * math.sqrt(float(var) / n)


def _kl(counts: Any, n: int, p: Any, np: Any) -> Any:
    h = np.maximum(counts / n, _KL_FLOOR)
    support = p > 0
    return (p[support] * np.log(p[support] / h[:, support])).sum(axis=1)


def _l2_sizes(n: int) -> list[int]:
    sizes = []
    size = 10
    while size < n:
        sizes.append(size)
        size *= 10
    return [*sizes, n]


def _references(vocab: int, seed: int, np: Any) -> Any:
    gen = np.random.default_rng((seed, 77))
    raw = np.exp(gen.random((_L2_REFERENCES, vocab)))
    return raw / raw.sum(axis=1, keepdims=True)


def _simulate(laws: _Laws, n: int, d: _Design, replicates: int, np: Any, stats: Any
              ) -> float:
    """P(flag | no bad draw), estimated from ``replicates`` simulated runs."""
    gen = np.random.default_rng((d.seed, n))
    r = np.array([float(x) for x in laws.r])
    r = r / r.sum()
    p = np.array([float(x) for x in laws.p])
    if d.test == "l2" and d.threshold is None:
        refs = _references(len(p), d.seed, np)
        ref_sq, ref_sum = float((refs ** 2).sum()), refs.sum(axis=0)
        sizes = _l2_sizes(n)
        dist_t = np.empty((replicates, len(sizes)))
        dist_r = np.empty((replicates, len(sizes)))
        for j, size in enumerate(sizes):
            h = gen.multinomial(size, r, size=replicates) / size
            dist_t[:, j] = np.sqrt(((h - p) ** 2).sum(axis=1))
            # ||refs - h||_F^2 over the 100 references, without the [R, 100, V] array.
            frob = ref_sq - 2 * h @ ref_sum + _L2_REFERENCES * (h ** 2).sum(axis=1)
            dist_r[:, j] = np.sqrt(np.maximum(frob, 0.0)) / _L2_REFERENCES
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_t = np.where(dist_t[:, -1] > 0, dist_t[:, 0] / dist_t[:, -1], np.inf)
            ratio_r = dist_r[:, 0] / dist_r[:, -1]
        return float((~(ratio_t > _L2_MULTIPLIER * ratio_r)).mean())
    counts = gen.multinomial(n, r, size=replicates)
    if d.test == "l2":
        assert d.threshold is not None
        flagged = np.sqrt(((counts / n - p) ** 2).sum(axis=1)) > d.threshold
    elif d.test == "kl":
        plain = gen.multinomial(n, p / p.sum(), size=replicates)
        tol = 0.01 if d.threshold is None else d.threshold
        flagged = np.abs(_kl(counts, n, p, np) - _kl(plain, n, p, np)) >= tol
    else:
        flagged = _flags(counts, n, laws, d, np, stats)
    return float(flagged.mean())


def _flags(counts: Any, n: int, laws: _Laws, d: _Design, np: Any, stats: Any) -> Any:
    if d.test == "chi2":
        return _flags_chi2(counts, n, laws, d, np, stats)
    if d.test == "g":
        return _flags_g(counts, n, laws, d, np, stats)
    if d.test == "l2":
        p = np.array([float(x) for x in laws.p])
        return np.sqrt(((counts / n - p) ** 2).sum(axis=1)) > (d.threshold or 0.0)
    return _flags_mean(counts, n, laws, d, np)


def _exact_two(laws: _Laws, n: int, d: _Design, np: Any, stats: Any) -> float | None:
    """P(flag | no bad draw) summed over the binomial law when two bins can occur."""
    live = [i for i, x in enumerate(laws.r) if x]
    one_sample = d.test in ("chi2", "g", "mean-se") or (d.test == "l2" and d.threshold)
    if len(laws.outcomes) > 2 or not one_sample or n > _MAX_EXACT_SAMPLES:
        return None
    if len(live) == 1:
        counts = np.zeros((1, len(laws.outcomes)))
        counts[0, live[0]] = n
        return float(_flags(counts, n, laws, d, np, stats)[0])
    ks = np.arange(n + 1)
    counts = np.zeros((n + 1, len(laws.outcomes)))
    counts[:, 0] = ks
    counts[:, 1] = n - ks
    pmf = stats.binom.pmf(ks, n, float(laws.r[0]))
    return float(min(1.0, (pmf * _flags(counts, n, laws, d, np, stats)).sum()))


def _modules() -> tuple[Any, Any]:
    return require_module("numpy"), require_module("scipy.stats")


def _design(test: str, alpha: Any, threshold: Any, k: Any, seed: int) -> _Design:
    check_choice(test, "test", TEST_DESIGNS)
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        a = -1.0
    if not 0 < a < 1:
        msg = f"alpha={alpha!r} must lie strictly between 0 and 1"
        raise InvalidArgument(msg)
    if threshold is not None and not (isinstance(threshold, (int, float))
                                      and not isinstance(threshold, bool) and threshold > 0):
        msg = f"threshold={threshold!r} must be a positive number or None"
        raise InvalidArgument(msg)
    if not (isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0):
        msg = f"k={k!r} must be a positive number of standard errors"
        raise InvalidArgument(msg)
    check_integer(seed, "seed", min_value=0)
    return _Design(test, a, None if threshold is None else float(threshold), float(k), seed)


def test_power(law: Any, p: Any, *, test: str, samples: int, alpha: Any = 0.01,
               threshold: float | None = None, k: float = 6.0,
               replicates: int = DEFAULT_REPLICATES, seed: int = 0) -> Power:
    """P(the design ``test`` flags ``law`` as different from ``p``) with ``samples`` draws.

    ``law`` and ``p`` are exact laws: sequences (token i) or mappings outcome ->
    probability (tuples of ids for multi-token outcomes, anything else for
    invalid outputs).  ``alpha`` is the level of ``"chi2"`` and ``"g"``;
    ``threshold`` the L2 threshold (None: the random-reference design) or the
    KL tolerance (default 0.01); ``k`` the standard errors of ``"mean-se"``.
    With ``law == p`` the result is the design's false-alarm rate.

    >>> fair = ["1/2", "1/2"]
    >>> round(test_power(fair, fair, test="g", samples=1000).probability, 3)
    0.01
    >>> test_power(["1/4", "3/4"], fair, test="g", samples=1000).probability
    1.0
    """
    np, stats = _modules()
    check_integer(samples, "samples", min_value=1)
    check_integer(replicates, "replicates", min_value=1)
    d = _design(test, alpha, threshold, k, seed)
    if test == "l2" and threshold is None and samples < _L2_MIN_SAMPLES:
        msg = (f"samples={samples} is too few for the random-reference L2 design, which "
               f"compares histograms of 10 and N draws: it needs N >= {_L2_MIN_SAMPLES} "
               "(or give threshold=)")
        raise InvalidArgument(msg)
    laws = _laws(law, p)
    clean = (1 - float(laws.bad)) ** samples if laws.bad else 1.0
    if laws.bad == 1:
        return Power(test, samples, 1.0, "exact (every draw is an invalid output)", 0.0, 0)
    exact = _exact_two(laws, samples, d, np, stats)
    if exact is not None:
        return Power(test, samples, 1 - clean * (1 - exact), "exact (binomial)", 0.0, 0)
    estimate = _simulate(laws, samples, d, replicates, np, stats)
    half = max(2.576 * math.sqrt(estimate * (1 - estimate) / replicates), 4.61 / replicates)
    return Power(test, samples, 1 - clean * (1 - estimate),
                 f"simulation from the exact law ({replicates} runs)", clean * half, replicates)


def _limit_note(laws: _Laws, d: _Design) -> str | None:
    """Why the design never reaches 99% however many draws, or None."""
    if laws.bad:
        return None
    if laws.r == laws.p:
        return "never: the law is p here"
    if d.test == "mean-se":
        mu_p = sum((a * s for a, s in zip(laws.p, laws.scores, strict=True)), Fraction(0))
        mu_r = sum((a * s for a, s in zip(laws.r, laws.scores, strict=True)), Fraction(0))
        if mu_p == mu_r:
            return "never: the bias leaves the mean token id unchanged"
    if d.test == "l2" and d.threshold is not None:
        dist = math.sqrt(sum(float(a - b) ** 2 for a, b in zip(laws.r, laws.p, strict=True)))
        if dist <= d.threshold:
            return f"never: the L2 distance tends to {dist:.3g} <= {d.threshold:g}"
    if d.test == "kl":
        tol = 0.01 if d.threshold is None else d.threshold
        lim = sum(float(a) * math.log(float(a) / max(float(b), _KL_FLOOR))
                  for a, b in zip(laws.p, laws.r, strict=True) if a)
        if lim < tol:
            return f"never: KL(p || law) = {lim:.3g} < {tol:g}"
    return None


def _grid(limit: int) -> list[int]:
    out = []
    for e in range(1, 10):
        for m in (1, 2, 5):
            if m * 10 ** e <= limit:
                out.append(m * 10 ** e)
    return out


def samples_needed(law: Any, p: Any, *, test: str, alpha: Any = 0.01,
                   threshold: float | None = None, k: float = 6.0,
                   replicates: int = DEFAULT_REPLICATES, seed: int = 0,
                   max_samples: int = 10 ** 8) -> NeededSamples:
    """The smallest N (to about 2%) at which the design flags ``law`` with 99% probability.

    Searched on 10, 20, 50, 100, ... and refined by bisection, each point
    computed as in :func:`test_power` (so simulated points carry its error).
    The L2 and KL designs have no stated level and flag correct samplers at
    small N, so for them N must also keep the false alarms at p (the power
    at ``law = p``) at or below 1%.  ``None``, with the reason, when the
    statistic's limit stays inside the design's tolerance, or when
    ``max_samples`` draws are not enough.
    """
    check_integer(max_samples, "max_samples", min_value=10)
    d = _design(test, alpha, threshold, k, seed)
    laws = _laws(law, p)
    note = _limit_note(laws, d)
    if note is not None:
        return NeededSamples(test, None, note)

    def power_at(n: int, of: Any) -> float:
        return test_power(of, p, test=test, samples=n, alpha=alpha, threshold=threshold,
                          k=k, replicates=replicates, seed=seed).probability

    alarmed: list[int] = []  # N that detect but flag p itself too often

    def enough(n: int) -> bool:
        if power_at(n, law) < _TARGET_POWER:
            return False
        if test in _UNCALIBRATED and power_at(n, p) > 1 - _TARGET_POWER:
            alarmed.append(n)
            return False
        return True

    low = _L2_MIN_SAMPLES - 1 if test == "l2" and threshold is None else 1
    for n in (n for n in _grid(max_samples) if n > low):
        if enough(n):
            high = n
            break
        low = n
    else:
        if alarmed:
            return NeededSamples(test, None, (
                f"none with false alarms <= 1% (detects from {min(alarmed):,})"))
        return NeededSamples(test, None, f"not reached by {max_samples:,} draws")
    if test in _UNCALIBRATED:
        note = "with false alarms at p <= 1%"
    while high - low > max(1, high // 50):
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return NeededSamples(test, high, note or "")


test_power.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
