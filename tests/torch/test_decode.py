"""The ``decode`` signature: whole torch generation loops with exact toy LMs."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import torch

from specexact.steps.models import TableModel, random_model_pair
from specexact.torch.decode import check_torch_decode, torch_decode_distribution

F = Fraction


def _probs(model: Any, ids: torch.Tensor) -> torch.Tensor:
    out = model(ids)
    logits = out.logits if hasattr(out, "logits") else out
    return torch.softmax(logits[:, -1, :], dim=-1)


def speculative_loop(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
                     max_new_tokens: int, gamma: int = 2, fresh_fallback: bool = True
                     ) -> torch.Tensor:
    """An assisted-generation loop: gamma drafts, one target pass, textbook verification."""
    start = input_ids.shape[1]
    while input_ids.shape[1] < start + max_new_tokens:
        cur = input_ids
        qs = []
        for _ in range(gamma):
            q = _probs(draft_model, cur)
            x = torch.multinomial(q, 1)
            qs.append(q[0])
            cur = torch.cat([cur, x], dim=1)
        out = target_model(cur)
        logits = out.logits if hasattr(out, "logits") else out
        p = torch.softmax(logits[0, -gamma - 1:, :], dim=-1)
        n = input_ids.shape[1]
        accepted = 0
        for i in range(gamma):
            x = cur[0, n + i]
            if torch.rand(1) < p[i, x] / qs[i][x]:
                accepted += 1
            else:
                break
        if accepted == gamma:
            nxt = torch.multinomial(p[gamma], 1)
        else:
            base = p[accepted] if fresh_fallback else qs[accepted]
            r = torch.clamp(base - qs[accepted], min=0) if fresh_fallback else p[accepted]
            nxt = torch.multinomial(r / r.sum(), 1)
        input_ids = torch.cat([cur[:, : n + accepted], nxt.view(1, 1)], dim=1)
    return input_ids


def naive_loop(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
               max_new_tokens: int) -> torch.Tensor:
    """Bug: resample from p after a rejection."""
    return speculative_loop(input_ids, draft_model, target_model, max_new_tokens,
                            fresh_fallback=False)


@pytest.mark.parametrize("output", ["tensor", "object"])
def test_speculative_loop_preserves_the_target(output: str) -> None:
    target, draft = random_model_pair(2, seed=3)
    comparison = check_torch_decode(speculative_loop, target, draft, max_new_tokens=3,
                                    output=output)
    assert comparison.equal, comparison.difference


def test_naive_loop_fails() -> None:
    target = TableModel({}, default=[F(1, 3), F(2, 3)])
    draft = TableModel({}, default=[F(2, 3), F(1, 3)])
    comparison = check_torch_decode(naive_loop, target, draft, max_new_tokens=1)
    assert not comparison.equal
    law = torch_decode_distribution(naive_loop, target, draft, max_new_tokens=1)
    # min(p, q) + (1 - A) p with A = 2/3
    assert law[(0,)] == F(1, 3) + F(1, 3) * F(1, 3)


def cached_loop(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
                max_new_tokens: int, gamma: int = 2, rollback: bool = True) -> torch.Tensor:
    """A loop that keeps the target's context in a cache of ids (a stand-in for a KV cache
    that is extended with the drafts and must be cropped back after a rejection)."""
    start = input_ids.shape[1]
    cache = input_ids.clone()  # what the target "has seen"
    while input_ids.shape[1] < start + max_new_tokens:
        n = input_ids.shape[1]
        cur, qs = input_ids, []
        for _ in range(gamma):
            q = _probs(draft_model, cur)
            x = torch.multinomial(q, 1)
            qs.append(q[0])
            cur = torch.cat([cur, x], dim=1)
        cache = torch.cat([cache, cur[:, n:]], dim=1)  # the target is fed the drafts
        out = target_model(cache)
        logits = out.logits if hasattr(out, "logits") else out
        p = torch.softmax(logits[0, -gamma - 1:, :], dim=-1)
        accepted = 0
        for i in range(gamma):
            x = cur[0, n + i]
            if torch.rand(1) < p[i, x] / qs[i][x]:
                accepted += 1
            else:
                break
        if accepted == gamma:
            nxt = torch.multinomial(p[gamma], 1)
        else:
            r = torch.clamp(p[accepted] - qs[accepted], min=0)
            nxt = torch.multinomial(r / r.sum(), 1)
        input_ids = torch.cat([cur[:, : n + accepted], nxt.view(1, 1)], dim=1)
        # rolled back: the rejected drafts are cropped; not: they stay in the cache
        cache = input_ids if rollback else torch.cat([cache, nxt.view(1, 1)], dim=1)
    return input_ids


def stale_cache_loop(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
                     max_new_tokens: int) -> torch.Tensor:
    """Bug: the cache keeps the rejected drafts (never rolled back)."""
    return cached_loop(input_ids, draft_model, target_model, max_new_tokens, rollback=False)


def test_a_rolled_back_cache_preserves_the_target() -> None:
    for seed in (0, 1):
        target, draft = random_model_pair(2, seed=seed)
        comparison = check_torch_decode(cached_loop, target, draft, max_new_tokens=3)
        assert comparison.equal, comparison.difference


def test_a_cache_that_is_not_rolled_back_is_caught() -> None:
    # The target's next row depends on the last token: a stale context shows.
    target = TableModel({(0, 0): [F(1, 4), F(3, 4)], (0, 1): [F(3, 4), F(1, 4)]},
                        default=[F(1, 2), F(1, 2)])
    draft = TableModel({}, default=[F(2, 3), F(1, 3)])
    comparison = check_torch_decode(stale_cache_loop, target, draft, max_new_tokens=3)
    assert not comparison.equal
