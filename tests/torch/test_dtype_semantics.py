"""Values as the dtype computes them (issue 22): ``semantics="dtype"`` of the torch mode.

* each supported op on concrete operands returns, bit for bit, what real torch
  returns on this machine (random and edge-case operands, four dtypes);
* functions of a ``torch.rand`` draw compared with a constant split the grid
  where torch's own evaluation splits it (checked against all 2**24 points);
* the float-only classes fail only in the dtype and pass in exact arithmetic,
  and the exact-only example is a note, not a FAIL.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction as F
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from specexact.errors import InvalidArgument  # noqa: E402
from specexact.exact.engine import enumerate_law  # noqa: E402
from specexact.torch import check_torch_sampler, torch_output_distribution  # noqa: E402
from specexact.torch.api import softmax_rows  # noqa: E402

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
TINY32 = torch.finfo(torch.float32).tiny
GRID = 1 << 24


# -- every op against real torch -------------------------------------------------


def _edge(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    return [0.0, 1.0, -1.0, 0.5, 1 / 3, info.tiny, info.tiny / 4, info.max, -info.max,
            info.eps, 1e-3, 100.0, 11.5, -30.0, math.inf, -math.inf, math.nan]


def _operands(dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    rand = torch.randn(40, generator=gen, dtype=torch.float64) * 4
    values = torch.cat([torch.tensor(_edge(dtype), dtype=torch.float64), rand]).to(dtype)
    return torch.where(values == 0, torch.zeros_like(values), values)  # no -0.0


def computed_in_dtype(compute: Callable[[], Any]) -> Any:
    """What ``compute()`` returns when run once by the torch mode in dtype semantics."""
    seen: dict[str, Any] = {}

    def sampler(p: Any, q: Any) -> Any:
        seen["out"] = compute()
        return 0

    torch_output_distribution(sampler, [1], [1], semantics="dtype")
    return seen["out"]


def assert_same_values(exact: Any, real: torch.Tensor) -> None:
    assert tuple(exact.shape) == tuple(real.shape) and exact.dtype == real.dtype
    for mine, theirs in zip(exact.arr.reshape(-1), real.reshape(-1).tolist(), strict=True):
        if math.isnan(theirs):
            assert getattr(mine, "is_nan", False), (mine, theirs)
        elif math.isinf(theirs):
            assert getattr(mine, "value", None) == theirs, (mine, theirs)
        else:
            assert mine == F(theirs), (float(mine), theirs)


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=0.3),
    "scalar_mul": lambda a, b: a * 0.1, "scalar_div": lambda a, b: a / 3.0,
    "rsub": lambda a, b: 1 - a, "square": lambda a, b: a ** 2,
    "clamp": lambda a, b: torch.clamp(a, min=0.1, max=2.5),
    "exp": lambda a, b: torch.exp(a), "log": lambda a, b: torch.log(a),
    "sqrt": lambda a, b: torch.sqrt(a), "reciprocal": lambda a, b: torch.reciprocal(a),
    "neg": lambda a, b: -a,
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_elementwise_ops_are_what_torch_computes(name: str, dtype: torch.dtype) -> None:
    op = BINARY[name]
    a, b = _operands(dtype, 1), _operands(dtype, 2).roll(7)
    assert_same_values(computed_in_dtype(lambda: op(a, b)), op(a, b))


REDUCTIONS: dict[str, Callable[[Any], Any]] = {
    "sum": lambda x: x.sum(-1), "sum_all": lambda x: x.sum(), "mean": lambda x: x.mean(-1),
    "cumsum": lambda x: torch.cumsum(x, dim=-1), "prod": lambda x: (x / 4).prod(-1),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
    "functional_softmax": lambda x: torch.nn.functional.softmax(x, dim=0),
    "logsumexp": lambda x: torch.logsumexp(x, dim=-1),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_are_what_torch_computes(name: str, dtype: torch.dtype) -> None:
    op = REDUCTIONS[name]
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(3, 45, generator=gen, dtype=torch.float64) * 3).to(dtype)
    x[1, 5] = -math.inf  # a masked logit
    assert_same_values(computed_in_dtype(lambda: op(x)), op(x))


def test_an_exact_rational_mean_is_not_what_float32_computes() -> None:
    # The test above can fail: exact semantics gives the exact mean, not torch's.
    x = torch.tensor([0.1, 0.2, 0.7], dtype=torch.float32)
    real = x.sum()
    seen: dict[str, Any] = {}

    def sampler(p: Any, q: Any) -> Any:
        seen["out"] = x.sum()
        return 0

    torch_output_distribution(sampler, [1], [1], semantics="exact")
    assert seen["out"].arr[()] != F(real.item())
    assert_same_values(computed_in_dtype(lambda: x.sum()), real)


# -- functions of a draw, split where torch splits them ------------------------------


def _grid_values() -> torch.Tensor:
    return torch.arange(GRID, dtype=torch.float64).div(GRID).float()


def _law_of_one(fn: Callable[[Any, Any], Any]) -> F:
    law = torch_output_distribution(fn, [F(1, 2), F(1, 2)], [F(1, 2), F(1, 2)])
    return F(law[1]) if 1 in law else F(0)


def test_a_gumbel_threshold_splits_the_grid_where_torch_does() -> None:
    def below(p: Any, q: Any) -> Any:
        g = -torch.log(-torch.log(torch.rand(1)))
        return int(bool(g < 0.3))

    u = _grid_values()
    count = int((-torch.log(-torch.log(u)) < 0.3).sum())
    assert _law_of_one(below) == F(count, GRID)


def test_an_exp_of_a_scaled_draw_splits_the_grid_where_torch_does() -> None:
    def above(p: Any, q: Any) -> Any:
        return int(bool(torch.exp(torch.rand(1) * 3.7) > 2.0))

    u = _grid_values()
    count = int((torch.exp(u * 3.7) > 2.0).sum())
    assert _law_of_one(above) == F(count, GRID)


def test_uniform_between_bounds_rounds_as_torch_stores_it() -> None:
    # torch.empty(1).uniform_(0.5, 1.0) is float32(0.5 + k / 2**25): the odd k round
    # to even, so P(u < 0.75) is (2**23 - 1) / 2**24, not 1/2 (exact semantics).
    def shifted(p: Any, q: Any) -> Any:
        u = torch.empty(1).uniform_(0.5, 1.0)
        return 1 if bool(u < 0.75) else 0

    u = torch.arange(GRID, dtype=torch.float64).div(GRID)
    count = int(((u * 0.5 + 0.5).float() < 0.75).sum())
    assert count == 2**23 - 1
    assert _law_of_one(shifted) == F(count, GRID)
    law = torch_output_distribution(shifted, [F(1, 2), F(1, 2)], [F(1, 2), F(1, 2)],
                                    semantics="exact")
    assert law[1] == F(1, 2)


def test_a_float64_draw_rounded_to_float32_splits_at_the_rounding_midpoint() -> None:
    def coarse(p: Any, q: Any) -> Any:
        u = torch.rand(1, dtype=torch.float64).float()
        return (u < p[0]).long()

    p0 = F(torch.tensor(1 / 3, dtype=torch.float32).item())
    below = F(torch.nextafter(torch.tensor(float(p0)), torch.tensor(0.0)).item())
    midpoint = (below + p0) / 2
    # k / 2**53 rounds below p0 when under the midpoint, or at it (ties go to the even
    # significand, which is below's: p0's is odd).
    assert (p0 * 2**25).numerator % 2 == 1
    count = math.floor(midpoint * 2**53) + 1
    law = torch_output_distribution(coarse, (F(1, 3), F(2, 3)), (F(1, 2), F(1, 2)))
    assert law[1] == F(count, 2**53)


# -- rows as engines have them ----------------------------------------------------------


def textbook(p: Any, q: Any) -> Any:
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)


def test_softmax_rows_are_judged_against_their_own_normalisation() -> None:
    p, q = softmax_rows([F(1, 3), F(1, 6), F(1, 2)]), softmax_rows([F(1, 5), F(2, 5), F(2, 5)])
    assert sum(F(v) for v in p.tolist()) != 1  # a row as an engine has it
    verdict = check_torch_sampler(textbook, p, q)
    assert verdict.passed, verdict.format()
    assert verdict.semantics == "dtype" and verdict.finding_class is None
    target = [F(v) for v in p.tolist()]
    assert verdict.p == tuple(v / sum(target) for v in target)
    assert "semantics: dtype" in verdict.format()


def test_a_negative_row_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="non-negative"):
        check_torch_sampler(textbook, torch.tensor([1.5, -0.5]), torch.tensor([0.5, 0.5]))


# -- the float-only classes, and the exact-only note ----------------------------------------

#: float32 rows with p <= q everywhere and p != q (p sums to 1 - 2**-26): a rejection
#: happens (u = 1 - 2**-24, probability 2**-24 q[2]) and the float32 residual is all zero.
#: Normalised, p > q at tokens 0 and 1: exact arithmetic has a positive residual.
P_FLAT = torch.tensor([0.5, 0.25, 0.25 - 2**-26, 0.0])
Q_FLAT = torch.tensor([0.5, 0.25, 0.25, 0.0])


def test_zero_over_zero_residual_fails_only_in_float32() -> None:
    verdict = check_torch_sampler(textbook, P_FLAT, Q_FLAT)
    assert not verdict.passed and verdict.severity == "crash", verdict.format()
    assert verdict.finding_class == "float-only"
    assert "rows as the dtype run got them" in verdict.format()
    exact = check_torch_sampler(textbook, P_FLAT, Q_FLAT, semantics="exact")
    assert exact.passed, exact.format()


def floored_guard(p: Any, q: Any) -> Any:
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    if bool(r.sum() == 0):  # "cannot happen": a floor keeps multinomial from raising
        r = torch.clamp(r, min=torch.finfo(r.dtype).tiny)
    return torch.multinomial(r / r.sum(), 1)


def test_a_tiny_floor_on_an_all_zero_residual_draws_tokens_with_p_zero() -> None:
    verdict = check_torch_sampler(floored_guard, P_FLAT, Q_FLAT)
    assert not verdict.passed and verdict.severity == "support", verdict.format()
    assert verdict.finding_class == "float-only"
    # The uniform draw gives token 3 (p = 0) a quarter of the rejection's 2**-26.
    assert verdict.findings[0].mass == F(1, 4) * F(1, 2**26)
    assert check_torch_sampler(floored_guard, P_FLAT, Q_FLAT, semantics="exact").passed


def gumbel_argmax(p: Any, q: Any) -> Any:
    gumbel = -torch.log(-torch.log(torch.rand(p.shape[0])))
    return torch.argmax(torch.log(p) + gumbel)


def clamped_gumbel_argmax(p: Any, q: Any) -> Any:
    u = torch.rand(p.shape[0]).clamp(min=torch.finfo(torch.float32).tiny)
    return torch.argmax(torch.log(p) - torch.log(-torch.log(u)))


def test_gumbel_noise_of_a_zero_draw_lets_argmax_return_a_token_with_p_zero() -> None:
    p = (F(0), F(1, 2), F(1, 2))
    law = torch_output_distribution(gumbel_argmax, p, p)
    # Both positive tokens' draws are 0: every entry is -inf and argmax returns 0.
    assert law[0] == F(1, GRID**2)
    verdict = check_torch_sampler(gumbel_argmax, p, p)
    assert not verdict.passed and verdict.severity == "support", verdict.format()
    assert verdict.finding_class == "float-only"
    assert check_torch_sampler(gumbel_argmax, p, p, semantics="exact").passed


def test_the_clamped_gumbel_twin_passes() -> None:
    p = (F(0), F(1, 4), F(3, 4))
    verdict = check_torch_sampler(clamped_gumbel_argmax, p, p)
    assert verdict.passed, verdict.format()
    assert verdict.idealised and "idealised" in verdict.format()
    assert 0 not in torch_output_distribution(clamped_gumbel_argmax, p, p)


def floored_race(p: Any, q: Any) -> Any:
    """vLLM v0's recovery: the residual floored at tiny, drawn by an exponential race."""
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=torch.finfo(torch.float32).tiny)
    e = -torch.log(torch.rand(p.shape[0]).clamp(min=torch.finfo(torch.float32).tiny))
    return torch.argmax(r / e)


