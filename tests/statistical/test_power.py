"""The power of test designs: exact and simulated figures, checked against direct runs."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest

from specexact import (
    InvalidArgument,
    SeededRandom,
    output_distribution,
    samples_needed,
    test_power,
)
from specexact.statistical.power import TEST_DESIGNS
from tests.helpers import run_cli

np = pytest.importorskip("numpy")
pytest.importorskip("scipy")

FAIR = ["1/2", "1/2"]


def test_test_power_is_not_collected_as_a_test() -> None:
    assert test_power.__test__ is False  # type: ignore[attr-defined]


def test_exact_binomial_figures_for_two_tokens() -> None:
    biased = {0: "1/4", 1: "3/4"}
    power = test_power(biased, FAIR, test="chi2", samples=100)
    assert power.method == "exact (binomial)" and power.error == 0
    # chi-square with 1 df at level 0.01 rejects iff |k - 50| >= 13 (k = count of 0).
    from scipy.stats import binom

    direct = binom.cdf(37, 100, 0.25) + binom.sf(62, 100, 0.25)
    assert power.probability == pytest.approx(direct, rel=1e-9)
    alarm = test_power(FAIR, FAIR, test="g", samples=1000)
    assert 0.005 < alarm.probability < 0.015  # the level, discretely


def test_invalid_outputs_flag_every_design_exactly() -> None:
    law = {0: Fraction(1, 2) - Fraction(1, 1000), 1: Fraction(1, 2), "crash": Fraction(1, 1000)}
    for test in TEST_DESIGNS:
        power = test_power(law, FAIR, test=test, samples=2000, replicates=200)
        assert power.probability >= 1 - (1 - 1 / 1000) ** 2000


def test_limits_a_design_never_crosses_are_reported() -> None:
    # Moving mass between two tokens symmetric about the mean id leaves the mean.
    law = {0: "3/10", 1: "2/5", 2: "3/10"}
    uniform = ["1/3", "1/3", "1/3"]
    needed = samples_needed(law, uniform, test="mean-se")
    assert needed.samples is None and "mean" in needed.note
    assert samples_needed(law, uniform, test="chi2").samples is not None
    tiny = {0: "1/101", 1: "100/101"}
    kl = samples_needed(tiny, ["0", "1"], test="kl")
    assert kl.samples is None and "KL" in kl.note


def test_samples_needed_meets_the_target_power() -> None:
    law = {0: "1/4", 1: "3/4"}
    needed = samples_needed(law, FAIR, test="g")
    assert needed.samples is not None
    assert test_power(law, FAIR, test="g", samples=needed.samples).probability >= 0.99
    below = int(needed.samples * 0.9)
    assert test_power(law, FAIR, test="g", samples=below).probability < 0.99


@pytest.mark.parametrize("kwargs", [{"test": "ks"}, {"samples": 0}, {"alpha": 0},
                                    {"threshold": -1}, {"k": 0}, {"replicates": 0},
                                    {"test": "l2", "samples": 50}])
def test_bad_options_are_rejected(kwargs: dict[str, Any]) -> None:
    options: dict[str, Any] = {"test": "g", "samples": 100, **kwargs}
    with pytest.raises(InvalidArgument):
        test_power(FAIR, FAIR, **options)


def test_bad_laws_are_rejected() -> None:
    with pytest.raises(InvalidArgument, match="sum to exactly 1"):
        test_power(["1/2", "1/3"], FAIR, test="g", samples=10)


# -- agreement with direct simulation of the rule itself ------------------------------------


def _decides(test: str, counts: Any, p: list[str]) -> bool:
    """The design's decision, written independently: scipy's chisquare, or the
    statistical audit's own G-test on one case at level 0.01."""
    from scipy.stats import chisquare

    from specexact.statistical.audit import Case, Draws, judge_counts

    n = int(counts.sum())
    if test == "chi2":
        expected = np.array([float(Fraction(x)) for x in p]) * n
        return bool(chisquare(counts, expected).pvalue < 0.01)
    case = Case.of("c", p, p)
    (result,) = judge_counts([case], [Draws(tuple(int(c) for c in counts))], samples=n,
                             alpha=0.01)
    return result.rejected


