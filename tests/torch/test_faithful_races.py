"""Exponential races, entropies and engine helpers as torch's CPU kernels compute them.

* ``exponential_`` in dtype semantics is ``(-1 / rate) * log1p(-u)`` of its own float64
  ``torch.rand`` draw ``u = k / 2**53`` (0 included), cast to the dtype: checked
  against real torch here, including ``E = 0`` at ``u = 0``;
* a race ``argmax(w / E)`` then splits off the grid points where an entry is nan
  (``0 / 0``: torch's argmax returns the first nan) or infinite (``w / 0``), exactly;
* rational combinations of logs (``-sum p log(p + eps)``) and their ``exp`` compare
  exactly (typical acceptance);
* ``torch.profiler.record_function``, ``F.relu`` and ``F.pad`` run as in torch.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from specexact.torch import check_torch_sampler, torch_output_distribution
from specexact.torch.values import ExpLinear, LogLinear, LogR

TINY = torch.finfo(torch.float32).tiny
GRID53 = Fraction(1, 2**53)


def floored_race(p: torch.Tensor, q: torch.Tensor) -> Any:
    """vLLM v0's recovered token: the residual floored at float32's tiny, normalised, then
    an exponential race (``probs.div_(q).argmax()``), as ``_multinomial`` does it."""
    f = torch.clamp(p - q, min=TINY)
    probs = f / f.sum()
    e = torch.empty_like(probs).exponential_(1.0)
    return probs.div_(e).argmax()


def plain_race(p: torch.Tensor, q: torch.Tensor) -> Any:
    """A race on p itself: exact in real arithmetic; a p = 0 token is 0 / E, nan at E = 0."""
    e = torch.empty_like(p).exponential_(1.0)
    return (p / e).argmax()


def test_exponential_is_log1p_of_a_float64_draw_as_torch_computes_it() -> None:
    # the model the dtype run uses, against real torch's kernel, on one seed per dtype
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        torch.manual_seed(11)
        real = torch.empty(2000, dtype=dtype).exponential_()
        torch.manual_seed(11)
        u = torch.rand(2000, dtype=torch.float64).tolist()
        model = torch.tensor([-math.log1p(-x) for x in u], dtype=torch.float64).to(dtype)
        assert torch.equal(real, model), dtype
    # its ends: u = 0 gives E = 0 exactly; the last grid point the largest E
    assert -math.log1p(-0.0) == 0.0
    assert float(torch.tensor(-math.log1p(-(1 - 2.0**-53))).float()) == pytest.approx(36.7368, 1e-4)


def test_real_torch_argmax_takes_nan_then_the_first_infinity() -> None:
    # the two facts the race's exact end points rest on
    assert int(torch.tensor([0.5, 0.0, 0.5]).div(torch.tensor([1.0, 0.0, 0.0])).argmax()) == 1
    assert int(torch.tensor([TINY, 1.0]).div(torch.tensor([0.0, 0.0])).argmax()) == 0
    assert int(torch.tensor([TINY, 1.0]).div(torch.tensor([0.0, 1e-16])).argmax()) == 0


def test_a_p_zero_token_wins_a_plain_race_only_in_the_dtype() -> None:
    verdict = check_torch_sampler(plain_race, ["0", "1/2", "1/2"], ["1/2", "1/4", "1/4"])
    assert not verdict.passed
    assert verdict.finding_class == "float-only"
    assert verdict.structural_tv == 0
    law = verdict.grid_law
    assert law is not None and dict(law.items())[0] == GRID53  # E_0 = 0: 0 / 0 is nan


def test_the_tiny_floor_race_puts_the_grid_zero_mass_on_a_p_zero_token() -> None:
    # exact arithmetic: the floor gives token 0 mass tiny / (1 + tiny); float32: token 0
    # cannot win unless its E is exactly 0, and then it always does (tiny / 0 = inf,
    # the first maximum): mass 2**-53, exact
    verdict = check_torch_sampler(floored_race, ["0", "1"], ["1", "0"])
    assert not verdict.passed
    grid, exact = verdict.grid_law, verdict.exact_law
    assert grid is not None and exact is not None
    assert dict(grid.items())[0] == GRID53
    assert dict(exact.items())[0] == Fraction(TINY) / (1 + Fraction(TINY))


def test_the_race_masses_of_the_end_points_are_exact_and_the_rest_bounded() -> None:
    law = torch_output_distribution(plain_race, ["1/2", "1/2"], ["1/2", "1/2"])
    masses = dict(law.items())
    # E = 0 makes an entry infinite; both infinite, the first maximum wins: entry 0 by
    # 2**-53, entry 1 by 2**-53 (1 - 2**-53); the split of the finite points is symmetric
    assert masses[0] - masses[1] == GRID53 ** 2
    assert sum(masses.values()) == 1


def test_a_nan_row_divided_by_noise_takes_its_first_entry() -> None:
    def nan_row(p: torch.Tensor, q: torch.Tensor) -> Any:
        r = torch.clamp(p - q, min=0)
        r = r / r.sum()  # 0/0 at p = q
        return r.div_(torch.empty_like(r).exponential_()).argmax()

    assert dict(torch_output_distribution(nan_row, ["1/2", "1/2"], ["1/2", "1/2"]).items()) \
        == {0: 1}


def test_entropy_terms_and_logs_against_rationals_are_decided_exactly() -> None:
    half, quarter = LogR(Fraction(1, 2)), LogR(Fraction(1, 4))
    h = -(half * Fraction(1, 2) + quarter * Fraction(1, 4) * 2)  # entropy of (1/2, 1/4, 1/4)
    assert isinstance(h, LogLinear) and float(h) == pytest.approx(1.5 * math.log(2))
    assert h > Fraction(1039, 1000) and h < Fraction(1040, 1000)
    t = (-h).exp() * Fraction(3, 10)
    assert isinstance(t, ExpLinear) and float(t) == pytest.approx(0.3 * 2 ** -1.5)
    assert t < Fraction(1061, 10000) < Fraction(1, 8) and t > Fraction(1060, 10000)
    assert (quarter * Fraction(1, 2) - half) == 0  # an identity, decided algebraically
    assert LogR(Fraction(2)) > Fraction(693, 1000) and LogR(Fraction(2)) < Fraction(694, 1000)


def typical(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Medusa/vLLM typical acceptance of the draft's top token, then the target's argmax."""
    x = torch.argmax(q)
    entropy = -torch.sum(p * torch.log(p + 1e-5), dim=-1)
    threshold = torch.minimum(torch.ones_like(entropy) * 0.09, torch.exp(-entropy) * 0.3)
    return x if p[x] > threshold else torch.argmax(p)


def test_typical_acceptance_gets_an_exact_verdict() -> None:
    verdict = check_torch_sampler(typical, ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"])
    assert not verdict.passed and verdict.structural_tv > 0  # deterministic: not lossless
    assert dict(verdict.exact_law.items()) == {2: 1}  # type: ignore[union-attr]


@torch.profiler.record_function("engine_sampler")
def profiled(p: torch.Tensor, q: torch.Tensor) -> Any:
    r = F.relu(p - q)
    x = torch.multinomial(q, 1)
    y = F.pad(torch.multinomial(r / r.sum(), 1)[None], (1, 0), value=-1)[0, 1:]
    return torch.where(torch.rand(1) * q[x] < p[x], x, y)


def test_profiler_ranges_relu_and_pad_run_as_in_torch() -> None:
    verdict = check_torch_sampler(profiled, ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"],
                                  uniform="continuous")
    assert verdict.passed, verdict.format()
