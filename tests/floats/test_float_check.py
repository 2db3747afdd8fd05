"""Float mode: float code judged exactly, its deviation split into rounding and structure."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest

from specexact import InvalidArgument, InvalidDistribution, Undecided
from specexact.floats.check import check_floats, float_tolerance
from specexact.floats.scalars import ExactScalar, exact_inputs, float_casts

np = pytest.importorskip("numpy")

F = Fraction
CASES = [
    (["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]),
    (["1/3", "2/3"], ["2/3", "1/3"]),
    (["1/7", "2/7", "4/7"], ["3/11", "5/11", "3/11"]),
    (["1/2", "3/10", "1/5"], ["9/10", "1/20", "1/20"]),
    (["1/2", "1/2", "0"], ["0", "0", "1"]),
    (["0", "1/4", "3/4"], ["1/2", "0", "1/2"]),
    (["1/3", "1/3", "1/3"], ["1/3", "1/3", "1/3"]),
]


# -- float samplers, Python lists ------------------------------------------------


def textbook(p: Any, q: Any, rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.categorical([max(a - b, 0.0) for a, b in zip(p, q, strict=True)])


def naive(p: Any, q: Any, rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.categorical(p)


def swapped(p: Any, q: Any, rng: Any) -> Any:
    x = rng.categorical(q)
    if p[x] == 0 or rng.random() < q[x] / p[x]:
        return x
    return rng.categorical([max(a - b, 0.0) for a, b in zip(p, q, strict=True)])


def one_uniform(p: Any, q: Any, rng: Any) -> Any:
    """FlashInfer #424: the acceptance uniform is reused for the fallback draw."""
    x = rng.categorical(q)
    u = rng.random()
    if u < p[x] / q[x]:
        return x
    r = [max(a - b, 0.0) for a, b in zip(p, q, strict=True)]
    total = sum(r)
    acc = 0.0
    for i, ri in enumerate(r):
        acc += ri / total
        if u < acc:
            return i
    return max(i for i, ri in enumerate(r) if ri > 0)


def padded_walk(p: Any, q: Any, rng: Any) -> Any:
    """A float CDF walk that falls through to a padded lane, id V (SGLang #22643)."""
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    r = [max(a - b, 0.0) for a, b in zip(p, q, strict=True)]
    total = sum(r)
    u = rng.random()
    acc = 0.0
    for i, ri in enumerate(r):
        acc += ri / total
        if u < acc:
            return i
    return len(p)


# -- numpy samplers ------------------------------------------------------------------


