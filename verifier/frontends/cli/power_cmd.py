"""``specexact power [RULE ...]``: which test designs see the catalogue's bugs, and when.

For each rule (default: every wrong sampler and step rule of the catalogue)
the exact law is computed at the rule's witness and at a panel of cases (the
statistical audit's panel for samplers; model pairs for steps); then, for
each test design of :mod:`specexact.statistical.power`, the probability that one
run with N draws flags the bug, and the N it needs for 99%.  The case where
the bug is largest (in TV) is proposed as the input to paste into an
engine's own test.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TextIO

from specexact.errors import InvalidArgument, MissingDependency, SpecexactError
from specexact.tables import render_table

__all__ = ["add_power_parser", "run_power"]

DEFAULT_SAMPLES = (10_000, 100_000)
_PLOT_GRID = tuple(m * 10 ** e for e in range(1, 7) for m in (1, 2, 5))


def add_power_parser(sub: Any, parents: Any = ()) -> None:
    """Register ``specexact power`` on the CLI's subparsers (``parents``: the options every
    subcommand takes)."""
    from specexact.statistical.power import DEFAULT_REPLICATES, TEST_DESIGNS

    power = sub.add_parser(
        "power", parents=list(parents),
        help="the power of engine-style statistical tests against known bugs",
        description="For each catalogue rule, compute from its exact law the probability "
                    "that a test design flags the bug with N draws, and the N it needs "
                    "for 99%; propose the input where the bug is largest.",
        epilog="designs: l2 (histogram L2, vLLM's random-reference design), kl "
               "(|KL(p, spec) - KL(p, plain)| < 0.01), chi2 (Pearson at --alpha), mean-se "
               "(mean token id within 6 standard errors), g (specexact's G-test at "
               "--alpha).  exit codes: 0 done, 2 usage error, 3 the plot cannot be written, "
               "130/143 interrupted")
    power.add_argument("rules", nargs="*", metavar="RULE",
                       help="catalogue rule names (default: every wrong sampler and step "
                            "rule)")
    power.add_argument("--test", action="append", choices=TEST_DESIGNS, dest="tests",
                       help="a test design; repeat for several (default: all five)")
    power.add_argument("--samples", type=int, nargs="+", metavar="N",
                       help="draws per test run (default 10000 100000)")
    power.add_argument("--alpha", type=float, default=0.01,
                       help="level of the chi2 and g designs (default 0.01)")
    power.add_argument("--replicates", type=int, default=DEFAULT_REPLICATES, metavar="R",
                       help="simulated runs per figure where no exact sum applies "
                            f"(default {DEFAULT_REPLICATES})")
    power.add_argument("--seed", type=int, default=0, metavar="N",
                       help="seed of the simulations (default 0)")
    power.add_argument("--json", action="store_true", help="print one JSON object")
    power.add_argument("--plot", metavar="FILE.png",
                       help="plot P(flag) against N, one curve per rule (needs matplotlib)")


@dataclass(frozen=True)
class _CaseLaw:
    name: str
    p: Any  # a tuple (token i) or a mapping (sequences)
    q: str
    law: dict[Hashable, Fraction] | None
    note: str | None  # why no law (the code raised on this input)

    @property
    def tv(self) -> Fraction:
        if self.law is None:
            return Fraction(0)
        p = dict(enumerate(self.p)) if isinstance(self.p, tuple) else dict(self.p)
        keys = set(p) | set(self.law)
        return sum((abs(self.law.get(k, Fraction(0)) - p.get(k, Fraction(0)))
                    for k in keys), Fraction(0)) / 2


def _text(values: Sequence[Any]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


class _Raised:
    """Stands for "the code raised" in a law (an outcome no engine test survives)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(("raised", self.name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Raised) and other.name == self.name

    def __repr__(self) -> str:
        return f"<raised {self.name}>"


def _sampler_law(rule: Callable[..., Any], p: Sequence[Fraction], q: Sequence[Fraction],
                 bits: int | None) -> dict[Hashable, Fraction]:
    """The exact law; when the code raises on some paths, those paths' mass as a crash."""
    from specexact import SamplerRaised, output_distribution

    try:
        return dict(output_distribution(rule, p, q, uniform_bits=bits))
    except SamplerRaised:
        pass

    def catching(pp: Any, qq: Any, rng: Any) -> Any:
        try:
            return rule(pp, qq, rng)
        except Exception as exc:
            return _Raised(type(exc).__name__)

    return dict(output_distribution(catching, p, q, uniform_bits=bits))


def _sampler_cases(entry: Any) -> list[_CaseLaw]:
    from specexact.statistical.audit import default_panel

    pairs = []
    if entry.witness is not None:
        pairs.append(("witness", tuple(entry.witness.p), tuple(entry.witness.q)))
    pairs.extend((c.name, c.p, c.q) for c in default_panel())
    out = []
    for name, p, q in pairs:
        try:
            law: dict[Hashable, Fraction] | None = _sampler_law(entry.rule, p, q,
                                                                entry.uniform_bits)
            note = None
        except SpecexactError as exc:
            law, note = None, f"no exact law: {exc}".splitlines()[0]
        out.append(_CaseLaw(name, p, f"q = {_text(q)}", law, note))
    return out


def _step_cases(entry: Any) -> list[_CaseLaw]:
    from specexact.steps import decode_distribution, random_model_pair, target_distribution

    horizon = entry.witness.horizon if entry.witness is not None else 3
    pairs: list[tuple[str, Any, Any]] = []
    if entry.witness is not None:
        pairs.append(("witness", entry.witness.target, entry.witness.draft))
    if not entry.stateful and entry.target_kind == "any":
        for vocab, seed, kind in ((2, 1, "random"), (3, 2, "random"), (3, 3, "zeros"),
                                  (2, 4, "context-free")):
            target, draft = random_model_pair(vocab, seed, kind=kind)
            pairs.append((f"{kind} models V={vocab} (seed {seed})", target, draft))
    out = []
    for name, target, draft in pairs:
        try:
            expected = dict(target_distribution(target, horizon))
            law: dict[Hashable, Fraction] | None = dict(
                decode_distribution(entry.rule, target, draft, horizon))
            note = None
        except SpecexactError as exc:
            expected, law = {}, None
            note = f"no exact law: {exc}".splitlines()[0]
        out.append(_CaseLaw(f"{name}, {horizon} tokens", expected or {(): Fraction(1)},
                            f"target {target!r}, draft {draft!r}", law, note))
    return out


def _rules(names: Sequence[str]) -> list[Any]:
    from specexact.counterexamples.catalogue import catalogue, get

    if not names:
        return [e for e in catalogue() if not e.lossless and not e.lossy_by_design]
    try:
        return [get(name) for name in names]
    except KeyError as exc:
        raise InvalidArgument(str(exc.args[0])) from None


@dataclass(frozen=True)
class _Options:
    tests: tuple[str, ...]
    samples: tuple[int, ...]
    alpha: float
    replicates: int
    seed: int


def _power(case: _CaseLaw, test: str, n: int, o: _Options, law: Any = None) -> Any:
    from specexact.statistical.power import test_power

    return test_power(case.law if law is None else law, case.p, test=test, samples=n,
                      alpha=o.alpha, replicates=o.replicates, seed=o.seed)


def _case_json(case: _CaseLaw, o: _Options, detailed: bool) -> dict[str, Any]:
    from specexact.statistical.power import samples_needed
    from specexact.witness import outcome_key

    data: dict[str, Any] = {"name": case.name, "q": case.q, "tv": str(case.tv),
                            "note": case.note}
    if isinstance(case.p, tuple):
        data["p"] = [str(x) for x in case.p]
    else:
        data["p"] = {outcome_key(k): str(v) for k, v in case.p.items() if v}
    if case.law is None:
        return data
    data["law"] = {outcome_key(k) if isinstance(k, (int, tuple)) else repr(k): str(v)
                   for k, v in case.law.items()}
    data["power"] = {t: {str(n): _power(case, t, n, o).to_json() for n in o.samples}
                     for t in o.tests}
    if detailed:
        data["false_alarms"] = {t: {str(n): _power(case, t, n, o, case.p).probability
                                    for n in o.samples} for t in o.tests}
        data["needed"] = {t: samples_needed(case.law, case.p, test=t, alpha=o.alpha,
                                            replicates=o.replicates, seed=o.seed).to_json()
                          for t in o.tests}
    return data


def _rule_json(entry: Any, o: _Options) -> dict[str, Any]:
    cases = _sampler_cases(entry) if entry.kind == "sampler" else _step_cases(entry)
    with_law = [c for c in cases if c.law is not None]
    worst = max(with_law, key=lambda c: c.tv, default=None)
    witness = next((c for c in with_law if c.name.startswith("witness")), None)
    return {"name": entry.name, "kind": entry.kind, "lossless": entry.lossless,
            "lossy_by_design": entry.lossy_by_design,
            "worst_case": None if worst is None else worst.name,
            "cases": [_case_json(c, o, c is worst or c is witness) for c in cases]}


def _fmt(power: dict[str, Any]) -> str:
    p = power["probability"]
    text = f"{p:.3f}" if p < 1 else "1"
    return text + (f" ±{power['error']:.3f}" if power["error"] else "")


def _needed_text(needed: dict[str, Any]) -> str:
    if needed["samples"] is None:
        return str(needed["note"])
    return f"{needed['samples']:,}"


def _rule_text(rule: dict[str, Any], o: _Options) -> str:
    lines = [f"{rule['name']} ({rule['kind']}{', lossless' if rule['lossless'] else ''})"]
    shown = [c for c in rule["cases"] if "needed" in c]
    if not shown:
        lines.append("  no exact law on any case: "
                     + "; ".join(c["note"] for c in rule["cases"] if c["note"])[:300])
        return "\n".join(lines)
    for case in shown:
        tag = " (the largest bug of the panel)" if case["name"] == rule["worst_case"] else ""
        lines.append(f"  {case['name']}{tag}: TV {case['tv']}")
        lines.append(f"    p = {json.dumps(case['p'])}, {case['q']}")
        header = ("design", *(f"P(flag) N={n:,}" for n in o.samples),
                  *(f"false alarm N={n:,}" for n in o.samples), "N for 99%")
        rows = [(t, *(_fmt(case["power"][t][str(n)]) for n in o.samples),
                 *(f"{case['false_alarms'][t][str(n)]:.3f}" for n in o.samples),
                 _needed_text(case["needed"][t])) for t in o.tests]
        lines.extend("    " + row for row in render_table(header, rows,
                                                              rule=False).splitlines())
    skipped = [c["name"] for c in rule["cases"] if c["note"]]
    if skipped:
        lines.append(f"  no exact law (the code raises) on: {', '.join(skipped)}")
    return "\n".join(lines)


def _summary(rules: list[dict[str, Any]], o: _Options) -> str:
    header = ("rule", *(f"{t} {n:,}" for t in o.tests for n in o.samples))
    rows = []
    for rule in rules:
        by_name = {c["name"]: c for c in rule["cases"] if "power" in c}
        witness = next((c for n, c in by_name.items() if n.startswith("witness")), None)
        worst = by_name.get(rule["worst_case"] or "")
        cells = []
        for t in o.tests:
            for n in o.samples:
                parts = [f"{c['power'][t][str(n)]['probability']:.2f}" if c else "-"
                         for c in (witness, worst)]
                cells.append(" / ".join(parts))
        rows.append((rule["name"], *cells))
    return ("P(flag) at the witness / at the largest bug of the panel\n"
            + render_table(header, rows, rule=False))


def _plot(rules: list[dict[str, Any]], entries: list[Any], o: _Options, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency.of("matplotlib", "--plot") from None
    grid = [n for n in _PLOT_GRID if n <= max(10 * max(o.samples), 10 ** 5)]
    cols = math.ceil(math.sqrt(len(o.tests)))
    rows = -(-len(o.tests) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.4 * rows),
                             squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(o.tests):]:
        ax.set_visible(False)
    for ax, test in zip(flat, o.tests, strict=False):
        for rule, entry in zip(rules, entries, strict=True):
            cases = _sampler_cases(entry) if entry.kind == "sampler" else _step_cases(entry)
            worst = next((c for c in cases if c.name == rule["worst_case"]), None)
            if worst is None:
                continue
            ns = [n for n in grid if test != "l2" or n >= 100]
            ax.plot(ns, [_power(worst, test, n, o).probability for n in ns],
                    label=rule["name"], linewidth=1)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.axhline(0.99, color="grey", linewidth=0.5, linestyle="--")
        ax.set_title(f"{test} (at each rule's largest bug)", fontsize=9)
        ax.set_xlabel("draws N")
        ax.set_ylabel("P(test flags the bug)")
    # The legend under the panels, in as many columns as fit: no empty margin beside them.
    handles, labels = flat[0].get_legend_handles_labels()
    longest = max((len(label) for label in labels), default=1)
    ncol = max(1, min(len(labels), int(4.4 * cols / (0.05 * longest + 0.45))))
    legend_rows = -(-len(labels) // ncol)
    height = 3.4 * rows + 0.15 + 0.115 * legend_rows
    fig.set_size_inches(4.4 * cols, height)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=6, frameon=False,
               borderaxespad=0.2, columnspacing=1.0, handlelength=1.5)
    fig.tight_layout(rect=(0, (0.15 + 0.115 * legend_rows) / height, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_power(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``specexact power``; write the report (and the plot); the exit code."""
    from specexact.statistical.power import TEST_DESIGNS
    from specexact.validation import check_integer

    tests = tuple(dict.fromkeys(args.tests or TEST_DESIGNS))
    samples = tuple(dict.fromkeys(args.samples or DEFAULT_SAMPLES))
    for n in samples:
        if n < 100 and "l2" in tests:
            msg = (f"--samples {n}: the l2 design compares histograms of 10 and N draws "
                   "and needs N >= 100")
            raise InvalidArgument(msg)
        check_integer(n, "--samples", min_value=1)
    check_integer(args.replicates, "--replicates", min_value=1)
    check_integer(args.seed, "--seed", min_value=0)
    if not 0 < args.alpha < 1:
        msg = f"--alpha {args.alpha} must lie strictly between 0 and 1"
        raise InvalidArgument(msg)
    o = _Options(tests, samples, args.alpha, args.replicates, args.seed)
    entries = _rules(args.rules)
    rules = [_rule_json(e, o) for e in entries]
    if args.plot:
        _plot(rules, entries, o, args.plot)
    if args.json:
        json.dump({"tests": list(tests), "samples": list(samples), "alpha": args.alpha,
                   "replicates": args.replicates, "seed": args.seed,
                   "method": "exact binomial sum when two outcomes can occur and the design "
                             "takes one sample; otherwise simulation of counts from the "
                             "exact law, error = half-width of a 99% interval; invalid "
                             "outputs and crashes flag every design",
                   "plot": args.plot, "rules": rules}, out, indent=2)
        out.write("\n")
        return 0
    for rule in rules:
        out.write(_rule_text(rule, o) + "\n\n")
    out.write(_summary(rules, o) + "\n")
    if args.plot:
        out.write(f"\nplot written to {args.plot}\n")
    return 0
