"""Issue 14 (nonlinear regions, speed, --first, grids): the symbolic prover's new parts.

Product certificates prove regions with nonlinear cuts empty (and never a
region with points); the exact LP's backends agree; the relabelling cache
and the Gauss-Jordan equalities agree with the slow answers; ``first``
stops at one refutation; grid hazards are reported and ``uniform_bits``
refutes a ``u <= p/q`` rule.  The multi-draft proofs at V = 3 are slow tests.
"""

from __future__ import annotations

import io
import random
from fractions import Fraction
from typing import Any

import pytest
import sympy

from specexact import check_sampler, output_distribution
from specexact.counterexamples import multidraft
from specexact.counterexamples.samplers import inclusive_uniform, naive_resample, textbook
from specexact.errors import InvalidInput
from specexact.frontends.cli.prove_cmd import run_prove
from specexact.symbolic import prove
from specexact.symbolic.lp import fraction_only, solve_lp
from specexact.symbolic.nonlinear import certificate, check_certificate
from specexact.symbolic.prover import _Prover
from specexact.symbolic.region import Constraint, Space

F = Fraction


def _poly(space: Space, expr: Any, rel: str) -> Constraint:
    """``expr rel 0`` as the prover's nonlinear constraint (in eliminated coordinates)."""
    poly = sympy.Poly(sympy.expand(space.eliminate(expr)), *space.variables)
    _, primitive = poly.primitive()
    sign = 1 if primitive.LC() > 0 else -1
    return Constraint(None, rel, expr, (primitive * sign).as_expr(), sign)  # type: ignore[arg-type]


# -- product certificates ------------------------------------------------------------------


def test_a_certificate_proves_an_empty_quadratic_region_and_is_checked() -> None:
    space = Space(2)
    p0, q0 = space.p[0], space.q[0]
    empty = [_poly(space, p0 * q0 - 1, ">")]  # p0, q0 <= 1 on the simplex
    found = certificate(space, empty)
    assert found is not None
    terms, multiples, c = found
    assert check_certificate(space, empty, terms, multiples, c)
    # Tampering with a multiplier breaks the identity the check recomputes.
    lam, poly, strict = terms[0]
    assert not check_certificate(space, empty, [(lam * 2, poly, strict), *terms[1:]],
                                 multiples, c)
    assert not space.feasible(empty)


def test_regions_with_points_are_never_proved_empty() -> None:
    space = Space(2)
    p0, q0 = space.p[0], space.q[0]
    for region in ([_poly(space, p0 * q0 - F(1, 4), ">")],
                   [_poly(space, p0 * p0 - 2 * q0 * q0, "=="), space.constraint(
                       (F(0), F(1), F(0)), ">")],  # p0 = sqrt(2) q0: no rational point
                   [_poly(space, p0 * q0 - 1, ">=")]):  # the single point p0 = q0 = 1
        assert certificate(space, region) is None
        assert space.feasible(region)


def test_certificates_agree_with_a_grid_on_random_quadratic_regions() -> None:
    """Whenever a certificate says "empty", no point of a fine grid is in the region."""
    space = Space(2)
    p0, q0 = space.p[0], space.q[0]
    rng = random.Random(14)
    grid = [(F(i, 12), F(j, 12)) for i in range(13) for j in range(13)]
    proved = 0
    for _ in range(40):
        a, b, c, d = (F(rng.randint(-4, 4), rng.randint(1, 3)) for _ in range(4))
        rel = rng.choice([">", ">=", "=="])
        region = [_poly(space, a * p0 * q0 + b * p0 * p0 + c * q0 + d, rel)]
        if not region[0].poly.free_symbols or sympy.Poly(region[0].poly).total_degree() < 2:
            continue
        lin = (F(rng.randint(-2, 2)), F(rng.randint(-2, 2)), F(rng.randint(-1, 1)))
        if any(lin[:2]):
            region.append(space.constraint(lin, rng.choice([">", ">="])))
        if certificate(space, region) is not None:
            proved += 1
            assert not any(all(c.holds(x) for c in region) for x in grid)
    assert proved >= 5  # the test exercises real certificates


# -- the exact LP's backends, the relabelling cache, the equalities --------------------------


