"""Batch verification kernels as engines write them, right and wrong.

Each is ``fn(draft_token_ids [B, k], draft_probs [B, k, V], target_probs [B, k + 1, V],
generators) -> LongTensor [B, k + 1]`` (``--signature batch``): ``-1`` pads a row that
drafted fewer tokens, ``generators[b]`` is the request's ``torch.Generator`` or None
(torch's global generator), and each returned row holds the emitted tokens then
``-1``.  The ``hf_speculative_sampling_*`` kernels are batched hf functions
(``--signature hf --batched``), the ``chain_global*`` ones batched chain functions
without generators (``--signature chain --batched``).  The wrong ones reproduce a bug
class of the reference sheet's section 11.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = [
    "block_verification",
    "block_verification_shared_uniform",
    "chain_global",
    "chain_global_shared_row",
    "compacted_generators",
    "compacted_rows",
    "flashinfer_chain",
    "hf_batched",
    "hf_batched_fewest_matches",
    "hf_speculative_sampling_batch_sum",
    "hf_speculative_sampling_batched",
    "ignored_seeds",
    "mixed_batch_empty_like",
    "placeholder_accepted",
    "shared_stream",
    "trtllm_half_when_batched",
    "vllm_flat",
    "vllm_flat_row_offset",
    "vllm_rejection",
]


def _drafted(ids: torch.Tensor, i: int) -> int:
    """The number of real drafts of row ``i`` (the ids before the first -1)."""
    n = 0
    for j in range(ids.shape[1]):
        if int(ids[i, j]) < 0:
            break
        n += 1
    return n


def _sample(weights: torch.Tensor, generator: Any) -> torch.Tensor:
    return torch.multinomial(weights / weights.sum(), 1, generator=generator)[0]


def vllm_rejection(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                   target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """vLLM's native rejection sampler: one request at a time, each with its own
    generator (``None``: the global one), a uniform per drafted position, the
    residual ``max(p - q, 0)`` on rejection, the bonus from the next target row."""
    batch, k = draft_token_ids.shape
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for i in range(batch):
        g = generators[i]
        n = _drafted(draft_token_ids, i)
        u = torch.rand(k, generator=g)
        for j in range(n):
            x = int(draft_token_ids[i, j])
            if u[j] * draft_probs[i, j, x] < target_probs[i, j, x]:
                out[i, j] = x
                continue
            resid = torch.clamp(target_probs[i, j] - draft_probs[i, j], min=0)
            out[i, j] = _sample(resid, g)
            break
        else:
            out[i, n] = _sample(target_probs[i, n], g)
    return out


def flashinfer_chain(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                     target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """FlashInfer's ``chain_speculative_sampling`` in torch: the whole batch's uniforms
    in one tensor (each row's from its generator), acceptance as a cumulative product
    over the positions, the emitted count per row, then the correction token."""
    batch, k = draft_token_ids.shape
    u = torch.stack([torch.rand(k, generator=g) for g in generators])
    valid = draft_token_ids >= 0
    ids = draft_token_ids.clamp(min=0)
    p_x = target_probs[:, :k].gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    q_x = draft_probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    accept = (u * q_x < p_x) & valid
    accepted = accept.long().cumprod(dim=1).sum(dim=1)
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for i in range(batch):
        m = int(accepted[i])
        n = int(valid[i].long().sum())
        out[i, :m] = draft_token_ids[i, :m]
        if m < n:
            resid = torch.clamp(target_probs[i, m] - draft_probs[i, m], min=0)
        else:
            resid = target_probs[i, m]
        out[i, m] = _sample(resid, generators[i])
    return out


def _block_row(ids: torch.Tensor, q: torch.Tensor, p: torch.Tensor, n: int, g: Any,
               shared: bool) -> list[Any]:
    """Block verification (Sun et al., ICLR 2025) of one request, as vLLM #40819 writes
    it: path weights w_i = min(1, w_{i-1} p_i(x_i) / q_i(x_i)); from the deepest
    position back, position i is kept with probability h_i = s_i / (s_i + 1 - w_i)
    (h_n = w_n), s_i the mass of max(w_i p_{i+1} - q_{i+1}, 0).  ``shared``: one
    uniform per request for every position (the backport's bug), not one each."""
    weights = [torch.ones(())]
    for i in range(n):
        x = int(ids[i])
        weights.append(torch.clamp(weights[-1] * p[i, x] / q[i, x], max=1))
    u = torch.rand(n + 1, generator=g)
    for i in range(n, 0, -1):
        if i == n:
            h = weights[n]
        else:
            resid = torch.clamp(weights[i] * p[i] - q[i], min=0)
            s = resid.sum()
            h = s / (s + 1 - weights[i])
        if (u[0] if shared else u[i]) < h:
            if i == n:
                return [*ids[:n].tolist(), _sample(p[n], g)]
            resid = torch.clamp(weights[i] * p[i] - q[i], min=0)
            return [*ids[:i].tolist(), _sample(resid, g)]
    if n == 0:
        return [_sample(p[0], g)]
    return [_sample(torch.clamp(p[0] - q[0], min=0), g)]


def _block(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
           target_probs: torch.Tensor, generators: list[Any], shared: bool) -> torch.Tensor:
    batch, k = draft_token_ids.shape
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for i in range(batch):
        n = _drafted(draft_token_ids, i)
        tokens = _block_row(draft_token_ids[i], draft_probs[i], target_probs[i], n,
                            generators[i], shared)
        for j, x in enumerate(tokens):
            out[i, j] = x
    return out


def block_verification(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                       target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """Block verification with an independent uniform per position (lossless)."""
    return _block(draft_token_ids, draft_probs, target_probs, generators, shared=False)


def block_verification_shared_uniform(draft_token_ids: torch.Tensor,
                                      draft_probs: torch.Tensor, target_probs: torch.Tensor,
                                      generators: list[Any]) -> torch.Tensor:
    """Block verification with one uniform per request (the backport of vLLM #40819):
    exact at one draft, biased from two."""
    return _block(draft_token_ids, draft_probs, target_probs, generators, shared=True)


def mixed_batch_empty_like(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                           target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """vLLM v0's recovered-token sampling: exponential noise in ``torch.empty_like``,
    filled row by row for the seeded requests, and for the whole batch only when no
    request is seeded; an unseeded row of a mixed batch reads uninitialised memory."""
    batch, k = draft_token_ids.shape
    noise = torch.empty_like(target_probs)
    if all(g is None for g in generators):
        noise.exponential_()
    else:
        for i, g in enumerate(generators):
            if g is not None:
                noise[i].exponential_(generator=g)
    u = torch.rand(batch, k)
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for i in range(batch):
        n = _drafted(draft_token_ids, i)
        for j in range(n + 1):
            if j < n:
                x = int(draft_token_ids[i, j])
                if u[i, j] * draft_probs[i, j, x] < target_probs[i, j, x]:
                    out[i, j] = x
                    continue
                weights = torch.clamp(target_probs[i, j] - draft_probs[i, j], min=0)
            else:
                weights = target_probs[i, j]
            out[i, j] = torch.argmax(weights / noise[i, j])
            break
    return out


def placeholder_accepted(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                         target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """Acceptance computed on every position, padding included (vLLM #46533, FlashInfer
    #879): the ``-1`` placeholder is read as a token id (here the last column, as
    Python indexing wraps) and can be accepted."""
    batch, k = draft_token_ids.shape
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for i in range(batch):
        g = generators[i]
        u = torch.rand(k, generator=g)
        for j in range(k + 1):
            if j == k:
                out[i, j] = _sample(target_probs[i, j], g)
                break
            x = int(draft_token_ids[i, j])
            if u[j] * draft_probs[i, j, x] < target_probs[i, j, x]:
                out[i, j] = x
                continue
            out[i, j] = _sample(torch.clamp(target_probs[i, j] - draft_probs[i, j], min=0), g)
            break
    return out


def shared_stream(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                  target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """Unseeded requests drawing from one stream state (TensorRT-LLM #19487): the
    uniforms of every unseeded row are the same draws.  Each row's own law is right."""
    batch, k = draft_token_ids.shape
    common = torch.rand(k)
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for i in range(batch):
        g = generators[i]
        u = common if g is None else torch.rand(k, generator=g)
        n = _drafted(draft_token_ids, i)
        for j in range(n + 1):
            if j < n:
                x = int(draft_token_ids[i, j])
                if u[j] * draft_probs[i, j, x] < target_probs[i, j, x]:
                    out[i, j] = x
                    continue
                weights = torch.clamp(target_probs[i, j] - draft_probs[i, j], min=0)
            else:
                weights = target_probs[i, j]
            out[i, j] = _sample(weights, g)
            break
    return out


def ignored_seeds(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                  target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """Per-request generators ignored under speculative decoding (vLLM #6038): every
    row draws from the global generator, so a seed fixes nothing."""
    return vllm_rejection(draft_token_ids, draft_probs, target_probs,
                          [None] * len(generators))


def trtllm_half_when_batched(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                             target_probs: torch.Tensor, generators: list[Any]
                             ) -> torch.Tensor:
    """A batched fast path that computes in float16 when more than one request is in the
    batch (the batch-size dependence of vLLM RFC #54506, MLX-LM #1423): a row's law
    depends on B."""
    if draft_token_ids.shape[0] > 1:
        draft_probs = draft_probs.half().float()
        target_probs = target_probs.half().float()
    return vllm_rejection(draft_token_ids, draft_probs, target_probs, generators)



def _hf(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
        generators: list[Any], fewest: bool) -> torch.Tensor:
    """transformers' ``_speculative_sampling`` over a batch: ratios, a uniform per
    position (from the request's generator), ``n_matches`` from the cumulative sum of the
    rejections, then the residual or the bonus.  ``fewest``: every row cut to the batch's
    fewest matches (a padded batch kept rectangular), a row that had accepted there
    taking a fresh target token."""
    batch, k = draft_token_ids.shape
    valid = draft_token_ids >= 0
    ids = draft_token_ids.clamp(min=0).unsqueeze(-1)
    p_i = target_probs[:, :k].gather(-1, ids).squeeze(-1)
    q_i = draft_probs.gather(-1, ids).squeeze(-1)
    probability_ratio = p_i / q_i
    r_i = torch.stack([torch.rand(k, generator=g) for g in generators])
    is_accepted = (r_i <= probability_ratio) & valid
    n_matches = ((~is_accepted).cumsum(dim=-1) < 1).sum(dim=-1)
    if fewest:
        n_matches = n_matches.min().expand(batch)
    drafted = valid.sum(dim=-1)
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for b in range(batch):
        m = int(n_matches[b])
        out[b, :m] = draft_token_ids[b, :m]
        if m < int(drafted[b]) and not bool(is_accepted[b, m]):
            weights = torch.clamp(target_probs[b, m] - draft_probs[b, m], min=0)
        else:
            weights = target_probs[b, m]
        out[b, m] = _sample(weights, generators[b])
    return out


def hf_batched(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
               target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """transformers' ``_speculative_sampling`` loop written for a batch, each request's
    draws from its generator: each row keeps its own number of matches."""
    return _hf(draft_token_ids, draft_probs, target_probs, generators, fewest=False)


def hf_batched_fewest_matches(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                              target_probs: torch.Tensor, generators: list[Any]
                              ) -> torch.Tensor:
    """The same loop keeping the batch rectangular: every row is cut to the fewest matches
    of the batch, and a row that had accepted its draft there emits a fresh target token.
    A row's law then depends on its neighbours (row law, independence)."""
    return _hf(draft_token_ids, draft_probs, target_probs, generators, fewest=True)


def _flat(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
          target_probs: torch.Tensor, generators: list[Any], row_offset: bool
          ) -> torch.Tensor:
    """vLLM v1's flattened layout: the drafted tokens of every row end to end, found by
    ``cu_num_draft_tokens``; one uniform per drafted token from the global generator, then
    the seeded rows' slices drawn again from their own generators (so a mixed batch of
    seeded and unseeded rows is well defined); the recovered token from the request's
    generator.  ``row_offset``: a row's slice starts at its row index instead of its token
    offset."""
    batch, k = draft_token_ids.shape
    num_draft_tokens = (draft_token_ids >= 0).sum(dim=1)
    cu_num_draft_tokens = num_draft_tokens.cumsum(dim=0)
    uniform_probs = torch.rand(int(cu_num_draft_tokens[-1]) + batch)
    for i, g in enumerate(generators):
        n = int(num_draft_tokens[i])
        if g is not None and n:
            start = int(cu_num_draft_tokens[i]) - n
            uniform_probs[start:start + n] = torch.rand(n, generator=g)
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for i in range(batch):
        n = int(num_draft_tokens[i])
        start = i if row_offset else int(cu_num_draft_tokens[i]) - n
        for j in range(n + 1):
            if j < n:
                x = int(draft_token_ids[i, j])
                if uniform_probs[start + j] * draft_probs[i, j, x] < target_probs[i, j, x]:
                    out[i, j] = x
                    continue
                weights = torch.clamp(target_probs[i, j] - draft_probs[i, j], min=0)
            else:
                weights = target_probs[i, j]
            out[i, j] = _sample(weights, generators[i])
            break
    return out


def vllm_flat(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
              target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """vLLM v1's rejection sampler in its flattened layout, seeded and unseeded rows mixed
    (the fix of vLLM v0's mixed batch: uniforms for every row, then the seeded rows')."""
    return _flat(draft_token_ids, draft_probs, target_probs, generators, row_offset=False)


def vllm_flat_row_offset(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                         target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """The flattened layout indexed by the row instead of the token offset: row ``i``
    reads the uniforms from ``i``, so from two drafts on it shares its neighbour's stream
    (each row's own law is right; the rows are dependent)."""
    return _flat(draft_token_ids, draft_probs, target_probs, generators, row_offset=True)


def _compacted(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
               target_probs: torch.Tensor, generators: list[Any], mapped: bool
               ) -> torch.Tensor:
    """Rows with no draft are decoded apart; the others are gathered into a smaller batch
    (``index_select``) and verified there.  ``mapped``: the gathered batch's generators
    follow its rows (``generators[index[r]]``); else they are taken by the gathered row
    number, so a request can draw from another's generator."""
    batch, k = draft_token_ids.shape
    drafted = (draft_token_ids >= 0).sum(dim=1)
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    index = [i for i in range(batch) if int(drafted[i]) > 0]
    for i in range(batch):
        if int(drafted[i]) == 0:
            out[i, 0] = _sample(target_probs[i, 0], generators[i])
    if not index:
        return out
    rows = torch.tensor(index)
    gens = [generators[i] if mapped else generators[r] for r, i in enumerate(index)]
    verified = vllm_rejection(draft_token_ids.index_select(0, rows),
                              draft_probs.index_select(0, rows),
                              target_probs.index_select(0, rows), gens)
    for r, i in enumerate(index):
        out[i] = verified[r]
    return out


def compacted_rows(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                   target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """Per-request generators through a compacted batch, mapped back correctly."""
    return _compacted(draft_token_ids, draft_probs, target_probs, generators, mapped=True)


def compacted_generators(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                         target_probs: torch.Tensor, generators: list[Any]) -> torch.Tensor:
    """Per-request generators indexed by the compacted row number: next to a request with
    no draft, a seeded request draws from its neighbour's generator (seeds)."""
    return _compacted(draft_token_ids, draft_probs, target_probs, generators, mapped=False)


def hf_speculative_sampling_batched(candidate_input_ids: torch.Tensor,
                                    candidate_logits: torch.Tensor, candidate_length: int,
                                    new_logits: torch.Tensor, is_done_candidate: bool
                                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' ``_speculative_sampling`` with a batch dimension (``--signature hf
    --batched``): each row's ratios, uniforms and ``n_matches`` of its own, then its
    residual or bonus token.  The test is strict, ``r_i < p_i / q_i`` (transformers'
    ``<=`` accepts a draft with ``p = 0`` when ``torch.rand`` returns 0, with probability
    2^-24 in float32).  Returns ``(valid_tokens [B, k + 1], n_matches [B])``; row
    ``b``'s tokens are ``valid_tokens[b, :n_matches[b] + 1]``."""
    return _hf_logits(candidate_input_ids, candidate_logits, candidate_length, new_logits,
                      is_done_candidate, whole_batch=False)


def hf_speculative_sampling_batch_sum(candidate_input_ids: torch.Tensor,
                                      candidate_logits: torch.Tensor, candidate_length: int,
                                      new_logits: torch.Tensor, is_done_candidate: bool
                                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """The same port keeping transformers' batch-1 ``.sum()``: ``n_matches`` counts the
    accepted drafts of the whole batch, so a row's tokens depend on its neighbours'."""
    return _hf_logits(candidate_input_ids, candidate_logits, candidate_length, new_logits,
                      is_done_candidate, whole_batch=True)


def _hf_logits(candidate_input_ids: torch.Tensor, candidate_logits: torch.Tensor,
               candidate_length: int, new_logits: torch.Tensor, is_done_candidate: bool,
               *, whole_batch: bool) -> tuple[torch.Tensor, torch.Tensor]:
    new_ids = candidate_input_ids[:, -candidate_length:]
    q = candidate_logits.softmax(dim=-1)
    p = new_logits.softmax(dim=-1)
    q_i = q[:, :candidate_length].gather(-1, new_ids.unsqueeze(-1)).squeeze(-1)
    p_i = p[:, :candidate_length].gather(-1, new_ids.unsqueeze(-1)).squeeze(-1)
    r_i = torch.rand_like(p_i)
    is_accepted = r_i < p_i / q_i
    rejected = (~is_accepted).cumsum(dim=-1) < 1
    n_matches = rejected.sum() if whole_batch else rejected.sum(dim=-1)
    batch = new_ids.shape[0]
    counts = n_matches.expand(batch) if whole_batch else n_matches
    valid = torch.zeros((batch, candidate_length + 1), dtype=torch.long)
    for b in range(batch):
        n = min(int(counts[b]), candidate_length)
        if is_done_candidate and n == candidate_length:
            n -= 1
        valid[b, :n] = new_ids[b, :n]
        if n < candidate_length:
            weights = torch.clamp(p[b, n] - q[b, n], min=0)
            weights = weights / weights.sum()
        else:
            weights = p[b, n]
        valid[b, n] = torch.multinomial(weights, 1)[0]
    return valid, n_matches


def chain_global(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                 target_probs: torch.Tensor) -> torch.Tensor:
    """vLLM v0's chain shape without generators (``--signature chain --batched``): every
    row drafts ``k`` tokens, uniforms ``[B, k]`` from the global generator, the first
    rejection's residual or the bonus, ``-1`` after."""
    return _chain(draft_token_ids, draft_probs, target_probs, shared=False)


def chain_global_shared_row(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                            target_probs: torch.Tensor) -> torch.Tensor:
    """The same with one row of uniforms broadcast over the batch (``torch.rand(1, k)
    .expand``): each row's law is right, the rows are dependent."""
    return _chain(draft_token_ids, draft_probs, target_probs, shared=True)


def _chain(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
           target_probs: torch.Tensor, *, shared: bool) -> torch.Tensor:
    batch, k = draft_token_ids.shape
    u = torch.rand(1, k).expand(batch, k) if shared else torch.rand(batch, k)
    ids = draft_token_ids.unsqueeze(-1)
    p_tok = target_probs[:, :k].gather(-1, ids).squeeze(-1)
    q_tok = draft_probs.gather(-1, ids).squeeze(-1)
    accepted = torch.cumprod((u * q_tok < p_tok).long(), dim=1).sum(dim=1)
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    for b in range(batch):
        a = int(accepted[b])
        out[b, :a] = draft_token_ids[b, :a]
        if a < k:
            weights = torch.clamp(target_probs[b, a] - draft_probs[b, a], min=0)
        else:
            weights = target_probs[b, a]
        out[b, a] = _sample(weights, None)
    return out
