# ruff: noqa: E501  (kept as its author wrote it: read only the docs)
"""vLLM v1 style batched rejection sampler (flattened drafts + cu_num_draft_tokens)."""
import torch

PLACEHOLDER = -1


def _flatten(draft_token_ids, draft_probs, target_probs):
    mask = draft_token_ids != PLACEHOLDER
    num_draft = mask.sum(dim=1)
    cu = torch.cumsum(num_draft, dim=0)
    flat_ids = draft_token_ids[mask]
    flat_q = draft_probs[mask]
    flat_p = target_probs[:, :-1][mask]
    return num_draft, cu, flat_ids, flat_q, flat_p


def _uniforms(total, num_draft, cu, generators, seeded_use_own=True):
    u = torch.rand(total, dtype=torch.float32)
    if seeded_use_own:
        for i, g in enumerate(generators):
            n = int(num_draft[i])
            if g is None or n == 0:
                continue
            start = int(cu[i]) - n
            u[start:start + n] = torch.rand(n, dtype=torch.float32, generator=g)
    return u


def _bonus(target_probs, num_draft, generators, idx=None):
    B = target_probs.shape[0]
    out = []
    for i in range(B):
        row = int(num_draft[i]) if idx is None else idx[i]
        out.append(torch.multinomial(target_probs[i, row], 1, generator=generators[i]))
    return out


def _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus,
          generators, recover):
    B, k = draft_token_ids.shape
    out = torch.full((B, k + 1), PLACEHOLDER, dtype=torch.long)
    for i in range(B):
        n = int(num_draft[i])
        start = int(cu[i]) - n
        rejected = False
        for j in range(n):
            t = start + j
            x = flat_ids[t]
            if u[t] < flat_p[t, x] / flat_q[t, x]:
                out[i, j] = x
                continue
            out[i, j] = recover(i, t)
            rejected = True
            break
        if not rejected:
            out[i, n] = bonus[i][0]
    return out


def vllm_correct(draft_token_ids, draft_probs, target_probs, generators):
    num_draft, cu, flat_ids, flat_q, flat_p = _flatten(draft_token_ids, draft_probs, target_probs)
    total = int(cu[-1])
    bonus = _bonus(target_probs, num_draft, generators)
    u = _uniforms(total, num_draft, cu, generators)

    def recover(i, t):
        r = torch.clamp(flat_p[t] - flat_q[t], min=0)
        return torch.multinomial(r / r.sum(), 1, generator=generators[i])[0]

    return _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus, generators, recover)


def vllm_correct_exp(draft_token_ids, draft_probs, target_probs, generators):
    """Recovered tokens by argmax(residual / q) with per-request exponential noise."""
    B = draft_token_ids.shape[0]
    V = target_probs.shape[-1]
    num_draft, cu, flat_ids, flat_q, flat_p = _flatten(draft_token_ids, draft_probs, target_probs)
    total = int(cu[-1])
    bonus = _bonus(target_probs, num_draft, generators)
    u = _uniforms(total, num_draft, cu, generators)
    q = torch.empty((B, V), dtype=torch.float32)
    q.exponential_()
    for i, g in enumerate(generators):
        if g is not None and int(num_draft[i]) > 0:
            q[i].exponential_(generator=g)
    residual = torch.clamp(flat_p - flat_q, min=0)
    req = torch.repeat_interleave(torch.arange(B), num_draft)
    recovered = torch.argmax(residual / q[req], dim=-1)

    def recover(i, t):
        return recovered[t]

    return _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus, generators, recover)


# ---- buggy variants ----

def vllm_bug_rowlaw(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: recovered token drawn from the target row p, not the residual."""
    num_draft, cu, flat_ids, flat_q, flat_p = _flatten(draft_token_ids, draft_probs, target_probs)
    total = int(cu[-1])
    bonus = _bonus(target_probs, num_draft, generators)
    u = _uniforms(total, num_draft, cu, generators)

    def recover(i, t):
        return torch.multinomial(flat_p[t], 1, generator=generators[i])[0]

    return _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus, generators, recover)


def vllm_bug_independence(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: one block of k uniforms drawn once and reused for every request."""
    B, k = draft_token_ids.shape
    num_draft, cu, flat_ids, flat_q, flat_p = _flatten(draft_token_ids, draft_probs, target_probs)
    total = int(cu[-1])
    bonus = _bonus(target_probs, num_draft, generators)
    base = torch.rand(k, dtype=torch.float32)
    u = torch.empty(total, dtype=torch.float32)
    for i in range(B):
        n = int(num_draft[i])
        start = int(cu[i]) - n
        if n == 0:
            continue
        if generators[i] is not None:
            u[start:start + n] = torch.rand(n, dtype=torch.float32, generator=generators[i])
        else:
            u[start:start + n] = base[:n]

    def recover(i, t):
        r = torch.clamp(flat_p[t] - flat_q[t], min=0)
        return torch.multinomial(r / r.sum(), 1, generator=generators[i])[0]

    return _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus, generators, recover)


def vllm_bug_padding(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: num_draft_tokens taken as k for every request; -1 read as token id (-> V-1)."""
    B, k = draft_token_ids.shape
    num_draft = torch.full((B,), k, dtype=torch.long)
    cu = torch.cumsum(num_draft, dim=0)
    flat_ids = draft_token_ids.reshape(-1)
    flat_q = draft_probs.reshape(B * k, -1)
    flat_p = target_probs[:, :-1].reshape(B * k, -1)
    bonus = _bonus(target_probs, num_draft, generators)
    u = _uniforms(B * k, num_draft, cu, generators)

    def recover(i, t):
        r = torch.clamp(flat_p[t] - flat_q[t], min=0)
        return torch.multinomial(r / r.sum(), 1, generator=generators[i])[0]

    return _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus, generators, recover)


def vllm_bug_batchmax(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: bonus token taken from the target row at the batch-max number of drafts."""
    num_draft, cu, flat_ids, flat_q, flat_p = _flatten(draft_token_ids, draft_probs, target_probs)
    total = int(cu[-1])
    max_n = int(num_draft.max())
    B = draft_token_ids.shape[0]
    bonus = _bonus(target_probs, num_draft, generators, idx=[max_n] * B)
    u = _uniforms(total, num_draft, cu, generators)

    def recover(i, t):
        r = torch.clamp(flat_p[t] - flat_q[t], min=0)
        return torch.multinomial(r / r.sum(), 1, generator=generators[i])[0]

    return _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus, generators, recover)


def vllm_bug_seeds(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: uniforms for seeded requests are never overwritten (global generator)."""
    num_draft, cu, flat_ids, flat_q, flat_p = _flatten(draft_token_ids, draft_probs, target_probs)
    total = int(cu[-1])
    bonus = _bonus(target_probs, num_draft, generators)
    u = _uniforms(total, num_draft, cu, generators, seeded_use_own=False)

    def recover(i, t):
        r = torch.clamp(flat_p[t] - flat_q[t], min=0)
        return torch.multinomial(r / r.sum(), 1, generator=generators[i])[0]

    return _emit(draft_token_ids, num_draft, cu, flat_ids, flat_q, flat_p, u, bonus, generators, recover)