def test_the_lp_backends_agree() -> None:
    rng = random.Random(5)
    for _ in range(60):
        n = rng.randint(1, 4)
        a_ub = [[F(rng.randint(-3, 3)) for _ in range(n)] for _ in range(rng.randint(1, 5))]
        b_ub = [F(rng.randint(-2, 4)) for _ in a_ub]
        a_eq = [[F(rng.randint(-2, 2)) for _ in range(n)] for _ in range(rng.randint(0, 2))]
        b_eq = [F(rng.randint(-2, 2)) for _ in a_eq]
        a_ub.append([F(1)] * n)
        b_ub.append(F(5))
        cost = [F(rng.randint(-3, 3)) for _ in range(n)]
        fast = solve_lp(cost, a_ub, b_ub, a_eq, b_eq)
        pure = solve_lp(cost, a_ub, b_ub, a_eq, b_eq, pure=True)
        with fraction_only():
            switched = solve_lp(cost, a_ub, b_ub, a_eq, b_eq)
        assert (fast is None) == (pure is None) == (switched is None)
        if fast is not None and pure is not None:
            assert fast[0] == pure[0]
            assert all(isinstance(v, Fraction) for v in fast[1])


def test_feasibility_is_cached_soundly_across_relabellings() -> None:
    """The cache modulo relabelling agrees with a fresh LP on the set and on a permutation."""
    rng = random.Random(8)
    space, fresh = Space(4), Space(4)
    h = 3
    for _ in range(120):
        rows = []
        for _ in range(rng.randint(1, 4)):
            lin = (*(F(rng.randint(-1, 1)) for _ in range(2 * h)), F(rng.randint(-1, 1)))
            if any(lin[:-1]):
                rows.append((lin, rng.choice([">", ">=", "=="])))
        perm = list(range(h))
        rng.shuffle(perm)

        def relabel(lin: tuple[Fraction, ...], perm: list[int] = perm) -> tuple[Fraction, ...]:
            new = [F(0)] * (2 * h + 1)
            for i in range(h):
                new[perm[i]], new[h + perm[i]] = lin[i], lin[h + i]
            new[-1] = lin[-1]
            return tuple(new)

        original = [space.constraint(lin, rel) for lin, rel in rows]  # type: ignore[arg-type]
        moved = [space.constraint(relabel(lin), rel) for lin, rel in rows]  # type: ignore[arg-type]
        truth = fresh._solve(frozenset((c.lin, c.rel) for c in original), None) is not None
        assert space.feasible(original) == truth
        assert space.feasible(moved) == truth


def test_gauss_jordan_equalities_agree_with_sympy_solve() -> None:
    rng = random.Random(2)
    prover = _Prover(textbook, 4, None, 10, 0)
    space = prover.space
    for _ in range(40):
        cons = []
        for _ in range(rng.randint(1, 4)):
            lin = tuple(F(rng.randint(-2, 2)) for _ in range(space.n + 1))
            if any(lin[:-1]):
                cons.append(space.constraint(lin, "=="))
        ours = prover.equalities(cons)
        expected = sympy.solve([space.expr(c.lin) for c in cons if c.lin is not None],
                               space.variables, dict=True)
        if not expected:
            assert ours == {}
            continue
        # The same solution set: each substitution satisfies the other's equations.
        for c in cons:
            assert sympy.expand(space.expr(c.lin).xreplace(ours)) == 0  # type: ignore[arg-type]
        assert len(ours) == len(expected[0])


# -- --first ---------------------------------------------------------------------------------


def test_first_stops_at_one_confirmed_refutation() -> None:
    full = prove(naive_resample, 3)
    first = prove(naive_resample, 3, first=True)
    assert len(full.refuting) > 1
    assert len(first.refuting) == 1 and not first.complete and not first.proved
    assert first.note is not None and "first" in first.note
    case = first.refuting[0]
    assert case.witness is not None and not check_sampler(naive_resample, *case.witness).passed
    assert prove(textbook, 3, first=True).proved  # nothing to stop at: still a full proof


