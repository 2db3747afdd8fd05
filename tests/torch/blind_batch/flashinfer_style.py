
"""FlashInfer style: whole-batch uniforms [B, k+1], cumprod acceptance masks."""
import torch


def _uniforms(B, k, generators, mode="own"):
    u = torch.rand(B, k + 1, dtype=torch.float32)
    if mode == "own":
        for i, g in enumerate(generators):
            if g is not None:
                u[i] = torch.rand(k + 1, dtype=torch.float32, generator=g)
    elif mode == "compacted":
        seeded = [g for g in generators if g is not None]
        for i, g in enumerate(seeded):   # bug: index among seeded requests, not request index
            u[i] = torch.rand(k + 1, dtype=torch.float32, generator=g)
    elif mode == "shared":
        u = torch.rand(1, k + 1, dtype=torch.float32).expand(B, k + 1).clone()
        for i, g in enumerate(generators):
            if g is not None:
                u[i] = torch.rand(k + 1, dtype=torch.float32, generator=g)
    return u


def _inverse_cdf(w, u):
    cdf = torch.cumsum(w / w.sum(), dim=0)
    idx = (cdf <= u).sum()
    return torch.clamp(idx, max=w.shape[0] - 1)


def _kernel(draft_token_ids, draft_probs, target_probs, generators, *, umode="own",
            pad_read=False, same_uniform=False, half_batched=False):
    B, k = draft_token_ids.shape
    valid = draft_token_ids >= 0
    num_draft = valid.sum(dim=1)
    u = _uniforms(B, k, generators, umode)
    ids = draft_token_ids.clamp(min=0)
    p_tok = torch.gather(target_probs[:, :k], 2, ids.unsqueeze(-1)).squeeze(-1)  # [B,k]
    q_tok = torch.gather(draft_probs, 2, ids.unsqueeze(-1)).squeeze(-1)
    if half_batched and B > 1:
        p_tok = p_tok.to(torch.bfloat16).to(torch.float32)
        q_tok = q_tok.to(torch.bfloat16).to(torch.float32)
    accept = u[:, :k] * q_tok < p_tok
    if not pad_read:
        accept = accept & valid
    accepted_prefix = torch.cumprod(accept.to(torch.long), dim=1)
    num_acc = accepted_prefix.sum(dim=1)
    if pad_read:
        num_acc = torch.minimum(num_acc, torch.full_like(num_acc, k))
    out = torch.full((B, k + 1), -1, dtype=torch.long)
    for i in range(B):
        a = int(num_acc[i])
        n = int(num_draft[i]) if not pad_read else k
        out[i, :a] = draft_token_ids[i, :a]
        if a < n:
            w = torch.clamp(target_probs[i, a] - draft_probs[i, a], min=0)
        else:
            w = target_probs[i, a]
        uu = u[i, a] if same_uniform else u[i, k]
        out[i, a] = _inverse_cdf(w, uu)
    return out


def flashinfer_correct(draft_token_ids, draft_probs, target_probs, generators):
    return _kernel(draft_token_ids, draft_probs, target_probs, generators)


def flashinfer_bug_rowlaw(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: the correction token reuses the uniform that decided the rejection."""
    return _kernel(draft_token_ids, draft_probs, target_probs, generators, same_uniform=True)


def flashinfer_bug_independence(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: one row of uniforms broadcast across the unseeded requests."""
    return _kernel(draft_token_ids, draft_probs, target_probs, generators, umode="shared")


def flashinfer_bug_padding(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: padded -1 is clamped to token 0 and its acceptance is not masked."""
    return _kernel(draft_token_ids, draft_probs, target_probs, generators, pad_read=True)


def flashinfer_bug_batch(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: batched fast path rounds the acceptance probabilities to bfloat16."""
    return _kernel(draft_token_ids, draft_probs, target_probs, generators, half_batched=True)


def flashinfer_bug_seeds(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: seeded generators assigned by their index among seeded requests."""
    return _kernel(draft_token_ids, draft_probs, target_probs, generators, umode="compacted")
