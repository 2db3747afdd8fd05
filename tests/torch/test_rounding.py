"""Casts that round (to bfloat16, float16, a float64 value to float32) round exactly as torch.

Exact mode keeps the code's arithmetic exact, but a cast to a narrower float is the
code's own rounding: the bug class "draft sampled from bf16 probabilities, ratio from
the float32 ones" lives there, and a cast kept exact would pass it.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction as F
from typing import Any

import pytest
import torch

from specexact.errors import UnsupportedOperation
from specexact.torch import check_torch_sampler, torch_output_distribution
from specexact.torch.tensor import narrows, round_to, stored
from specexact.torch.values import Special

NARROW = (torch.float32, torch.float16, torch.bfloat16)


def _doubles(seed: int, dtype: torch.dtype) -> list[float]:
    rnd = random.Random(seed)
    info = torch.finfo(dtype)
    values = [rnd.uniform(-1, 1) * 2.0 ** rnd.randint(-160, 140) for _ in range(3000)]
    ulp = info.eps
    values += [1 + ulp / 2, 1 + 3 * ulp / 2, -(1 + ulp / 2),  # ties to even
               1 + ulp / 2 + 2.0 ** -40,  # a tie in float32 only: double rounding
               info.max, info.max * (1 + ulp / 4), info.max * (1 + ulp),  # overflow
               info.tiny / 3, info.tiny * 1.5, -info.tiny / 7, 0.0]  # subnormals
    return values


@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_stored_is_what_torch_stores(dtype: torch.dtype) -> None:
    for value in _doubles(1, dtype):
        real = torch.tensor(value, dtype=torch.float64).to(dtype).item()
        got = stored(F(value), dtype)
        if math.isinf(real):
            assert isinstance(got, Special) and got.value == real, (value, real, got)
        else:
            assert got == F(real), (dtype, value, real, got)


def test_round_to_is_one_rounding_and_stored_goes_through_float32() -> None:
    value = F(1) + F(1, 2**11) + F(1, 2**40)  # just above a float16 tie
    assert round_to(value, torch.float16) == 1 + F(1, 2**10)
    assert stored(value, torch.float16) == 1  # torch: to float32 (a tie) first
    assert round_to(F(1, 3), torch.bfloat16) == F(171, 512)


def test_narrows() -> None:
    assert narrows(torch.float64, torch.float32) and narrows(torch.float32, torch.bfloat16)
    assert narrows(torch.bfloat16, torch.float16) and narrows(torch.int64, torch.float32)
    assert not narrows(torch.float32, torch.float64)
    assert not narrows(torch.bfloat16, torch.float32)
    assert not narrows(torch.bool, torch.float16) and not narrows(torch.float32, torch.int64)


def bf16_draft(p: torch.Tensor, q: torch.Tensor, g: torch.Generator) -> Any:
    """The draft samples from its bf16 probabilities; ratio and residual use q."""
    x = torch.multinomial(q.to(torch.bfloat16).float(), 1, generator=g)
    if torch.rand(1, generator=g) * q[x] < p[x]:
        return x
    return torch.multinomial(torch.clamp(p - q, min=0), 1, generator=g)


def bf16_consistent(p: torch.Tensor, q: torch.Tensor, g: torch.Generator) -> Any:
    """The same, with the ratio and residual on the bf16 draft it sampled from."""
    qb = q.to(torch.bfloat16).float()
    qb = qb / qb.sum()
    x = torch.multinomial(qb, 1, generator=g)
    if torch.rand(1, generator=g) * qb[x] < p[x]:
        return x
    return torch.multinomial(torch.clamp(p - qb, min=0), 1, generator=g)


def test_a_bf16_draft_with_a_float32_ratio_fails() -> None:
    p, q = (F(1, 2), F(1, 2)), (F(3, 10), F(7, 10))
    law = torch_output_distribution(bf16_draft, p, q, uniform="continuous")
    exact_p = [F(torch.tensor(float(v)).item()) for v in p]
    assert law[0] != exact_p[0]
    verdict = check_torch_sampler(bf16_draft, p, q)
    assert not verdict.passed, verdict.format()


def test_sampling_from_the_rounded_draft_it_verifies_with_passes() -> None:
    p, q = (F(1, 2), F(1, 2)), (F(3, 10), F(7, 10))
    verdict = check_torch_sampler(bf16_consistent, p, q)
    assert verdict.passed, verdict.format()


def test_a_uniform_cast_to_a_narrower_float_is_unsupported_not_kept_exact() -> None:
    def coarse_uniform(p: torch.Tensor, q: torch.Tensor) -> Any:
        u = torch.rand(1, dtype=torch.float64).float()  # rounds the 53-bit grid
        return (u < p[0]).long()

    with pytest.raises(UnsupportedOperation, match="rounds it"):
        torch_output_distribution(coarse_uniform, (F(1, 3), F(2, 3)), (F(1, 2), F(1, 2)),
                                  semantics="exact")

    def widened(p: torch.Tensor, q: torch.Tensor) -> Any:
        u = torch.rand(1).double()  # widening keeps every value
        return (u < p[0]).long()

    law = torch_output_distribution(widened, (F(1, 4), F(3, 4)), (F(1, 2), F(1, 2)))
    assert law[1] == F(1, 4)


def test_a_float_constant_in_a_float32_tensor_is_its_float32_value() -> None:
    def constant(p: torch.Tensor, q: torch.Tensor) -> Any:
        t = torch.tensor([0.1, p[0]], dtype=torch.float32)
        return (t[0] == F(torch.tensor(0.1).item())).long()

    law = torch_output_distribution(constant, (F(1, 2), F(1, 2)), (F(1, 2), F(1, 2)))
    assert law[1] == 1