def np_textbook(p: Any, q: Any, rng: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.minimum(1.0, p / q)
        r = np.maximum(p - q, 0.0)
        r = r / r.sum()
    x = rng.categorical(q)
    if rng.random() < ratio[x]:
        return x
    return rng.categorical(r)


def np_floor(p: Any, q: Any, rng: Any) -> Any:
    """vLLM review #13933: a residual floor instead of max(p - q, 0)."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(np.maximum(p - q, 1e-10))


def np_casting(p: Any, q: Any, rng: Any) -> Any:
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    return np_textbook(p, q, rng)


# -- the textbook rule in floats is rounding only --------------------------------------


@pytest.mark.parametrize(("p", "q"), CASES)
@pytest.mark.parametrize("bits", [None, 24])
def test_float_textbook_passes_as_rounding_only(p: list[str], q: list[str],
                                                bits: int | None) -> None:
    verdict = check_floats(textbook, p, q, uniform_bits=bits)
    assert verdict.passed, verdict.format()
    assert verdict.severity in ("rounding", "exact")
    assert verdict.structural_tv == 0
    assert verdict.rounding_tv <= verdict.tolerance


@pytest.mark.parametrize(("p", "q"), CASES)
@pytest.mark.parametrize("fmt", ["float64", "float32"])
def test_numpy_textbook_passes_in_both_formats(p: list[str], q: list[str], fmt: str) -> None:
    verdict = check_floats(np_textbook, p, q, fmt=fmt, arrays=True, uniform_bits=24)
    assert verdict.passed, verdict.format()
    assert verdict.structural_tv == 0


def test_rounding_is_nonzero_and_reported_as_such() -> None:
    verdict = check_floats(textbook, *CASES[0])
    assert verdict.severity == "rounding"
    assert 0 < verdict.float_tv == verdict.rounding_tv <= float_tolerance(3, "float64")
    assert verdict.format().startswith("PASS (rounding only)")
    assert verdict.p_float == (0.2, 0.5, 0.3)


def test_float32_rounding_is_larger_than_float64_rounding() -> None:
    v64 = check_floats(np_textbook, *CASES[2], fmt="float64", arrays=True)
    v32 = check_floats(np_textbook, *CASES[2], fmt="float32", arrays=True)
    assert 0 < v64.float_tv < v32.float_tv <= v32.float_tolerance


def test_dyadic_inputs_are_exact() -> None:
    assert check_floats(textbook, ["1/4", "3/4"], ["1/2", "1/2"]).severity == "exact"


# -- wrong rules are structural ------------------------------------------------------------


@pytest.mark.parametrize("rule", [naive, swapped, one_uniform])
def test_wrong_float_rules_fail_as_structural(rule: Any) -> None:
    verdict = check_floats(rule, *CASES[0])
    assert not verdict.passed
    assert verdict.severity == "structural"
    assert verdict.structural_tv > 0
    assert verdict.format().startswith("FAIL (structural")


def test_naive_structural_part_is_the_exact_witness() -> None:
    verdict = check_floats(naive, *CASES[0], uniform_bits=24)
    assert verdict.structural_tv == F(3, 50)
    assert verdict.exact_law == [F(13, 50), F(9, 20), F(29, 100)]


def test_tiny_residual_floor_is_structural_not_rounding() -> None:
    verdict = check_floats(np_floor, *CASES[0], arrays=True)
    assert verdict.severity == "structural"
    assert 0 < verdict.structural_tv < F(1, 10**9)  # far below any statistical test


def test_inclusive_comparison_in_floats_is_a_support_violation_on_the_grid() -> None:
    def inclusive(p: Any, q: Any, rng: Any) -> Any:
        x = rng.categorical(q)
        if rng.random() <= p[x] / q[x]:
            return x
        return rng.categorical([max(a - b, 0.0) for a, b in zip(p, q, strict=True)])

    assert check_floats(inclusive, *CASES[4]).passed
    verdict = check_floats(inclusive, *CASES[4], uniform_bits=24)
    assert verdict.severity == "support"
    assert {(f.run, f.mass) for f in verdict.findings} == {
        ("grid", F(1, 2**24)), ("float", F(1, 2**24))}


# -- ids outside the vocabulary fail whatever their size ------------------------------------


def test_padded_lane_from_float_rounding_is_an_invalid_id() -> None:
    p, q = ["1/3", "1/3", "1/3"], ["1/11", "2/11", "8/11"]
    verdict = check_floats(padded_walk, p, q)
    assert verdict.severity == "invalid"
    (finding,) = verdict.findings
    assert finding.run == "float"
    assert 0 < finding.mass < F(1, 10**15)
    assert verdict.structural_tv == 0  # the rule is right with exact numbers


def test_rounding_above_a_stated_tolerance_fails() -> None:
    verdict = check_floats(textbook, *CASES[0], float_tolerance=F(0))
    assert verdict.severity == "rounding-excess"
    assert verdict.findings[0].mass == verdict.rounding_tv


# -- no verdict when structure and rounding cannot be told apart -------------------------------


def test_code_that_casts_exact_inputs_to_float_is_undecided() -> None:
    with pytest.raises(Undecided, match="converted exact values to float"):
        check_floats(np_casting, *CASES[0], arrays=True)


def test_casting_code_with_a_large_bias_still_fails() -> None:
    def casting_naive(p: Any, q: Any, rng: Any) -> Any:
        return naive(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64), rng)

    verdict = check_floats(casting_naive, *CASES[0], arrays=True)
    assert verdict.severity == "structural"
    assert verdict.float_casts


def test_code_that_only_runs_on_floats_is_undecided() -> None:
    def uses_exp(p: Any, q: Any, rng: Any) -> Any:
        logits = np.log(p)
        return rng.categorical(np.exp(logits))

    with pytest.raises(Undecided, match="fails on exact ones"):
        check_floats(uses_exp, ["1/2", "1/2"], ["1/2", "1/2"], arrays=True)


# -- the exact stand-ins ------------------------------------------------------------------


def test_exact_scalar_keeps_float_constants_exact_and_records_casts() -> None:
    x = ExactScalar(1, 3)
    y = x + 1e-10
    assert isinstance(y, ExactScalar) and y == F(1, 3) + F(1e-10)
    assert isinstance(2 - x, ExactScalar) and 2 - x == F(5, 3)
    assert isinstance(x * np.float32(0.5), ExactScalar)
    with float_casts() as casts:
        float(x)
    assert casts == ["float(1/3)"]
    with pytest.raises(ZeroDivisionError):
        x / 0


def test_array_stand_ins_divide_by_zero_like_numpy() -> None:
    p, q = exact_inputs([F(1, 2), F(1, 2), F(0)], [F(0), F(1), F(0)], arrays=True)()
    ratio = p / q
    assert ratio[0] == math.inf and ratio[1] == F(1, 2) and math.isnan(ratio[2])
    assert isinstance(np.maximum(p - q, 0).sum(), ExactScalar)


# -- the report ------------------------------------------------------------------------------


def test_to_json_holds_fractions_as_strings() -> None:
    verdict = check_floats(naive, *CASES[0], uniform_bits=24)
    data = json.loads(json.dumps(verdict.to_json()))
    assert data["passed"] is False and data["severity"] == "structural"
    assert data["structural_tv"] == "3/50"
    assert data["exact_law"] == {"0": "13/50", "1": "9/20", "2": "29/100"}
    assert F(data["rounding_tv"]) == verdict.rounding_tv
    assert data["findings"][0]["kind"] == "structural"


def test_format_shows_the_split_and_the_table() -> None:
    text = str(check_floats(textbook, *CASES[0], uniform_bits=24))
    for piece in ("structural", "grid rounding (24-bit uniform)", "float rounding (float64",
                  "token", "exact run - p"):
        assert piece in text


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"fmt": "float16"}, InvalidArgument),
    ({"fmt": "float32"}, InvalidArgument),           # float32 needs arrays
    ({"fmt": None, "arrays": True}, InvalidArgument),
    ({"float_tolerance": -1}, InvalidArgument),
    ({"uniform_bits": 0}, InvalidArgument),
])
def test_bad_options_are_rejected(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        check_floats(textbook, *CASES[0], **kwargs)


def test_bad_distribution_is_rejected() -> None:
    with pytest.raises(InvalidDistribution, match="2\\^-10 away from 1"):
        check_floats(textbook, [0.1, 0.2, 0.6], ["1/3", "1/3", "1/3"])
    with pytest.raises(InvalidDistribution, match="negative"):
        check_floats(textbook, [-0.1, 0.4, 0.7], ["1/3", "1/3", "1/3"])


def test_float_rows_not_summing_to_one_are_judged_against_their_normalisation() -> None:
    """Issue 13: engines' rows sum to 1 only up to rounding ([0.1, 0.2, 0.7] is 1 + 2^-54)."""
    p = [0.1, 0.2, 0.7]
    assert sum(Fraction(x) for x in p) != 1
    verdict = check_floats(textbook, p, ["1/3", "1/3", "1/3"])
    assert verdict.passed, verdict.format()
    total = sum(Fraction(x) for x in p)
    assert verdict.p == tuple(Fraction(x) / total for x in p)
    assert verdict.given_sums == (total, 1)
    assert "p as given sums to" in verdict.format()
    assert verdict.to_json()["given_sums"] == [str(total), "1"]
    # The float run gets the row as given, not its normalisation.
    assert verdict.p_float == tuple(p)


def test_an_all_zero_residual_after_rounding_is_a_crash() -> None:
    """p <= q at every token after rounding, p != q: the residual is 0/0."""
    from specexact.properties.float_hazards import float_hazard_edge_cases

    p, q = float_hazard_edge_cases(2, 2, "float64")[0]  # q-above
    assert all(a <= b for a, b in zip(p, q, strict=True)) and p != q
    verdict = check_floats(textbook, p, q)
    assert verdict.severity == "crash", verdict.format()

    def guarded(p: Any, q: Any, rng: Any) -> Any:
        x = rng.categorical(q)
        if rng.random() < p[x] / q[x]:
            return x
        r = [max(a - b, 0) for a, b in zip(p, q, strict=True)]
        return rng.categorical(r) if any(r) else x

    assert check_floats(guarded, p, q).passed
