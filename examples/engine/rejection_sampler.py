"""An engine-style rejection sampler for k drafts per row, vectorised over the batch
in the idiom of vLLM's native path (a copy written for specexact's docs, not vLLM's
code).  The tests in test_rejection_sampler.py are what ``specexact mutate`` measures."""

import torch

PLACEHOLDER_TOKEN_ID = -1


def rejection_sample(draft_token_ids, draft_probs, target_probs):
    """draft_token_ids [B, k], draft_probs [B, k, V], target_probs [B, k + 1, V] ->
    output token ids [B, k + 1]: the accepted drafts, then a recovered token (or the
    bonus token when all k are accepted), then PLACEHOLDER_TOKEN_ID."""
    batch_size, num_draft = draft_token_ids.shape
    # One uniform per row and position.
    uniform_probs = torch.rand(batch_size, num_draft, dtype=torch.float64)
    ids = draft_token_ids.unsqueeze(-1)
    p = target_probs[:, :num_draft].gather(-1, ids).squeeze(-1)
    q = draft_probs.gather(-1, ids).squeeze(-1)
    accepted = uniform_probs < torch.clamp(p / q, max=1.0)
    # A draft counts only when every draft before it was accepted too.
    accepted = torch.cumprod(accepted.long(), dim=1)
    num_accepted = accepted.sum(dim=1)
    # Recovered tokens: an exponential race over the residual (no normalisation needed).
    residual = torch.clamp(target_probs[:, :num_draft] - draft_probs, min=0)
    recovered = torch.argmax(residual / torch.empty_like(residual).exponential_(), dim=-1)
    bonus = torch.multinomial(target_probs[:, num_draft], 1).squeeze(-1)
    positions = torch.arange(num_draft + 1).expand(batch_size, num_draft + 1)
    drafts = torch.cat([draft_token_ids, bonus.unsqueeze(-1)], dim=1)
    fallback = torch.cat([recovered, bonus.unsqueeze(-1)], dim=1)
    n = num_accepted.unsqueeze(-1)
    output = torch.where(positions < n, drafts, fallback)
    return torch.where(positions <= n, output, PLACEHOLDER_TOKEN_ID)