def _direct(rule: Any, p: list[str], q: list[str], test: str, sizes: tuple[int, ...],
            runs: int, seed: int) -> dict[int, float]:
    """Run ``rule`` itself ``runs`` x max(sizes) times and apply the design's decision to
    the first N draws of each run: the detection rate at each N."""
    rng = SeededRandom(seed)
    pf, qf = [Fraction(x) for x in p], [Fraction(x) for x in q]
    draws = np.array([[rule(list(pf), list(qf), rng) for _ in range(max(sizes))]
                      for _ in range(runs)])
    return {n: float(np.mean([_decides(test, np.bincount(row[:n], minlength=len(p)), p)
                              for row in draws])) for n in sizes}


@pytest.mark.parametrize("name, p, q, test, sizes, method", [
    # Two tokens: the exact binomial sum; three: simulation from the exact law.
    ("naive-resample", ["1/2", "1/2"], ["1/5", "4/5"], "chi2", (40, 100), "exact"),
    ("shared-uniform-fallback", ["1/2", "3/10", "1/5"], ["9/10", "1/20", "1/20"], "g",
     (30, 60), "simulation"),
])
@pytest.mark.slow
def test_power_agrees_with_a_direct_simulation(name: str, p: list[str], q: list[str],
                                               test: str, sizes: tuple[int, int],
                                               method: str) -> None:
    from specexact.counterexamples.catalogue import get

    rule = get(name).rule
    law = dict(output_distribution(rule, p, q))
    runs = 150
    direct = _direct(rule, p, q, test, sizes, runs, seed=1)
    for n in sizes:
        power = test_power(law, p, test=test, samples=n)
        # Both figures are estimates: the computed one within its stated 99% error,
        # the direct one within 3.3 standard errors (99.9%).
        direct_error = 3.3 * math.sqrt(max(direct[n] * (1 - direct[n]), 0.01) / runs)
        assert abs(power.probability - direct[n]) <= power.error + direct_error, (n, power)
        assert 0.05 < power.probability < 0.999  # a comparison that can fail
        assert power.method.startswith(method)


# -- the command -----------------------------------------------------------------------------


def test_power_command_json_and_text() -> None:
    argv = ["power", "naive-resample", "--test", "chi2", "--test", "mean-se", "--samples",
            "100", "1000", "--replicates", "200"]
    code, out, _ = run_cli(*argv, "--json")
    assert code == 0
    data = json.loads(out)
    (rule,) = data["rules"]
    assert rule["name"] == "naive-resample" and rule["worst_case"]
    witness = rule["cases"][0]
    assert witness["name"] == "witness" and set(witness["power"]) == {"chi2", "mean-se"}
    assert set(witness["power"]["chi2"]) == {"100", "1000"}
    assert witness["needed"]["chi2"]["samples"] > 0
    assert len(rule["cases"]) == 17  # the witness and the audit's panel
    code, text, _ = run_cli(*argv)
    assert code == 0 and "N for 99%" in text and "largest bug of the panel" in text
    assert run_cli(*argv, "--json")[1] == out  # deterministic


def test_power_command_plot(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "power.png"
    code, out, _ = run_cli("power", "naive-resample", "--test", "g", "--samples", "100",
                           "--replicates", "50", "--plot", str(path))
    assert code == 0 and path.read_bytes()[:4] == b"\x89PNG"
    assert "plot written" in out


def test_power_command_errors() -> None:
    code, _, err = run_cli("power", "no-such-rule")
    assert code == 2 and "no catalogue entry" in err
    code, _, err = run_cli("power", "naive-resample", "--samples", "50")
    assert code == 2 and "N >= 100" in err


def test_plot_without_matplotlib_is_a_clear_error(monkeypatch: Any, tmp_path: Any) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = run_cli("power", "naive-resample", "--test", "g", "--samples", "100",
                           "--replicates", "20", "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "pip install matplotlib" in err
