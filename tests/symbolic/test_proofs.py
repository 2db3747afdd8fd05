"""Symbolic proofs over the whole simplex: proofs, refutations, unsupported code, the CLI hook."""

from __future__ import annotations

import io
import itertools
import json
import math
import random
from fractions import Fraction
from typing import Any

import pytest
import sympy
from sympy.solvers.simplex import linprog

import specexact.symbolic as symbolic
from specexact import output_distribution
from specexact.errors import InvalidArgument, Undecided, UnsupportedOperation
from specexact.frontends.cli.prove_cmd import run_prove
from specexact.symbolic import ProofResult, prove
from specexact.symbolic.lp import solve_lp
from specexact.symbolic.region import Space

F = Fraction


# -- samplers (kept here so the tests do not move with the catalogue) ----------------


def residual(p: list[Any], q: list[Any]) -> list[Any]:
    return [max(a - b, 0) for a, b in zip(p, q, strict=True)]


def textbook(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(residual(p, q))


def ratio_form(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < min(1, p[x] / q[x]):
        return x
    r = residual(p, q)
    total = sum(r)
    return rng.categorical([w / total for w in r])


def bernoulli_form(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.bernoulli(min(1, p[x] / q[x])):
        return x
    return rng.categorical(residual(p, q))


def naive(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(p)


def shared_uniform(p: list[Any], q: list[Any], rng: Any) -> Any:
    """One uniform for the acceptance test and the inverse-CDF fallback (FlashInfer #424)."""
    u = rng.random()
    x = rng.categorical(q)
    if u * q[x] < p[x]:
        return x
    r = residual(p, q)
    total = sum(r)
    cumulative = 0
    last = 0
    for i, w in enumerate(r):
        if w:
            cumulative += w / total
            last = i
            if u < cumulative:
                return i
    return last


def unclamped(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([a - b for a, b in zip(p, q, strict=True)])


def uses_exp(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < math.exp(p[x] - q[x]):
        return x
    return x


def uses_sqrt_power(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < p[x] ** 0.5:
        return x
    return rng.categorical(q)


def converts_to_fraction(p: list[Any], q: list[Any], rng: Any) -> Any:
    x = rng.categorical(q)
    if rng.random() < Fraction(p[x]) / Fraction(q[x]):
        return x
    return rng.categorical(residual(p, q))


# -- proofs --------------------------------------------------------------------------


@pytest.mark.parametrize("vocab_size", [1, 2, 3])
def test_textbook_is_proved(vocab_size: int) -> None:
    result = prove(textbook, vocab_size)
    assert result.proved and result.status == "proved" and result.complete
    assert not result.refuting
    for case in result.cases:
        assert case.proved
        p = sympy.symbols(f"p0:{vocab_size}")
        for k in range(vocab_size):
            diff = sympy.sympify(case.law.get(k, 0)) - p[k]
            diff = diff.xreplace({p[-1]: 1 - sum(p[:-1])})
            assert sympy.simplify(diff) == 0


def test_case_count_grows_with_the_vocabulary() -> None:
    # sign(p_i - q_i) per token; all p_i < q_i is infeasible: 2^V - 2 for V = 3.
    assert len(prove(textbook, 2).cases) == 2
    assert len(prove(textbook, 3).cases) == 6


@pytest.mark.parametrize("sampler", [ratio_form, bernoulli_form])
def test_other_forms_of_the_test_are_proved(sampler: Any) -> None:
    assert prove(sampler, 3).proved


# -- refutations -----------------------------------------------------------------------


def test_naive_fallback_is_refuted_with_formula_and_witness() -> None:
    result = prove(naive, 2)
    assert result.status == "refuted" and not result.proved
    assert len(result.refuting) == 2
    p0, p1, q0 = sympy.symbols("p0 p1 q0")
    for case in result.refuting:
        bias = sympy.sympify(case.bias[0]).xreplace({p1: 1 - p0})
        # naive emits min(p, q) + TV * p: bias_0 = -p1 (p0 - q0) when p0 >= q0, else -p0 (p0 - q0)
        expected = -(1 - p0) * (p0 - q0) if case.contains([F(2, 3), F(1, 3)], [F(1, 3), F(2, 3)]) \
            else -p0 * (p0 - q0)
        assert sympy.expand(bias - expected) == 0
        assert case.witness is not None
        wp, wq = case.witness
        actual = output_distribution(naive, wp, wq)
        assert actual == case.witness_law
        assert actual != list(wp)
        assert case.contains(wp, wq)
    text = str(result)
    assert "region:" in text and "bias out[0]" in text and "witness:" in text


def test_shared_uniform_is_refuted_from_three_tokens() -> None:
    assert prove(shared_uniform, 2).proved  # the residual is one-hot for V = 2
    result = prove(shared_uniform, 3)
    assert result.status == "refuted"
    assert result.refuting
    for case in result.refuting:
        wp, wq = case.witness  # type: ignore[misc]
        assert output_distribution(shared_uniform, wp, wq) != list(wp)


def test_a_crash_on_part_of_the_simplex_is_a_refutation() -> None:
    result = prove(unclamped, 2)
    assert result.status == "refuted"
    crashes = [c for c in result.refuting if c.crash is not None]
    assert crashes
    assert "negative" in crashes[0].crash  # type: ignore[operator]


# -- cross-check against the exact numeric engine ----------------------------------------


def _points_in(case: symbolic.Case, vocab_size: int, count: int,
               rng: random.Random) -> list[tuple[tuple[Fraction, ...], tuple[Fraction, ...]]]:
    space = Space(vocab_size)
    inside = [x for x in space.random_points(case.constraints, count, rng)
              if space.contains(case.constraints, x)]
    return [space.split_point(x) for x in inside]


@pytest.mark.parametrize(("sampler", "vocab_size"), [
    (textbook, 3), (naive, 3), (ratio_form, 3), (shared_uniform, 3), (unclamped, 2)])
@pytest.mark.slow
def test_symbolic_law_matches_the_exact_engine_in_every_case(sampler: Any,
                                                             vocab_size: int) -> None:
    result = prove(sampler, vocab_size)
    rng = random.Random(5)
    checked = 0
    for case in result.cases:
        if case.crash is not None or case.undecided is not None:
            continue
        for p, q in _points_in(case, vocab_size, 3, rng):
            assert output_distribution(sampler, p, q) == case.law_at(p, q), (case.region(), p, q)
            checked += 1
    assert checked >= len([c for c in result.cases if c.crash is None and not c.undecided])


def test_random_simplex_points_fall_in_exactly_one_case() -> None:
    result = prove(textbook, 3)
    rng = random.Random(1)
    for _ in range(20):
        raw = [[F(rng.randint(0, 4)) for _ in range(3)] for _ in range(2)]
        if not sum(raw[0]) or not sum(raw[1]):
            continue
        p = [v / sum(raw[0]) for v in raw[0]]
        q = [v / sum(raw[1]) for v in raw[1]]
        owners = [c for c in result.cases if c.contains(p, q)]
        assert len(owners) == 1
        assert owners[0].law_at(p, q) == output_distribution(textbook, p, q)


# -- what cannot be proved is never proved ------------------------------------------------


@pytest.mark.parametrize(("sampler", "words"), [
    (uses_exp, "float()"), (uses_sqrt_power, "'**'"), (converts_to_fraction, "TypeError")])
def test_unsupported_operations_are_named(sampler: Any, words: str) -> None:
    with pytest.raises(UnsupportedOperation, match=re_escape(words)):
        prove(sampler, 2)


def re_escape(text: str) -> str:
    import re
    return re.escape(text)


def test_bad_arguments() -> None:
    with pytest.raises(InvalidArgument, match="vocab_size"):
        prove(textbook, 0)
    with pytest.raises(InvalidArgument, match="sampler"):
        prove("not callable", 2)  # type: ignore[arg-type]


def test_case_budget_is_undecided_not_a_proof() -> None:
    with pytest.raises(Undecided, match="max_cases"):
        prove(textbook, 3, max_cases=2)


# -- the exact LP -------------------------------------------------------------------------


def test_sympy_linprog_bug_that_lp_py_avoids() -> None:
    a = [[1, 0], [0, 1], [0, 1], [0, -1], [0, -1]]
    b = [5, 1, 0, -1, 0]
    _, point = linprog([0, 0], a, b)
    violated = any(sum(x * y for x, y in zip(row, point, strict=True)) > rhs
                   for row, rhs in zip(a, b, strict=True))
    if not violated:
        pytest.skip("this sympy version no longer returns an infeasible point")
    assert solve_lp([F(0)] * 2, [[F(v) for v in row] for row in a], [F(v) for v in b]) is None


def test_solve_lp_agrees_with_vertex_enumeration() -> None:
    rng = random.Random(3)
    for _ in range(150):
        rows = [[F(rng.randint(-3, 3)), F(rng.randint(-3, 3))] for _ in range(rng.randint(1, 5))]
        rhs = [F(rng.randint(-3, 3)) for _ in rows]
        box = [[F(1), F(0)], [F(0), F(1)]]
        a_ub, b_ub = rows + box, [*rhs, F(4), F(4)]
        lines = [*a_ub, [F(-1), F(0)], [F(0), F(-1)]]
        rhs_all = [*b_ub, F(0), F(0)]
        feasible_vertex = False
        for (r1, c1), (r2, c2) in itertools.combinations(zip(lines, rhs_all, strict=True), 2):
            det = r1[0] * r2[1] - r1[1] * r2[0]
            if det == 0:
                continue
            x = (c1 * r2[1] - r1[1] * c2) / det
            y = (r1[0] * c2 - c1 * r2[0]) / det
            if x >= 0 and y >= 0 and all(r[0] * x + r[1] * y <= c
                                         for r, c in zip(a_ub, b_ub, strict=True)):
                feasible_vertex = True
                break
        solved = solve_lp([F(rng.randint(-2, 2)), F(rng.randint(-2, 2))], a_ub, b_ub)
        assert (solved is not None) == feasible_vertex, (a_ub, b_ub)


# -- the command ----------------------------------------------------------------------------


def _run(target: str, vocab_size: Any, as_json: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_prove(target, vocab_size, as_json=as_json, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_run_prove_exit_codes(tmp_path: Any) -> None:
    module = tmp_path / "rules.py"
    module.write_text(
        "def textbook(p, q, rng):\n"
        "    x = rng.categorical(q)\n"
        "    if rng.random() * q[x] < p[x]:\n"
        "        return x\n"
        "    return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])\n"
        "def naive(p, q, rng):\n"
        "    x = rng.categorical(q)\n"
        "    if rng.random() * q[x] < p[x]:\n"
        "        return x\n"
        "    return rng.categorical(p)\n"
        "def exp_rule(p, q, rng):\n"
        "    import math\n"
        "    x = rng.categorical(q)\n"
        "    return x if rng.random() < math.exp(p[x]) else x\n")
    code, out, _ = _run(f"{module}:textbook", 3)
    assert code == 0 and "PROVED" in out
    code, out, _ = _run(f"{module}:naive", 2)
    assert code == 1 and "REFUTED" in out and "region:" in out and "witness:" in out
    assert "bias out[0] - p0 =" in out
    code, _, err = _run(f"{module}:exp_rule", 2)
    assert code == 2 and "float()" in err and "Traceback" not in err
    code, _, err = _run(f"{module}:missing", 2)
    assert code == 2 and "no attribute" in err
    code, _, err = _run(f"{module}:textbook", 0)
    assert code == 2 and "vocab-size" in err
    code, out, _ = _run(f"{module}:naive", 2, as_json=True)
    data = json.loads(out)
    assert code == 1 and data["status"] == "refuted" and data["refuting"][0]["witness"]


def test_exports() -> None:
    assert sorted(symbolic.__all__) == symbolic.__all__
    assert set(symbolic.__all__) == {"Case", "Constraint", "GridHazard", "ProofResult",
                                     "StepProofResult", "StepRefutation", "prove",
                                     "prove_step"}
    assert isinstance(prove(textbook, 1), ProofResult)