def test_cli_first_and_uniform_bits(tmp_path: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run_prove("specexact.counterexamples.samplers:naive_resample", 3, first=True, out=out,
                     err=err)
    assert code == 1 and "stopped at the first refutation" in out.getvalue()
    out = io.StringIO()
    rule = "specexact.counterexamples.samplers:inclusive_uniform"
    assert run_prove(rule, 3, out=out, err=err) == 0
    assert "grid hazard" in out.getvalue().splitlines()[0]
    out = io.StringIO()
    assert run_prove("specexact.counterexamples.samplers:inclusive_uniform", 3, uniform_bits=24,
                     out=out, err=err) == 1
    assert "24-bit" in out.getvalue()
    err = io.StringIO()
    assert run_prove("specexact.counterexamples.samplers:textbook", 3, uniform_bits=0, out=out,
                     err=err) == 2
    assert "--uniform-bits" in err.getvalue()


# -- grids -----------------------------------------------------------------------------------


def test_the_verdict_says_the_uniform_is_continuous() -> None:
    result = prove(textbook, 3)
    assert result.proved and not result.hazards
    assert "uniform continuous" in result.summary()


def test_a_non_strict_test_against_a_threshold_that_can_be_zero_is_a_hazard() -> None:
    result = prove(inclusive_uniform, 3)
    assert result.proved  # for a continuous uniform, <= and < are the same event
    assert result.hazards
    assert all(h.boundary == "0" and "<=" in h.comparison for h in result.hazards)
    assert all(any(str(c).endswith("== 0") for c in h.constraints) for h in result.hazards)
    assert "grid hazard" in result.summary()
    assert result.to_json()["grid_hazards"]


def test_uniform_bits_refutes_mass_on_a_token_with_p_zero() -> None:
    result = prove(inclusive_uniform, 3, uniform_bits=24)
    assert not result.proved and result.refuting
    for case in result.refuting:
        assert case.grid_bits == 24 and case.witness is not None
        p, q = case.witness
        law = output_distribution(inclusive_uniform, p, q, uniform_bits=24)
        assert any(law[k] > 0 for k in range(3) if p[k] == 0)
        assert law == case.witness_law
    # The continuous law there is p: only the grid shows the bias.
    assert output_distribution(inclusive_uniform, p, q) == output_distribution(
        textbook, p, q)
    with pytest.raises(InvalidInput):
        prove(textbook, 2, uniform_bits=0)


def test_strict_tests_and_interval_ends() -> None:
    def strict_after_narrowing(p: list[Any], q: list[Any], rng: Any) -> Any:
        u = rng.random()
        if u < Fraction(1, 2):  # narrows u to [0, 1/2): 1/2 is an open end
            return rng.categorical(p)
        if u >= p[0] / 2 + Fraction(1, 2):  # lo = 1/2 is closed: '>=' at lo is no hazard
            return rng.categorical(p)
        return rng.categorical(p)

    def non_strict_at_closed_end(p: list[Any], q: list[Any], rng: Any) -> Any:
        u = rng.random()
        if u < Fraction(1, 2):
            return rng.categorical(p)
        if u <= p[0] / 2 + Fraction(1, 2):  # u = 1/2 has grid mass; threshold 1/2 at p0 = 0
            return rng.categorical(p)
        return rng.categorical(p)

    assert not prove(strict_after_narrowing, 2).hazards
    hazards = prove(non_strict_at_closed_end, 2).hazards
    assert hazards and all(h.boundary == "1/2" for h in hazards)


# -- the multi-draft rules at V = 3 (the proofs are slow: about 15 s each here) ---------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["multiround", "rrs_without_replacement", "spectr"])
def test_lossless_multi_draft_rules_are_proved_at_three_tokens(name: str) -> None:
    rule = getattr(multidraft, name)
    result = prove(rule, 3)
    assert result.proved, str(result)
    # Every case's formula was confirmed by the exact engine at concrete points.
    assert result.cross_checked == len(result.cases)


@pytest.mark.parametrize("name", ["multiround_original_p", "rrs_plain_q", "spectr_rho_one",
                                  "multiround_sorted_siblings"])
def test_biased_multi_draft_rules_stay_refuted(name: str) -> None:
    rule = getattr(multidraft, name)
    result = prove(rule, 3, first=True)
    assert result.refuting
    for case in result.refuting:
        assert case.witness is not None
        assert not check_sampler(rule, *case.witness).passed


def asymmetric(p: list[Any], q: list[Any], rng: Any) -> Any:
    """The textbook rule, except that it returns a draft where p1 >= q1 and q2 > p2.

    Its mirror image (tokens 1 and 2 swapped) is an unbiased case: the caches
    shared between relabelled cases must not carry that proof over.
    """
    x = rng.categorical(q)
    if p[1] >= q[1] and q[2] > p[2]:
        return x
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)])


def test_relabelled_caches_do_not_carry_a_proof_to_an_asymmetric_case() -> None:
    result = prove(asymmetric, 4)
    assert not result.proved and result.refuting
    for case in result.refuting:
        assert "p1 >= q1" in case.region() and "q2 > p2" in case.region()
        assert case.witness is not None and not check_sampler(asymmetric, *case.witness).passed
    mirror = ([F(1, 4), F(1, 8), F(3, 8), F(1, 4)], [F(1, 4), F(3, 8), F(1, 8), F(1, 4)])
    assert check_sampler(asymmetric, *mirror).passed
    assert not result.case_for(*mirror).bias