def test_a_tiny_floor_in_an_exponential_race_is_an_exact_only_note() -> None:
    p, q = (F(1, 2), F(1, 2), F(0)), (F(1, 4), F(1, 4), F(1, 2))
    verdict = check_torch_sampler(floored_race, p, q)
    assert verdict.passed, verdict.format()
    assert verdict.finding_class == "exact-only"
    assert any("exact-only" in n and "p = 0" in n for n in verdict.notes)
    assert "note: exact-only" in verdict.format()
    # Exact arithmetic alone calls it a FAIL: 2**-126-scale mass on token 2.
    exact = check_torch_sampler(floored_race, p, q, uniform="continuous")
    assert exact.semantics == "exact"
    assert not exact.passed and exact.severity == "support"
    assert 0 < exact.findings[0].mass < F(1, 2**120)


def test_semantics_is_validated() -> None:
    with pytest.raises(InvalidArgument, match="semantics="):
        torch_output_distribution(textbook, [1], [1], semantics="float")


# -- the CLI: audit --torch --semantics ---------------------------------------------------

CLI_SOURCE = '''
import torch

def gumbel_argmax(p, q):
    gumbel = -torch.log(-torch.log(torch.rand(p.shape[0])))
    return torch.argmax(torch.log(p) + gumbel)
'''


