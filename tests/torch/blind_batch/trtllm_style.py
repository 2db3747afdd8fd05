# ruff: noqa: E501  (kept as its author wrote it: read only the docs)
"""TensorRT-LLM style: per-request loop, u * q < p, clamp residual, bonus from last row."""
import torch


def _row(ids, q, p, g, *, clamp_res=True, bonus_off=0, pad_read=False, res_gen="own",
         shared_u=None):
    k = ids.shape[0]
    n = int((ids >= 0).sum()) if not pad_read else k
    out = torch.full((k + 1,), -1, dtype=torch.long)
    gres = g if res_gen == "own" else None
    for j in range(n):
        x = ids[j]
        u = torch.rand(1, generator=g) if shared_u is None else shared_u[j]
        if u * q[j, x] < p[j, x]:
            out[j] = x
            continue
        r = p[j] - q[j]
        if clamp_res:
            r = torch.clamp(r, min=0)
        out[j] = torch.multinomial(r / r.sum(), 1, generator=gres)[0]
        return out
    row = max(n - bonus_off, 0)
    out[n] = torch.multinomial(p[row], 1, generator=gres)[0]
    return out


def _batch(draft_token_ids, draft_probs, target_probs, generators, **kw):
    B = draft_token_ids.shape[0]
    return torch.stack([_row(draft_token_ids[i], draft_probs[i], target_probs[i], generators[i], **kw)
                        for i in range(B)])


def trtllm_correct(draft_token_ids, draft_probs, target_probs, generators):
    return _batch(draft_token_ids, draft_probs, target_probs, generators)


def trtllm_bug_rowlaw(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: bonus drawn from the last draft's target row (off by one)."""
    return _batch(draft_token_ids, draft_probs, target_probs, generators, bonus_off=1)


def trtllm_bug_rowlaw_unclamped(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: residual p - q not clamped."""
    return _batch(draft_token_ids, draft_probs, target_probs, generators, clamp_res=False)


def trtllm_bug_independence(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: the unseeded requests share one vector of per-position uniforms."""
    B, k = draft_token_ids.shape
    shared = torch.rand(k)
    rows = []
    for i in range(B):
        g = generators[i]
        rows.append(_row(draft_token_ids[i], draft_probs[i], target_probs[i], g,
                         shared_u=None if g is not None else shared))
    return torch.stack(rows)


def trtllm_bug_padding(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: loops over all k positions; -1 indexes the last vocabulary entry."""
    return _batch(draft_token_ids, draft_probs, target_probs, generators, pad_read=True)


def trtllm_bug_seeds(draft_token_ids, draft_probs, target_probs, generators):
    """Bug: seeded requests use their generator for acceptance only; residual/bonus from global."""
    return _batch(draft_token_ids, draft_probs, target_probs, generators, res_gen="global")
