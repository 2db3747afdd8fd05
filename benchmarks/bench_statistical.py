"""Simulation of the statistical mode: false-positive rate, power at TV 0.02, and run time.

Run:  python benchmarks/bench_statistical.py [--reps N] [--record]

1. False positives.  A correct sampler's counts on a case are multinomial(N, p),
   so we draw those directly and run the audit's decision (``judge_counts``)
   on the whole default panel, ``reps`` times.  Holm rejects something iff
   the smallest p-value is <= alpha / m, so the family-wise rate is measured
   at the default alpha and at looser ones (better resolution), together with
   the calibration of the per-case G-test.
2. Power.  One case at a time is biased to a law at TV exactly 0.02 from p
   (the least detectable direction, mass moved in proportion to p between two
   halves of the support; and a concentrated one, mass moved from the largest
   token to the second largest); the panel is judged as a whole.
3. End to end.  ``statistical_audit`` on numpy samplers, right and wrong, at
   the default budget: verdicts and time, with the time of the bare sampler
   calls as the baseline ratio.

4. Batched mode (``--section batched``).  The default panel with 30,000
   draws per case through ``batched_statistical_audit`` (a vectorised numpy
   textbook sampler) against the same audit through per-call calls: the
   ratio, and the time.  The default batched audit (its default draws): the
   TV it detects with 99% power on every case, and the time.  The batched
   mode's false-positive rate: the audit of a correct batched sampler run
   ``--batched-reps`` times with different seeds, family-wise and per case.
   The default chain audit of a correct batched chain step: verdict, TV, time.

``--record`` writes the figures to benchmarks/statistical_figures.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specexact.statistical.audit import (
    DEFAULT_ALPHA,
    DEFAULT_SAMPLES,
    Case,
    Draws,
    default_panel,
    judge_counts,
    statistical_audit,
)

TV = 0.02


def _min_p_values(panel: tuple[Case, ...], laws: list[list[float]], samples: int,
                  reps: int, gen: np.random.Generator) -> np.ndarray:
    """Per replication, the p-values of every case (shape reps x cases)."""
    out = np.empty((reps, len(panel)))
    for r in range(reps):
        draws = [Draws(tuple(int(c) for c in gen.multinomial(samples, law))) for law in laws]
        out[r] = [res.p_value for res in judge_counts(panel, draws, samples=samples)]
    return out


def false_positives(panel: tuple[Case, ...], samples: int, reps: int, seed: int
                    ) -> dict[str, Any]:
    gen = np.random.default_rng(seed)
    laws = [[float(x) for x in c.p] for c in panel]
    pv = _min_p_values(panel, laws, samples, reps, gen)
    m = len(panel)
    fwer = {}
    for alpha in (float(DEFAULT_ALPHA), 0.01, 0.05):
        hits = int((pv.min(axis=1) <= alpha / m).sum())
        fwer[str(alpha)] = {"false_alarms": hits, "reps": reps, "rate": hits / reps}
    # Calibration of the per-case test (cases with a single possible token excluded).
    testable = [i for i, c in enumerate(panel) if sum(1 for x in c.p if x) > 1]
    flat = pv[:, testable].ravel()
    calib = {str(level): float((flat <= level).mean()) for level in (0.05, 0.01, 1e-3)}
    return {"family_wise": fwer, "per_case_rate_at_level": calib,
            "p_values": int(flat.size)}


def _biased(p: list[float], how: str) -> list[float] | None:
    """A law at TV exactly 0.02 from p, or None if p cannot carry it."""
    support = sorted((i for i, x in enumerate(p) if x > 0), key=lambda i: -p[i])
    if len(support) < 2:
        return None
    out = list(p)
    if how == "concentrated":
        a, b = support[0], support[1]
        out[a] -= TV
        out[b] += TV
        return out
    # Least detectable: split the support into two halves of nearly equal
    # mass and move mass in proportion to p (minimises sum d^2 / p).
    half_a, half_b, mass_a, mass_b = [], [], 0.0, 0.0
    for i in support:
        if mass_a <= mass_b:
            half_a.append(i)
            mass_a += p[i]
        else:
            half_b.append(i)
            mass_b += p[i]
    for i in half_a:
        out[i] -= TV * p[i] / mass_a
    for i in half_b:
        out[i] += TV * p[i] / mass_b
    return out


def power(panel: tuple[Case, ...], samples: int, reps: int, seed: int) -> dict[str, Any]:
    gen = np.random.default_rng(seed)
    base = [[float(x) for x in c.p] for c in panel]
    m = len(panel)
    level = float(DEFAULT_ALPHA) / m
    table: dict[str, Any] = {}
    for how in ("least-detectable", "concentrated"):
        for k, case in enumerate(panel):
            law = _biased(base[k], how)
            if law is None:
                continue
            laws = list(base)
            laws[k] = law
            detected = 0
            for _ in range(reps):
                draws = [Draws(tuple(int(c) for c in gen.multinomial(samples, w)))
                         for w in laws]
                results = judge_counts(panel, draws, samples=samples)
                # Holm: the panel fails iff its smallest p-value clears alpha / m.
                detected += min(r.p_value for r in results) <= level
            table.setdefault(how, {})[case.name] = detected / reps
    return table


# -- end to end ----------------------------------------------------------------------


def _cat(w: Any, rng: Any) -> int:
    c = np.cumsum(w)
    return int(np.searchsorted(c, rng.random() * c[-1], side="right"))


def textbook(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    if rng.random() * q[x] < p[x]:
        return x
    return _cat(np.maximum(p - q, 0.0), rng)


def naive_fallback(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    if rng.random() * q[x] < p[x]:
        return x
    return _cat(p, rng)


def residual_floor(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    if rng.random() * q[x] < p[x]:
        return x
    return _cat(np.maximum(p - q, 1e-3), rng)


def one_uniform(p: Any, q: Any, rng: Any) -> int:
    x = _cat(q, rng)
    u = rng.random()
    if u * q[x] < p[x]:
        return x
    r = np.maximum(p - q, 0.0)
    return int(min(np.searchsorted(np.cumsum(r) / r.sum(), u, side="right"), len(p) - 1))


def end_to_end(seeds: range) -> dict[str, Any]:
    panel = default_panel()
    out: dict[str, Any] = {}
    for fn in (textbook, naive_fallback, residual_floor, one_uniform):
        verdicts, times = [], []
        for seed in seeds:
            report = statistical_audit(fn, seed=seed)
            verdicts.append(report.passed)
            times.append(report.elapsed)
        out[fn.__name__] = {"passed": verdicts, "seconds": [round(t, 2) for t in times]}
    # Baseline: the bare calls the audit makes, without counting or testing.
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for case in panel:
        p = np.array([float(x) for x in case.p])
        q = np.array([float(x) for x in case.q])
        for _ in range(DEFAULT_SAMPLES):
            textbook(p.copy(), q.copy(), rng)
    bare = time.perf_counter() - start
    out["baseline_bare_calls_seconds"] = round(bare, 2)
    out["audit_over_bare_ratio"] = round(min(out["textbook"]["seconds"]) / bare, 2)
    return out


# -- batched -------------------------------------------------------------------------


def _rows_cat(w: Any, u: Any) -> Any:
    c = w.cumsum(axis=-1)
    return np.minimum((c <= (u * c[..., -1])[..., None]).sum(axis=-1), w.shape[-1] - 1)


def batched_textbook(P: Any, Q: Any, rng: Any) -> Any:
    n = len(P)
    rows = np.arange(n)
    x = _rows_cat(Q, rng.random(n))
    accept = rng.random(n) * Q[rows, x] < P[rows, x]
    residual = np.maximum(P - Q, 0.0)
    residual[accept] = P[accept]
    return np.where(accept, x, _rows_cat(residual, rng.random(n)))


def batched_chain(ids: Any, Q: Any, P: Any, rng: Any) -> Any:
    n, k = ids.shape
    rows = np.arange(n)
    out = np.full((n, k + 1), -1)
    alive = np.ones(n, dtype=bool)
    for j in range(k):
        x = ids[:, j]
        accept = rng.random(n) * Q[rows, j, x] < P[rows, j, x]
        rejected = alive & ~accept
        residual = np.maximum(P[:, j] - Q[:, j], 0)
        residual[~rejected] = 1.0
        y = _rows_cat(residual, rng.random(n))
        out[rejected, j] = y[rejected]
        out[alive & accept, j] = x[alive & accept]
        alive &= accept
    bonus = _rows_cat(P[:, k], rng.random(n))
    out[alive, k] = bonus[alive]
    return out


def batched(reps: int, samples_fpr: int) -> dict[str, Any]:
    from specexact.statistical.batched import DEFAULT_BATCHED_SAMPLES, batched_statistical_audit
    from specexact.statistical.batched_chain import batched_chain_audit

    out: dict[str, Any] = {}
    per_call = statistical_audit(textbook, samples=DEFAULT_SAMPLES, seed=0)
    fast = batched_statistical_audit(batched_textbook, samples=DEFAULT_SAMPLES, seed=0)
    out["panel_30000"] = {
        "per_call_seconds": round(per_call.elapsed, 2),
        "batched_seconds": round(fast.elapsed, 3),
        "ratio": round(per_call.elapsed / fast.elapsed, 1),
        "both_passed": per_call.passed and fast.passed}
    default = batched_statistical_audit(batched_textbook, seed=0)
    out["default_batched"] = {"samples": DEFAULT_BATCHED_SAMPLES, "passed": default.passed,
                              "detectable_tv_99": round(default.detectable, 5),
                              "seconds": round(default.elapsed, 2)}
    chain = batched_chain_audit(batched_chain, gamma=2, seed=0)
    out["default_chain_gamma2"] = {"samples": chain.samples, "passed": chain.passed,
                                   "detectable_tv_99": round(chain.detectable, 5),
                                   "seconds": round(chain.elapsed, 2)}
    # False positives of the whole batched pipeline (sampler, batching, counting, test).
    pv = np.array([[r.p_value for r in batched_statistical_audit(
        batched_textbook, samples=samples_fpr, seed=1000 + i).cases] for i in range(reps)])
    m = pv.shape[1]
    panel = default_panel()
    testable = [i for i, c in enumerate(panel) if sum(1 for x in c.p if x) > 1]
    flat = pv[:, testable].ravel()
    out["false_positives"] = {
        "reps": reps, "samples_per_case": samples_fpr,
        "family_wise": {str(a): float((pv.min(axis=1) <= a / m).mean())
                        for a in (float(DEFAULT_ALPHA), 0.01, 0.05, 0.2)},
        "per_case_rate_at_level": {str(level): float((flat <= level).mean())
                                   for level in (0.05, 0.01)}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10_000, help="panels for the FPR")
    parser.add_argument("--power-reps", type=int, default=200, help="panels per biased case")
    parser.add_argument("--e2e-seeds", type=int, default=1, help="seeds per sampler end to end")
    parser.add_argument("--batched-reps", type=int, default=200,
                        help="batched audits of a correct sampler for the batched FPR")
    parser.add_argument("--batched-fpr-samples", type=int, default=5000,
                        help="draws per case in those audits")
    parser.add_argument("--section", choices=("all", "per-call", "batched"), default="all")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    panel = default_panel()
    figures: dict[str, Any] = {"samples_per_case": DEFAULT_SAMPLES, "cases": len(panel),
                               "alpha": str(DEFAULT_ALPHA), "tv": TV}
    if args.section in ("all", "batched"):
        t = time.perf_counter()
        figures["batched"] = batched(args.batched_reps, args.batched_fpr_samples)
        b = figures["batched"]
        print(f"batched mode ({time.perf_counter() - t:.0f} s):")
        print(f"  default panel x {DEFAULT_SAMPLES} draws: per-call "
              f"{b['panel_30000']['per_call_seconds']} s, batched "
              f"{b['panel_30000']['batched_seconds']} s, ratio {b['panel_30000']['ratio']}x")
        d = b["default_batched"]
        print(f"  default batched audit ({d['samples']} draws per case): detects TV "
              f"{d['detectable_tv_99']} at 99% power on every case, {d['seconds']} s")
        c = b["default_chain_gamma2"]
        print(f"  default chain audit (gamma 2, {c['samples']} sequences per case): "
              f"passed={c['passed']}, detects TV {c['detectable_tv_99']}, {c['seconds']} s")
        print("  false positives: " + json.dumps(b["false_positives"]))
    if args.section == "batched":
        if args.record:
            _record(figures, only="batched")
        return
    t = time.perf_counter()
    figures["false_positives"] = false_positives(panel, DEFAULT_SAMPLES, args.reps, 1)
    print(f"false positives ({args.reps} panels, {time.perf_counter() - t:.0f} s):")
    print(json.dumps(figures["false_positives"], indent=2))
    t = time.perf_counter()
    figures["power_at_tv_0.02"] = power(panel, DEFAULT_SAMPLES, args.power_reps, 2)
    print(f"power at TV {TV} ({args.power_reps} panels per case, "
          f"{time.perf_counter() - t:.0f} s):")
    for how, row in figures["power_at_tv_0.02"].items():
        print(f"  {how}: min {min(row.values()):.3f}, median "
              f"{sorted(row.values())[len(row) // 2]:.3f}")
        for name, value in row.items():
            print(f"    {value:.3f}  {name}")
    figures["end_to_end"] = end_to_end(range(args.e2e_seeds))
    print(f"end to end (default budget, seeds 0-{args.e2e_seeds - 1}):")
    print(json.dumps(figures["end_to_end"], indent=2))
    if args.record:
        _record(figures)


def _record(figures: dict[str, Any], only: str | None = None) -> None:
    path = Path(__file__).with_name("statistical_figures.json")
    if only is not None and path.exists():
        # Keep the other sections' figures; replace only this one.
        recorded = json.loads(path.read_text())
        recorded[only] = figures[only]
        figures = recorded
    path.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"recorded in {path}")


if __name__ == "__main__":
    main()

