"""Exact mode on unmodified torch samplers, written as real engines write them.

Each sampler is plain torch code ``fn(p, q)`` or ``fn(p, q, generator)``.
The panels use dyadic probabilities, exact in float32, so witnesses are clean.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import torch

from specexact.errors import SamplerRaised, UnsupportedOperation
from specexact.exact.engine import output_distribution
from specexact.torch import check_torch_sampler, torch_output_distribution


def _residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r = torch.clamp(p - q, min=0)
    return r / r.sum()


def textbook_multinomial(p: torch.Tensor, q: torch.Tensor, generator: Any) -> Any:
    """Draft and residual by torch.multinomial; strict '<' against torch.rand."""
    x = torch.multinomial(q, 1, generator=generator)
    u = torch.rand(1, generator=generator)
    if u < p[x] / q[x]:
        return x
    return torch.multinomial(_residual(p, q), 1, generator=generator)


def textbook_inclusive(p: torch.Tensor, q: torch.Tensor, generator: Any) -> Any:
    """Bug (SGLang #35771 pattern): u <= p/q accepts p(x) = 0 when u is exactly 0."""
    x = torch.multinomial(q, 1, generator=generator)
    u = torch.rand(1, generator=generator)
    if u <= p[x] / q[x]:
        return x
    return torch.multinomial(_residual(p, q), 1, generator=generator)


def textbook_exponential(p: torch.Tensor, q: torch.Tensor) -> Any:
    """vLLM style: draws by the exponential race argmax(w / E), E from empty_like."""
    e = torch.empty_like(q).exponential_()
    x = (q / e).argmax()
    accept = torch.rand(1) * q[x] < p[x]
    if accept.item():
        return x
    r = (p - q).clamp_min(0)
    e2 = torch.empty_like(r)
    e2.exponential_()
    return r.div(e2).argmax(dim=-1)


def textbook_gumbel(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Gumbel-max on logits: argmax(logits - log(-log(u)))."""
    logits_q = torch.log(q)
    g = -torch.log(-torch.log(torch.rand_like(q)))
    x = torch.argmax(logits_q + g)
    ratio = torch.exp(torch.log(p[x]) - logits_q[x])
    if bool(torch.rand(()) < ratio):
        return x
    residual = torch.clamp(p - q, min=0.0)
    noise = -torch.log(-torch.log(torch.rand_like(residual)))
    return torch.argmax(residual.log() + noise, dim=-1)


def textbook_inverse_cdf(p: torch.Tensor, q: torch.Tensor) -> Any:
    """FlashInfer-reference style: cumsum + searchsorted on torch.rand (right side)."""
    cdf_q = torch.cumsum(q, dim=0)
    x = torch.searchsorted(cdf_q, torch.rand(1) * cdf_q[-1], right=True)
    x = torch.clamp(x, max=q.numel() - 1)
    if torch.rand(1).item() < (p[x] / q[x]).item():
        return x
    r = torch.clamp(p - q, min=0)
    cdf_r = torch.cumsum(r, dim=0)
    y = torch.searchsorted(cdf_r, torch.rand(1) * cdf_r[-1], right=True)
    return torch.clamp(y, max=r.numel() - 1)


def naive_resample(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug: resample from p after a rejection."""
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    return torch.multinomial(p, 1)


def residual_tiny_floor(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug (vLLM v0 docstring): residual floored at finfo.tiny, so p = 0 tokens get mass."""
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=torch.finfo(torch.float32).tiny)
    return torch.multinomial(r / r.sum(), 1)


def reseeded(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug: manual_seed before each draw, so every draw reuses the same uniform."""
    torch.manual_seed(1234)
    cdf = torch.cumsum(q, 0)
    x = torch.clamp(torch.searchsorted(cdf, torch.rand(1), right=True), max=q.numel() - 1)
    torch.manual_seed(1234)
    if torch.rand(1) < p[x] / q[x]:
        return x
    torch.manual_seed(1234)
    r = torch.clamp(p - q, min=0)
    cdf_r = torch.cumsum(r / r.sum(), 0)
    return torch.clamp(torch.searchsorted(cdf_r, torch.rand(1), right=True), max=q.numel() - 1)


def copy_exponential(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug: ``e[rows].exponential_()`` writes into an advanced-indexing copy.

    The race then reads ``e``, still uninitialised from ``torch.empty_like``.
    """
    e = torch.empty_like(q)
    rows = list(range(q.numel()))
    e[rows].exponential_()
    x = (q / e).argmax()
    if torch.rand(1) < p[x] / q[x]:
        return x
    return torch.multinomial(_residual(p, q), 1)


def _helper(token: torch.Tensor) -> torch.Tensor:
    if int(token) == 0:
        raise IndexError("token 0 is reserved")
    return token


def crash_on_token_zero(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug: a helper that raises on token 0."""
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return _helper(x)
    return _helper(torch.multinomial(_residual(p, q), 1))


def unconditional_normalise(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Lossless: the residual is normalised even when it is all zero (p = q gives 0/0 NaN),
    but the NaN row is only used after a rejection, which then has probability 0."""
    x = torch.multinomial(q, 1)
    r = torch.clamp(p - q, min=0)
    r = r / r.sum()
    if torch.rand(1) < p[x] / q[x]:
        return x
    return torch.multinomial(r, 1)


def lenient_nan(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug: a lenience factor below 1 makes rejection reachable at p = q, where the
    residual row is 0/0 = NaN and reaches torch.multinomial (which raises)."""
    x = torch.multinomial(q, 1)
    r = torch.clamp(p - q, min=0)
    r = r / r.sum()
    if torch.rand(1) < 0.5 * p[x] / q[x]:
        return x
    return torch.multinomial(r, 1)


def nan_branch(p: torch.Tensor, q: torch.Tensor) -> Any:
    """Bug: a NaN (0/0 on the all-zero residual at p = q) used in a Python branch."""
    r = torch.clamp(p - q, min=0)
    share = r[0] / r.sum()
    if share > 0.5:
        return 0
    return torch.multinomial(q, 1)


F = Fraction
P = (F(1, 4), F(1, 2), F(1, 4))
Q = (F(1, 2), F(1, 4), F(1, 4))
#: p(2) = 0 < q(2): the witness of inclusive comparisons and residual floors.
P_ZERO = (F(1, 2), F(1, 2), F(0))
Q_ZERO = (F(1, 4), F(1, 4), F(1, 2))
PANEL = [(P, Q), (P_ZERO, Q_ZERO), (Q, Q), ((F(1), F(0)), (F(0), F(1))),
         ((F(1, 8), F(3, 8), F(1, 4), F(1, 4)), (F(1, 4), F(1, 4), F(1, 4), F(1, 4)))]

LOSSLESS = [textbook_multinomial, textbook_gumbel, textbook_inverse_cdf,
            unconditional_normalise]


@pytest.mark.parametrize("fn", LOSSLESS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("pq", PANEL, ids=lambda pq: f"V{len(pq[0])}")
def test_textbook_four_ways_passes(fn: Any, pq: Any) -> None:
    p, q = pq
    verdict = check_torch_sampler(fn, p, q)
    assert verdict.passed, verdict.format()
    assert verdict.structural_tv == 0


def test_textbook_exact_law_is_p_with_continuous_uniform() -> None:
    law = torch_output_distribution(textbook_multinomial, P, Q, uniform="continuous")
    assert dict(law.items()) == dict(enumerate(P))


def test_naive_resample_fails_with_its_exact_witness() -> None:
    law = torch_output_distribution(naive_resample, P, Q, uniform="continuous")
    # min(p, q) + (1 - A) p with A = 3/4
    assert dict(law.items()) == {0: F(1, 4) + F(1, 16), 1: F(1, 4) + F(1, 8),
                                 2: F(1, 4) + F(1, 16)}
    verdict = check_torch_sampler(naive_resample, P, Q)
    assert not verdict.passed and verdict.severity == "structural"


def test_inclusive_comparison_is_a_support_violation_of_exactly_2_pow_minus_24_q() -> None:
    verdict = check_torch_sampler(textbook_inclusive, P_ZERO, Q_ZERO)
    assert verdict.severity == "support"
    assert verdict.grid_law is not None
    assert verdict.grid_law[2] == F(1, 2**24) * Q_ZERO[2]
    assert check_torch_sampler(textbook_inclusive, P_ZERO, Q_ZERO,
                               uniform="continuous").passed
    # float64 inputs, yet torch.rand(1) is still float32 (the default dtype), as in torch
    law = torch_output_distribution(textbook_inclusive, P_ZERO, Q_ZERO, dtype="float64")
    assert law[2] == F(1, 2**24) * Q_ZERO[2]

    def inclusive64(p: torch.Tensor, q: torch.Tensor) -> Any:
        x = torch.multinomial(q, 1)
        if torch.rand(1, dtype=p.dtype) <= p[x] / q[x]:
            return x
        return torch.multinomial(torch.clamp(p - q, min=0), 1)

    law = torch_output_distribution(inclusive64, P_ZERO, Q_ZERO, dtype="float64")
    assert law[2] == F(1, 2**53) * Q_ZERO[2]


def test_grid_rounding_alone_passes_as_rounding() -> None:
    p, q = (F(3, 10), F(7, 10)), (F(7, 10), F(3, 10))
    verdict = check_torch_sampler(textbook_multinomial, p, q)
    assert verdict.passed and verdict.severity == "rounding", verdict.format()
    assert 0 < verdict.grid_tv <= verdict.grid_tolerance


def test_tiny_residual_floor_fails_on_support() -> None:
    verdict = check_torch_sampler(residual_tiny_floor, P_ZERO, Q_ZERO, uniform="continuous")
    assert not verdict.passed
    assert {f.kind for f in verdict.findings} >= {"support", "structural"}
    assert verdict.exact_law is not None and verdict.exact_law[2] > 0


def test_a_seed_set_during_the_call_is_fixed_randomness() -> None:
    # Real torch draws the same numbers on every call after manual_seed(1234): the
    # output is a fixed function of p and q, whatever law a fresh stream would give.
    with pytest.raises(SamplerRaised, match="manual_seed\\(1234\\) during the call"):
        torch_output_distribution(reseeded, P, Q, uniform="continuous")
    verdict = check_torch_sampler(reseeded, P, Q)
    assert not verdict.passed and verdict.severity == "crash"
    assert "FixedRandomness" in str(verdict.findings[0].crash)


def test_reseeding_the_handed_generator_or_making_one_is_fixed_randomness() -> None:
    def reseeds_generator(p: torch.Tensor, q: torch.Tensor, g: torch.Generator) -> Any:
        g.manual_seed(7)
        return torch.multinomial(q, 1, generator=g)

    def own_generator(p: torch.Tensor, q: torch.Tensor) -> Any:
        return torch.multinomial(q, 1, generator=torch.Generator())

    with pytest.raises(SamplerRaised, match="re-seeded with manual_seed\\(7\\)"):
        torch_output_distribution(reseeds_generator, P, Q)
    with pytest.raises(SamplerRaised, match=r"a torch\.Generator the code created"):
        torch_output_distribution(own_generator, P, Q)

    def uses_it(p: torch.Tensor, q: torch.Tensor, g: torch.Generator) -> Any:
        return torch.multinomial(q, 1, generator=g)  # the handed generator: random

    assert dict(torch_output_distribution(uses_it, P, Q).items()) == dict(enumerate(Q))


def test_seeding_to_the_seed_the_generator_already_started_from_is_fixed() -> None:
    # A module that seeds at import (torch.manual_seed(5)) and a sampler that seeds
    # again with 5: the state did not change, but the sampler's draws are still fixed.
    def seeds_again(p: torch.Tensor, q: torch.Tensor) -> Any:
        torch.manual_seed(5)
        return torch.multinomial(q, 1)

    def seeds_handed(p: torch.Tensor, q: torch.Tensor, g: torch.Generator) -> Any:
        g.manual_seed(g.initial_seed())  # the seed a fresh Generator() starts from
        return torch.multinomial(q, 1, generator=g)

    saved = torch.get_rng_state()
    try:
        torch.manual_seed(5)
        with pytest.raises(SamplerRaised, match="manual_seed\\(5\\) during the call"):
            torch_output_distribution(seeds_again, P, Q)
        assert torch.equal(torch.get_rng_state(), _fresh(5)), "the global state restored"
        with pytest.raises(SamplerRaised, match="re-seeded with manual_seed"):
            torch_output_distribution(seeds_handed, P, Q)
    finally:
        torch.set_rng_state(saved)


def _fresh(seed: int) -> torch.Tensor:
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen.get_state()


def test_exponential_on_an_advanced_index_copy_reads_empty_like() -> None:
    verdict = check_torch_sampler(copy_exponential, P, Q)
    assert verdict.severity == "crash"
    text = str(verdict.findings[0].crash)
    assert "value read from torch.empty_like at" in text and "was never written" in text
    assert "test_samplers.py" in text


def test_crash_on_token_zero_is_reported_with_its_path() -> None:
    verdict = check_torch_sampler(crash_on_token_zero, P, Q)
    assert verdict.severity == "crash"
    assert "token 0 is reserved" in verdict.findings[0].message


def test_nan_that_is_never_used_is_not_a_finding() -> None:
    assert check_torch_sampler(unconditional_normalise, Q, Q).passed


def test_nan_reaching_multinomial_is_a_crash() -> None:
    verdict = check_torch_sampler(lenient_nan, Q, Q)
    assert verdict.severity == "crash"
    assert "inf`, `nan`" in str(verdict.findings[0].crash)


def test_nan_reaching_a_branch_names_its_origin() -> None:
    verdict = check_torch_sampler(nan_branch, Q, Q)
    assert verdict.severity == "crash"
    text = str(verdict.findings[0].crash)
    assert "nan" in text and "0/0" in text and "test_samplers.py" in text


def test_irrational_temperature_is_unsupported_with_the_line() -> None:
    def temperature(p: torch.Tensor, q: torch.Tensor) -> Any:
        probs = torch.softmax(torch.log(p) / 0.7, dim=-1)
        return torch.multinomial(probs, 1)

    with pytest.raises(UnsupportedOperation, match=r"test_samplers\.py:\d+"):
        torch_output_distribution(temperature, P, Q, semantics="exact")


def test_integer_temperature_stays_exact() -> None:
    def temperature(p: torch.Tensor, q: torch.Tensor) -> Any:
        logits = torch.log(p)
        logits = logits - logits.max()
        return torch.multinomial(torch.softmax(logits / 0.5, dim=-1), 1)

    law = torch_output_distribution(temperature, P, Q)
    assert dict(law.items()) == {0: F(1, 6), 1: F(2, 3), 2: F(1, 6)}


def test_unknown_op_is_unsupported_and_named() -> None:
    def gaussian(p: torch.Tensor, q: torch.Tensor) -> Any:
        return torch.argmax(p + torch.randn(3))

    with pytest.raises(UnsupportedOperation, match="randn"):
        torch_output_distribution(gaussian, P, Q)


def test_compiled_wrappers_run_as_python() -> None:
    @torch.no_grad()
    def ng(p: torch.Tensor, q: torch.Tensor) -> Any:
        return textbook_multinomial(p, q, None)

    @torch.inference_mode()
    def im(p: torch.Tensor, q: torch.Tensor) -> Any:
        return naive_resample(p, q)

    assert check_torch_sampler(ng, P, Q).passed
    assert not check_torch_sampler(im, P, Q).passed
    compiled = torch.compile(textbook_exponential)
    assert check_torch_sampler(compiled, P, Q).passed
    scripted = torch.jit.script(_scriptable_textbook)
    assert check_torch_sampler(scripted, P, Q).passed


def _scriptable_textbook(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    x = torch.multinomial(q, 1)
    if bool(torch.rand(1) < p[x] / q[x]):
        return x
    r = torch.clamp(p - q, min=0.0)
    return torch.multinomial(r / r.sum(), 1)


def test_deliberately_broken_rule_is_caught() -> None:
    def off_by_one(p: torch.Tensor, q: torch.Tensor) -> Any:
        x = torch.multinomial(q, 1)
        if torch.rand(1) < p[x] / q[x]:
            return x
        r = torch.clamp(p - q, min=0)
        r[0] = r[0] + 0.25  # a bias of 1/4 on token 0's residual weight
        return torch.multinomial(r / r.sum(), 1)

    assert not check_torch_sampler(off_by_one, P, Q).passed


def test_global_rng_is_untouched_by_exact_mode() -> None:
    before = torch.random.get_rng_state()
    with pytest.raises(SamplerRaised):
        torch_output_distribution(reseeded, P, Q)  # re-seeds torch's global generator
    assert torch.equal(before, torch.random.get_rng_state())
    torch_output_distribution(textbook_multinomial, P, Q)
    assert torch.equal(before, torch.random.get_rng_state())


def test_assert_torch_preserves_target_passes_and_fails() -> None:
    from specexact.torch import assert_torch_preserves_target
    assert assert_torch_preserves_target(textbook_multinomial, vocab_sizes=(2, 3),
                                         examples=2) > 10
    with pytest.raises(AssertionError, match="does not preserve the target"):
        assert_torch_preserves_target(naive_resample, vocab_sizes=(2, 3), examples=2)
    with pytest.raises(AssertionError, match="support"):
        assert_torch_preserves_target(textbook_inclusive, vocab_sizes=(2, 3), examples=2)


def test_rng_sampler_adapter_runs_under_the_existing_engine() -> None:
    from specexact.exact.verdict import check_sampler
    from specexact.torch import torch_rng_sampler
    sampler = torch_rng_sampler(textbook_multinomial)
    assert check_sampler(sampler, ["1/3", "2/3"], ["2/3", "1/3"]).passed
    assert not check_sampler(torch_rng_sampler(naive_resample), ["1/3", "2/3"],
                             ["2/3", "1/3"]).passed
    inclusive = torch_rng_sampler(textbook_inclusive)
    law = output_distribution(inclusive, P_ZERO, Q_ZERO, uniform_bits=24)
    assert law[2] == F(1, 2**24) * Q_ZERO[2]


def test_detection_of_torch_randomness_for_the_cli_message() -> None:
    from specexact.torch import TORCH_RANDOMNESS_MESSAGE, torch_randomness_reason

    def rng_rule(p: Any, q: Any, rng: Any) -> Any:
        return rng.categorical(q)

    assert torch_randomness_reason(textbook_multinomial) == TORCH_RANDOMNESS_MESSAGE
    assert torch_randomness_reason(naive_resample) == TORCH_RANDOMNESS_MESSAGE
    assert torch_randomness_reason(rng_rule) is None
    assert "use --torch" in TORCH_RANDOMNESS_MESSAGE

    def annotated(p: Any, q: Any, generator: torch.Generator) -> Any:
        return 0

    assert torch_randomness_reason(annotated) == TORCH_RANDOMNESS_MESSAGE


def test_without_torch_mode_the_engine_cannot_judge_torch_code() -> None:
    from specexact.errors import SamplerFailure, Undecided
    from specexact.exact.verdict import check_sampler
    try:
        verdict = check_sampler(naive_resample, P, Q)
    except Undecided:
        return  # hidden randomness: no verdict, as expected
    assert not verdict.passed and isinstance(verdict.crash, SamplerFailure)


def test_seeding_to_the_process_seed_twice_is_fixed_randomness() -> None:
    def seeded_twice(p: torch.Tensor, q: torch.Tensor) -> Any:
        torch.manual_seed(torch.initial_seed())  # the seed the generator already has
        u = torch.rand(1)
        torch.manual_seed(torch.initial_seed())
        v = torch.rand(1)
        return 0 if bool(u == v) else 1

    torch.manual_seed(5)
    with pytest.raises(SamplerRaised, match="FixedRandomness"):
        torch_output_distribution(seeded_twice, P, Q)


def test_randint_uniform_and_bernoulli_draws_are_exact() -> None:
    def uniform_draft(p: torch.Tensor, q: torch.Tensor) -> Any:
        # draft from the uniform q via randint, accept with a Bernoulli of p(x) / max q
        x = torch.randint(0, p.numel(), (1,))
        coin = torch.bernoulli(p[x] / p.max())
        return x if bool(coin) else -1

    law = torch_output_distribution(uniform_draft, P, Q, uniform="continuous")
    assert dict(law.items()) == {0: F(1, 6), 1: F(1, 3), 2: F(1, 6), -1: F(1, 3)}

    def shifted(p: torch.Tensor, q: torch.Tensor) -> Any:
        u = torch.empty(1).uniform_(0.5, 1.0)
        return 1 if bool(u < 0.75) else 0

    law = torch_output_distribution(shifted, P, Q, semantics="exact")
    assert dict(law.items()) == {0: F(1, 2), 1: F(1, 2)}


def test_item_values_compare_with_python_floats() -> None:
    def coin(p: torch.Tensor, q: torch.Tensor) -> Any:
        u = torch.rand(1).item()
        return 0 if u < 0.25 else 1

    law = torch_output_distribution(coin, P, Q)
    assert dict(law.items()) == {0: F(1, 4), 1: F(3, 4)}


def test_rng_protocol_code_in_torch_mode_is_no_verdict_not_a_crash() -> None:
    def rng_sampler(p: Any, q: Any, rng: Any) -> Any:
        return rng.categorical(p)

    with pytest.raises(UnsupportedOperation, match="audit it without --torch"):
        torch_output_distribution(rng_sampler, P, Q)


def test_an_unclamped_residual_race_is_the_residual_law() -> None:
    # argmax((p - q) / E): negative entries are negative, so they never beat a positive one.
    def unclamped(p: torch.Tensor, q: torch.Tensor, g: torch.Generator) -> Any:
        x = torch.multinomial(q, 1, generator=g)
        if torch.rand(1, generator=g) * q[x] < p[x]:
            return x
        e = torch.empty_like(p).exponential_(generator=g)
        return torch.argmax((p - q) / e)

    law = torch_output_distribution(unclamped, P, Q, uniform="continuous")
    assert dict(law.items()) == {i: v for i, v in enumerate(P) if v}
    verdict = check_torch_sampler(unclamped, P, Q)
    assert verdict.passed, verdict.format()


def test_a_race_row_without_a_positive_entry_takes_the_first_zero() -> None:
    def zeros_after_minus_inf(p: torch.Tensor, q: torch.Tensor) -> Any:
        w = torch.tensor([0.0, 0.0, 0.0])
        e = torch.empty(3).exponential_()
        scores = (w / e).log()  # log 0 = -inf everywhere ...
        scores[2] = 0.0  # ... but the last, a plain 0
        return torch.argmax(torch.where(torch.arange(3) == 0, scores, w / e))

    # entries: -inf (index 0), 0/E (index 1), 0/E (index 2): the first 0 wins.
    # the ideal race (exact semantics); the dtype's E = 0 ends: tests/torch/test_faithful_races.py
    law = torch_output_distribution(zeros_after_minus_inf, P, Q, semantics="exact")
    assert dict(law.items()) == {1: 1}

    def all_negative(p: torch.Tensor, q: torch.Tensor) -> Any:
        e = torch.empty(3).exponential_()
        return torch.argmax(torch.tensor([-1.0, -2.0, -3.0]) / e)

    with pytest.raises(UnsupportedOperation, match="all negative"):
        torch_output_distribution(all_negative, P, Q, semantics="exact")
    with pytest.raises(UnsupportedOperation, match="noise race"):
        torch_output_distribution(all_negative, P, Q)


def test_torch_distributions_categorical_and_bucketize_are_exact() -> None:
    def with_distributions(p: torch.Tensor, q: torch.Tensor) -> Any:
        x = torch.distributions.Categorical(probs=q).sample()
        if torch.rand(1) < p[x] / q[x]:
            return x
        r = torch.clamp(p - q, min=0)
        return torch.distributions.Categorical(logits=torch.log(r)).sample()

    def with_bucketize(p: torch.Tensor, q: torch.Tensor) -> Any:
        x = torch.bucketize(torch.rand(1), torch.cumsum(q, 0), right=True)
        return x.clamp(max=len(q) - 1)

    assert check_torch_sampler(with_distributions, P, Q).passed
    assert dict(torch_output_distribution(with_bucketize, P, Q, uniform="continuous")
                .items()) == dict(enumerate(Q))

    def naive(p: torch.Tensor, q: torch.Tensor) -> Any:
        x = torch.distributions.Categorical(probs=q).sample()
        if torch.rand(1) < p[x] / q[x]:
            return x
        return torch.distributions.Categorical(probs=p).sample()

    assert not check_torch_sampler(naive, P, Q).passed
