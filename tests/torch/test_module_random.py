"""Python's random and numpy.random module-level draws inside torch code are lazy
sources on their real grids (issue 22), and real hidden randomness stays undecided."""

from __future__ import annotations

import math
import random
import time
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import torch

from specexact.errors import HiddenRandomness, SamplerRaised
from specexact.torch import check_torch_sampler, torch_output_distribution

F = Fraction
P = ["1/2", "1/4", "1/4"]
Q = ["1/4", "1/4", "1/2"]
GRID = 2 ** 53


def _on_grid(c: Fraction) -> Fraction:
    """P(u < c) for u uniform on k / 2**53, k = 0 .. 2**53 - 1."""
    return F(math.ceil(c * GRID), GRID)


def python_textbook(p: torch.Tensor, q: torch.Tensor) -> Any:
    x = random.choices(range(3), weights=q.tolist())[0]
    if random.random() < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return np.random.choice(3, p=(r / r.sum()).tolist())


def numpy_inclusive(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug: u <= p/q accepts a p = 0 draft when u is exactly 0."""
    x = int(np.random.choice(3, p=q.tolist()))
    if np.random.rand() <= p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return random.choices([0, 1, 2], weights=r.tolist())[0]


def test_python_and_numpy_draws_judge_a_correct_rule_exactly() -> None:
    verdict = check_torch_sampler(python_textbook, P, Q)
    assert verdict.passed, verdict.format()
    assert verdict.findings == ()


def test_the_inclusive_test_on_numpys_grid_is_a_support_violation() -> None:
    verdict = check_torch_sampler(numpy_inclusive, ["1/2", "1/2", "0"], Q)
    assert not verdict.passed
    law = verdict.grid_law
    assert law is not None and dict(law.items())[2] == F(1, 2) * F(1, GRID)


def test_random_random_is_on_the_53_bit_grid() -> None:
    def coin(p: torch.Tensor, q: torch.Tensor) -> int:
        return 0 if random.random() < 0.1 else 1

    grid = torch_output_distribution(coin, P, Q)
    assert dict(grid.items())[0] == _on_grid(F(0.1))
    ideal = torch_output_distribution(coin, P, Q, uniform="continuous")
    assert dict(ideal.items())[0] == F(0.1)


def test_uniform_and_numpy_rand_shapes() -> None:
    def affine(p: torch.Tensor, q: torch.Tensor) -> int:
        a = random.uniform(2, 6)            # 2 + 4 u
        b = np.random.uniform(-1, 1, size=2)  # two draws
        c = np.random.rand(2, 1)
        assert tuple(b.shape) == (2,) and tuple(c.shape) == (2, 1)
        return int(bool(a < 3)) + 2 * int(bool(b[0] < 0)) + 4 * int(bool(c[1, 0] < 0.5))

    law = torch_output_distribution(affine, P, Q, uniform="continuous")
    # a < 3 when u < 1/4; the other two are fair coins
    assert dict(law.items()) == {i: (F(1, 4) if i % 2 else F(3, 4)) / 4 for i in range(8)}


def test_choices_without_weights_and_randint_are_exactly_uniform() -> None:
    def ints(p: torch.Tensor, q: torch.Tensor) -> int:
        if random.choices("abc")[0] == "b":
            return 10
        return random.randint(0, 2) + 3 * np.random.randint(2)

    law = torch_output_distribution(ints, P, Q)
    expected = {10: F(1, 3)} | {i + 3 * j: F(2, 3) * F(1, 6) for i in range(3)
                                for j in range(2)}
    assert dict(law.items()) == expected


def test_numpy_choice_uses_numpys_float64_cdf_and_checks_p() -> None:
    def float_cdf(p: torch.Tensor, q: torch.Tensor) -> Any:
        return np.random.choice(3, p=np.array([0.1, 0.2, 0.7]))

    law = torch_output_distribution(float_cdf, P, Q)
    cdf = np.cumsum(np.array([0.1, 0.2, 0.7]))
    cdf /= cdf[-1]
    first, second = _on_grid(F(float(cdf[0]))), _on_grid(F(float(cdf[1])))
    assert dict(law.items()) == {0: first, 1: second - first, 2: 1 - second}

    def bad_p(p: torch.Tensor, q: torch.Tensor) -> Any:
        return np.random.choice(3, p=[0.5, 0.4, 0.05])

    with pytest.raises(SamplerRaised, match="probabilities do not sum to 1"):
        torch_output_distribution(bad_p, P, Q)


def test_the_real_generators_are_untouched() -> None:
    state, np_state = random.getstate(), np.random.get_state()[1].copy()
    torch_output_distribution(python_textbook, P, Q)
    assert random.getstate() == state
    assert (np.random.get_state()[1] == np_state).all()
    assert isinstance(random.random(), float) and isinstance(np.random.rand(), float)


def test_seeding_during_the_call_is_fixed_randomness() -> None:
    def seeded(p: torch.Tensor, q: torch.Tensor) -> int:
        np.random.seed(1234)
        return int(np.random.choice(3, p=q.tolist()))

    with pytest.raises(SamplerRaised, match=r"FixedRandomness.*numpy\.random"):
        torch_output_distribution(seeded, P, Q)


def test_an_unmodelled_draw_stays_hidden_randomness() -> None:
    def gaussian_coin(p: torch.Tensor, q: torch.Tensor) -> int:
        return 0 if random.gauss(0, 1) < 0 else 1

    with pytest.raises(HiddenRandomness):
        torch_output_distribution(gaussian_coin, P, Q)


def test_a_clock_is_not_mistaken_for_a_modelled_draw() -> None:
    def clock_coin(p: torch.Tensor, q: torch.Tensor) -> int:
        return int(time.perf_counter_ns()) % 2

    # No modelled draw happens: whatever the engine decides, it is never a
    # lazy-source verdict that pretends the clock is a uniform.
    try:
        law = torch_output_distribution(clock_coin, P, Q)
    except HiddenRandomness:
        return
    assert len(law) == 1


# ---- a Python float meeting a float32 tensor (issue 22) ------------------------------


def python_draw_against_float32(p: torch.Tensor, q: torch.Tensor) -> Any:
    """``random.random() < ratio`` with a float32 ratio: torch rounds the Python float
    to float32 first, so a draw of 1 - 2^-26 is 1.0 and rejects even at p = q."""
    x = torch.multinomial(q, 1)
    if random.random() < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)


def python_draw_against_item(p: torch.Tensor, q: torch.Tensor) -> Any:
    """The ratio read out with ``.item()``: two Python floats compared in double."""
    x = torch.multinomial(q, 1)
    if random.random() < (p[x] / q[x]).item():
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)


def test_a_python_draw_against_a_float32_tensor_rounds_to_float32_in_the_dtype_run():
    one_hot = ["1", "0"]
    # Exact semantics: the ideal uniform is below 1, every draft is accepted.
    law = torch_output_distribution(python_draw_against_float32, one_hot, one_hot,
                                    uniform="continuous", semantics="exact")
    assert law == {0: 1}
    # The dtype run: u >= 1 - 2^-25 rounds to 1.0 in float32 (ties to even) and
    # rejects; the residual is all zero and multinomial raises on its NaN row.
    with pytest.raises(SamplerRaised, match="nan"):
        torch_output_distribution(python_draw_against_float32, one_hot, one_hot,
                                  semantics="dtype")
    # Real torch agrees on both sides of the cut.
    p = torch.tensor([1.0, 0.0])
    saved = random.random
    try:
        random.random = lambda: 1 - 2.0 ** -24  # a float32 value below 1: accepted
        assert int(python_draw_against_float32(p, p)) == 0
        random.random = lambda: 1 - 2.0 ** -26  # rounds to 1.0: rejected
        with pytest.raises(RuntimeError, match="probability tensor"):
            python_draw_against_float32(p, p)
    finally:
        random.random = saved


def test_a_python_draw_against_an_item_is_compared_in_double():
    law = torch_output_distribution(python_draw_against_item, P, Q, uniform="continuous",
                                    semantics="exact")
    assert law == dict(enumerate(F(x) for x in P))
    one_hot = ["1", "0"]
    assert torch_output_distribution(python_draw_against_item, one_hot, one_hot,
                                     semantics="dtype") == {0: 1}
