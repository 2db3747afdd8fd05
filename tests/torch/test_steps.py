"""Torch verifiers with the ``chain`` and ``hf`` signatures, as decoding steps."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from specexact.steps.decode import decode_distribution
from specexact.steps.models import ContextFreeModel, TableModel, random_model_pair
from specexact.steps.verdict import check_step
from specexact.torch import torch_step

F = Fraction


def vllm_chain(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
               target_probs: torch.Tensor) -> torch.Tensor:
    """vLLM style: gathers, one row of exponentials for every recovered token, -1 padding."""
    batch_size, k = draft_token_ids.shape
    vocab = target_probs.shape[-1]
    uniform = torch.rand(batch_size, k, dtype=torch.float64)
    index = draft_token_ids.unsqueeze(-1)
    draft_p = draft_probs.gather(-1, index).squeeze(-1)
    target_p = target_probs[:, :k].gather(-1, index).squeeze(-1)
    q = torch.empty((batch_size, vocab), dtype=torch.float32).exponential_()
    residual = (target_probs[:, :k] - draft_probs).clamp_min(0)
    recovered = (residual / q.unsqueeze(1)).argmax(dim=-1)
    output = torch.full((batch_size, k + 1), -1, dtype=torch.long)
    for pos in range(k):
        if draft_p[0, pos] > 0 and uniform[0, pos] < target_p[0, pos] / draft_p[0, pos]:
            output[0, pos] = draft_token_ids[0, pos]
        else:
            output[0, pos] = recovered[0, pos]
            return output
    output[0, k] = torch.multinomial(target_probs[0, k], 1)[0]
    return output


def shared_uniform_chain(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                         target_probs: torch.Tensor) -> torch.Tensor:
    """Bug: one uniform for every position of the block."""
    k = draft_token_ids.shape[1]
    u = torch.rand(1)
    out = torch.full((1, k + 1), -1, dtype=torch.long)
    for i in range(k):
        x = draft_token_ids[0, i]
        if u < target_probs[0, i, x] / draft_probs[0, i, x]:
            out[0, i] = x
        else:
            r = torch.clamp(target_probs[0, i] - draft_probs[0, i], min=0)
            out[0, i] = torch.multinomial(r, 1)[0]
            return out
    out[0, k] = torch.multinomial(target_probs[0, k], 1)[0]
    return out


def wrong_bonus_row_chain(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                          target_probs: torch.Tensor) -> torch.Tensor:
    """Bug: the bonus token is drawn from the last verified row, not the bonus row."""
    k = draft_token_ids.shape[1]
    out = torch.full((1, k + 1), -1, dtype=torch.long)
    for i in range(k):
        x = draft_token_ids[0, i]
        if torch.rand(1) < target_probs[0, i, x] / draft_probs[0, i, x]:
            out[0, i] = x
        else:
            r = torch.clamp(target_probs[0, i] - draft_probs[0, i], min=0)
            out[0, i] = torch.multinomial(r, 1)[0]
            return out
    out[0, k] = torch.multinomial(target_probs[0, k - 1], 1)[0]
    return out


def hf_speculative_sampling(candidate_input_ids: torch.Tensor,
                            candidate_logits: torch.Tensor, candidate_length: int,
                            new_logits: torch.Tensor, is_done_candidate: bool
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """A faithful rewrite of transformers' ``_speculative_sampling`` (inclusive r_i <= ratio)."""
    new_candidate_input_ids = candidate_input_ids[:, -candidate_length:]
    q = candidate_logits.softmax(dim=-1)
    q_i = q[:, torch.arange(candidate_length), new_candidate_input_ids].squeeze(0, 1)
    p = new_logits.softmax(dim=-1)
    p_i = p[:, torch.arange(candidate_length), new_candidate_input_ids].squeeze(0, 1)
    probability_ratio = p_i / q_i
    r_i = torch.rand_like(probability_ratio)
    is_accepted = r_i <= probability_ratio
    n_matches = ((~is_accepted).cumsum(dim=-1) < 1).sum()
    if is_done_candidate and n_matches == candidate_length:
        n_matches -= 1
        valid_tokens = new_candidate_input_ids[:, : n_matches + 1]
    else:
        gamma = candidate_logits.shape[1]
        p_n_plus_1 = p[:, n_matches, :]
        if n_matches < gamma:
            q_n_plus_1 = q[:, n_matches, :]
            p_prime = torch.clamp((p_n_plus_1 - q_n_plus_1), min=0)
            p_prime.div_(p_prime.sum())
        else:
            p_prime = p_n_plus_1
        t = torch.multinomial(p_prime, num_samples=1).squeeze(1)[None, :]
        if n_matches > 0:
            valid_tokens = torch.cat((new_candidate_input_ids[:, :n_matches], t), dim=-1)
        else:
            valid_tokens = t
    return valid_tokens, n_matches