def test_a_nonlinear_local_constraint_is_decided_on_its_region_and_split_on_the_case() -> None:
    from specexact.symbolic.signs import NeedSplit, check_nonlinear_local

    space = Space(2)
    p0, q0 = space.p[0], space.q[0]
    g = _poly(space, 4 * p0 * q0 - 1, ">")        # the branch's local constraint g > 0
    g_nonneg = _poly(space, 4 * p0 * q0 - 1, ">=")
    vanishing = [(4 * p0 * q0 - 1) * p0]          # 0 wherever g is
    not_vanishing = [p0]

    def sides(contributions: list[Any], region: tuple[Constraint, ...],
              case: tuple[Constraint, ...] | None = None) -> list[str] | None:
        try:
            check_nonlinear_local(space, g, contributions, region, case)
        except NeedSplit as split:
            return [str(s) for s in split.sides]
        return None

    # The region implies g > 0: nothing to check.
    assert sides(not_vanishing, (g,)) is None
    # g < 0 possible on the region: split on every sign (the case is the region).
    assert sides(vanishing, ()) == ["1 > 4*p0*q0", "4*p0*q0 == 1", "4*p0*q0 > 1"]
    # g >= 0 on the region: exact iff every numerator vanishes where g does.
    assert sides(vanishing, (g_nonneg,)) is None
    assert sides(not_vanishing, (g_nonneg,)) == ["4*p0*q0 == 1", "4*p0*q0 > 1"]
    # A step's leaf: g >= 0 on its region below earlier branches, but the split is
    # of the whole case, where g may take every sign.
    assert sides(not_vanishing, (g_nonneg,), ()) == [
        "1 > 4*p0*q0", "4*p0*q0 == 1", "4*p0*q0 > 1"]
    assert sides(vanishing, (g_nonneg,), ()) is None
    # Decided on the region: g < 0 possible there splits even if the case says g >= 0.
    assert sides(vanishing, (), (g_nonneg,)) == ["4*p0*q0 == 1", "4*p0*q0 > 1"]


def test_the_simplest_point_keeps_small_denominators_inside_both_spaces() -> None:
    from specexact.symbolic.step_space import StepSpace

    space = Space(2)
    p0, q0 = space.p[0], space.q[0]
    above = space.constraint(space.linear(p0 - q0), ">")  # type: ignore[arg-type]
    assert space.simplest_point((above,), (F(333, 1000), F(1, 1000))) == (F(1, 2), F(0))
    # The rounded point would leave the region: denominators grow until it is inside.
    band = (space.constraint(space.linear(p0 - F(2, 5)), ">"),  # type: ignore[arg-type]
            space.constraint(space.linear(F(9, 20) - p0), ">"))  # type: ignore[arg-type]
    assert space.simplest_point(band, (F(41, 100), F(1, 2))) == (F(5, 12), F(1, 2))
    steps = StepSpace(4, [("p", ())])
    assert StepSpace.simplest_point is Space.simplest_point
    # A row's last entry stays >= 0: halves would sum past 1, thirds do not.
    x = (F(3, 10), F(3, 10), F(3, 10))
    assert steps.simplest_point((), x) == (F(1, 3), F(1, 3), F(1, 3))


def multiround_unnormalised(p: list[Any], q: list[Any], rng: Any, k: int = 2) -> Any:
    """SpecInfer multi-round as engines write it (blind review): the running residual kept
    as unnormalised weights r with total z, tested as u * q[x] * z < r[x]."""
    drafts = [rng.categorical(q) for _ in range(k)]
    r, z = list(p), 1
    for x in drafts:
        if rng.random() * q[x] * z < r[x]:
            return x
        r = [a - z * b if a > z * b else 0 for a, b in zip(r, q, strict=True)]
        z = sum(r)
    return rng.categorical(r)


@pytest.mark.slow


def test_a_bias_in_the_ideal_of_the_cases_equalities_is_zero() -> None:
    # A case holds p0*q1 + p1*q1 + q1 == p1 + q0*q1 + q1**2, and the bias there is minus
    # that polynomial: the spelling of the residual alone made this rule undecided.
    result = prove(multiround_unnormalised, 3)
    assert result.proved, str(result)
    # Points on the polynomial equalities are found, so every case is cross-checked.
    assert result.cross_checked == len(result.cases)


def test_equality_points_lie_on_a_nonlinear_equality() -> None:
    space = Space(3)
    p0, p1, q0, q1 = (space.p[0], space.p[1], space.q[0], space.q[1])
    poly = p0 * q1 + p1 * q1 + q1 - p1 - q0 * q1 - q1**2
    equality = Constraint(None, "==", poly, sympy.expand(space.eliminate(poly)))
    points = [x for x in space.equality_points([equality], 16, random.Random(0))
              if space.contains([equality], x)]
    assert points
    for x in points:
        values = dict(zip(space.variables, x, strict=True))
        assert sympy.expand(space.eliminate(poly)).xreplace(
            {k: sympy.Rational(v.numerator, v.denominator) for k, v in values.items()}) == 0