def run_cli(*argv: str) -> tuple[int, str, str]:
    import io

    from specexact.frontends.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_audit_says_which_semantics_and_finds_the_zero_draw(tmp_path: Any) -> None:
    path = tmp_path / "gumbel_rules.py"
    path.write_text(CLI_SOURCE)
    small = ("--vocab-sizes", "2..3", "--examples", "4")
    code, out, _ = run_cli("audit", f"{path}:gumbel_argmax", "--torch", *small)
    assert code == 1 and "FAIL" in out, out
    assert "dtype (faithful run, torch.rand on its float32 grid)" in out
    code, out, _ = run_cli("audit", f"{path}:gumbel_argmax", "--torch", "--semantics",
                           "exact", *small)
    assert code == 0, out
    assert "exact (faithful run" in out
    code, _, err = run_cli("audit", f"{path}:gumbel_argmax", "--semantics", "exact", *small)
    assert code == 2 and "--semantics" in err and "--torch" in err


def test_item_is_the_python_float_torch_returns() -> None:
    # 0.1 in float32, read with .item(), then Python (float64) arithmetic: exact
    # semantics would keep 1/10-ish rationals; the dtype run computes as Python does.
    def halves(p: Any, q: Any) -> Any:
        x = (p[0] * 3).item()
        return int(x * 10 > 10)

    x32 = torch.tensor(1 / 3, dtype=torch.float32)
    expected = int((x32 * 3).item() * 10 > 10)
    law = torch_output_distribution(halves, (F(1, 3), F(2, 3)), (F(1, 2), F(1, 2)))
    assert dict(law.items()) == {expected: 1}
    seen: dict[str, Any] = {}

    def reads(p: Any, q: Any) -> Any:
        seen["item"] = p[0].item()
        return 0

    torch_output_distribution(reads, (F(1, 3), F(2, 3)), (F(1, 2), F(1, 2)))
    assert type(seen["item"]) is float and seen["item"] == x32.item()