TARGET = ContextFreeModel([F(1, 3), F(2, 3)])
DRAFT = ContextFreeModel([F(2, 3), F(1, 3)])


@pytest.mark.parametrize("kind", ["random", "zeros", "disjoint", "equal"])
def test_vllm_chain_is_lossless(kind: str) -> None:
    target, draft = random_model_pair(3, seed=1, kind=kind)
    step = torch_step(vllm_chain, signature="chain", gamma=2, uniform="continuous")
    verdict = check_step(step, target, draft, 3)
    assert verdict.passed, str(verdict)


def test_shared_uniform_fails_with_its_witness() -> None:
    step = torch_step(shared_uniform_chain, signature="chain", gamma=2,
                      uniform="continuous")
    law = decode_distribution(step, TARGET, DRAFT, 2)
    assert law[(0, 0)] == F(2, 9)  # the sheet's witness: 2/9 instead of 1/9
    assert not check_step(step, TARGET, DRAFT, 2).passed


def test_wrong_bonus_row_fails_with_context_dependent_models() -> None:
    target = TableModel({(): [F(1, 2), F(1, 2)], (0,): [F(1, 4), F(3, 4)],
                         (1,): [F(3, 4), F(1, 4)]}, default=[F(1, 2), F(1, 2)])
    draft = ContextFreeModel([F(1, 2), F(1, 2)])
    good = torch_step(vllm_chain, signature="chain", gamma=1, uniform="continuous")
    bad = torch_step(wrong_bonus_row_chain, signature="chain", gamma=1, uniform="continuous")
    assert check_step(good, target, draft, 2).passed
    verdict = check_step(bad, target, draft, 2)
    assert not verdict.passed
    law = decode_distribution(bad, target, draft, 2)
    # x1 = 0 accepted (prob 1/2), the bonus drawn from p(.|()) instead of p(.|0)
    assert law[(0, 0)] == F(1, 4)


def test_hf_speculative_sampling_passes_continuous_and_shows_the_inclusive_test() -> None:
    target, draft = random_model_pair(3, seed=2, kind="zeros")
    step = torch_step(hf_speculative_sampling, signature="hf", gamma=2, uniform="continuous")
    assert check_step(step, target, draft, 2).passed
    p_zero = ContextFreeModel([F(1, 2), F(1, 2), F(0)])
    q_zero = ContextFreeModel([F(1, 4), F(1, 4), F(1, 2)])
    grid = torch_step(hf_speculative_sampling, signature="hf", gamma=1)
    law = decode_distribution(grid, p_zero, q_zero, 1)
    # r_i <= 0 holds for r_i = 0: token 2 (p = 0) is emitted with mass 2**-24 q(2)
    assert law[(2,)] == F(1, 2**24) * F(1, 2)


def test_grid_uniform_default_is_exact_rounding_in_steps() -> None:
    target = ContextFreeModel([F(3, 10), F(7, 10)])
    draft = ContextFreeModel([F(7, 10), F(3, 10)])
    step = torch_step(vllm_chain, signature="chain", gamma=1)
    law = decode_distribution(step, target, draft, 1)
    assert law != {(0,): F(3, 10), (1,): F(7, 10)}
    assert 0 < abs(law[(0,)] - F(3, 10)) < F(1, 2**52)  # float64 uniforms in vllm_chain


def test_bad_signature_is_invalid() -> None:
    from specexact.errors import InvalidArgument
    with pytest.raises(InvalidArgument):
        torch_step(vllm_chain, signature="tree", gamma=1)
    with pytest.raises(InvalidArgument):
        torch_step(vllm_chain, signature="chain", gamma=0)