# -- races: exact support, fixed masses exact, the idealised split certified -------------


def bf16_gumbel_argmax(p: Any, q: Any) -> Any:
    u = torch.rand(p.shape[0], dtype=torch.bfloat16).float()
    u = u.clamp(min=torch.finfo(torch.float32).tiny)
    return torch.argmax(torch.log(p) - torch.log(-torch.log(u)))


def brute_force_law(p: tuple[F, ...]) -> dict[int, F]:
    """The race's law in the dtype, every pair of bf16 grid points tried (V = 2)."""
    n = 256
    k = torch.arange(n * n)
    u = torch.stack([k // n, k % n], dim=1).to(torch.float64).div(n).to(torch.bfloat16)
    u = u.float().clamp(min=torch.finfo(torch.float32).tiny)
    logits = torch.log(torch.tensor([float(x) for x in p], dtype=torch.float32))
    winners = torch.argmax(logits - torch.log(-torch.log(u)), dim=1)
    counts = torch.bincount(winners, minlength=2).tolist()
    return {t: F(c, n * n) for t, c in enumerate(counts) if c}


def test_a_race_split_is_within_its_certified_bound_of_the_dtype_law() -> None:
    p = (F(1, 5), F(4, 5))
    verdict = check_torch_sampler(bf16_gumbel_argmax, p, p)
    truth = brute_force_law(p)
    shown = verdict.grid_law
    tv = sum(abs(truth.get(t, F(0)) - F(shown.get(t, 0))) for t in (0, 1)) / 2
    # One grid point a bucket: the bound is the distance itself, up to its float slack.
    assert 0 < tv <= verdict.mass_error <= tv + F(1, 10**9)
    assert "certified" in verdict.format()


def test_vectorised_and_tail_elements_agree_here() -> None:
    # The race bounds evaluate many grid points in one tensor: they rely on this.
    gen = torch.Generator().manual_seed(0)
    for fn, x in ((torch.log, torch.rand(7 * 4000, generator=gen) * 10),
                  (torch.exp, torch.randn(7 * 4000, generator=gen) * 20),
                  (lambda a: 0.3 / a, torch.rand(7 * 4000, generator=gen))):
        whole = fn(x)
        tails = torch.cat([fn(x[i:i + 7].clone()) for i in range(0, x.numel(), 7)])
        assert torch.equal(whole, tails)


def test_the_verdict_names_what_it_takes_from_exact_arithmetic() -> None:
    p, q = (F(1, 3), F(2, 3)), (F(1, 2), F(1, 2))
    verdict = check_torch_sampler(textbook, p, q)
    assert any("multinomial" in what for what in verdict.idealised)
    assert "masses: exact, except (idealised) torch.multinomial" in verdict.format()
    exact = check_torch_sampler(textbook, p, q, semantics="exact")
    assert exact.semantics == "exact" and not exact.idealised
    assert "semantics: exact" in exact.format()


def test_the_assertion_panel_adds_engine_rows_in_dtype_semantics() -> None:
    from specexact.torch import assert_torch_preserves_target

    with_rows = assert_torch_preserves_target(textbook, vocab_sizes=(3, 3), examples=2)
    exact = assert_torch_preserves_target(textbook, vocab_sizes=(3, 3), examples=2,
                                          semantics="exact")
    assert with_rows == exact + 2  # each random pair again, as float32 softmax rows
    # Code that trusts rows to sum to 1 fails on the first row float32 rounds (1/3).
    with pytest.raises(AssertionError, match="class: float-only"):
        assert_torch_preserves_target(_fails_on_rows_not_summing_to_one, vocab_sizes=(3, 3),
                                      examples=2)
    assert assert_torch_preserves_target(_fails_on_rows_not_summing_to_one, vocab_sizes=(3, 3),
                                         examples=2, semantics="exact")


def _fails_on_rows_not_summing_to_one(p: Any, q: Any) -> Any:
    if bool(p.double().sum() != 1):  # exact for a few float32 values
        return -1
    return torch.multinomial(p, 1)


def test_a_chain_step_in_dtype_semantics_gets_the_rows_as_float32_stores_them() -> None:
    from specexact.torch import torch_step

    seen: list[Any] = []

    def chain(ids: Any, draft_probs: Any, target_probs: Any) -> Any:
        seen.append(target_probs[0, 0].tolist())
        out = torch.full((1, 2), -1, dtype=torch.long)
        out[0, 0] = torch.multinomial(target_probs[0, 0], 1)[0]
        return out

    def target(prefix: tuple[int, ...]) -> tuple[F, ...]:
        return (F(1, 3), F(2, 3))

    for semantics, expected in (("dtype", [torch.tensor(1 / 3).item(),
                                           torch.tensor(2 / 3).item()]),
                                ("exact", [F(1, 3), F(2, 3)])):
        seen.clear()
        step = torch_step(chain, signature="chain", gamma=1, semantics=semantics)
        enumerate_law(functools.partial(step, target, target, ()))
        assert seen and all(row == expected for row in seen), (semantics, seen[:1])


def test_equality_with_the_last_value_of_a_decreasing_function_of_a_draw() -> None:
    def at_the_end(p: Any, q: Any) -> Any:
        return int(bool(-torch.rand(1) == -(1 - 2**-24)))

    def in_the_middle(p: Any, q: Any) -> Any:
        return int(bool(-torch.rand(1) == -0.5))

    assert _law_of_one(at_the_end) == F(1, GRID)
    assert _law_of_one(in_the_middle) == F(1, GRID)


def test_a_nan_in_a_race_row_wins_as_torch_s_argmax_has_it() -> None:
    def nan_logit(p: Any, q: Any) -> Any:
        logits = torch.log(p) - torch.log(-torch.log(torch.rand(p.shape[0]).clamp(min=TINY32)))
        logits[1] = math.nan
        return torch.argmax(logits)

    law = torch_output_distribution(nan_logit, (F(1, 2), F(1, 4), F(1, 4)), (F(1, 3),) * 3)
    assert dict(law.items()) == {1: 1}


def test_a_write_into_a_computed_tensor_is_seen_by_the_next_op() -> None:
    # Results keep their real tensor for the next op; a write must invalidate it.
    def written(p: Any, q: Any) -> Any:
        x = p * 2
        x[0] = 5.0
        x.add_(1)
        return (x + 0).tolist()

    seen = computed_in_dtype(lambda: written(torch.tensor([0.25, 0.75]), None))
    assert seen == [6.0, 2.5]


def test_a_remembered_grid_count_tells_signed_zeros_apart() -> None:
    """``count`` is remembered by the steps' operands: ``u / 0.0`` and ``u / -0.0`` are
    +inf and -inf on the positive grid points, so they must not share an entry."""
    from specexact.torch.grid import GridDraw, Step
    from specexact.torch.noise import UniformRecord

    def draw(zero: float) -> GridDraw:
        rec = UniformRecord(None, 24, 0)  # type: ignore[arg-type]
        step = Step("div", torch.div, (None, torch.tensor(zero)), 0, (), torch.float32, 0)
        return GridDraw(rec, torch.float32).then(step, torch.float32).within(1, GRID)

    assert draw(0.0).steps[0].full_key() != draw(-0.0).steps[0].full_key()
    below_zero = [draw(zero).count("<", 0.0) for zero in (0.0, -0.0, 0.0)]
    # Past k = 0 (0/0 is nan), every point is +inf (never below 0) or -inf (always).
    assert below_zero == [(1, 1), (1, GRID), (1, 1)]
