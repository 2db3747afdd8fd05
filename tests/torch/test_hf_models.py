"""Decode loops written for transformers' models run on the exact toy models with no
adapter: ``.logits``, ``past_key_values`` (cropped or sliced), ``.config``, ``.device``;
long enumerations report progress, and a stopped one says what it had reached (issue 22)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import torch

from specexact.errors import BudgetExceeded, SamplerRaised
from specexact.exact.tree import Budget
from specexact.steps.models import TableModel, random_model_pair
from specexact.torch import decode as decode_module
from specexact.torch.decode import check_torch_decode, torch_decode_distribution

F = Fraction


def _trim(cache: Any, keep: int, how: str) -> Any:
    if how == "crop":
        cache.crop(keep)  # DynamicCache.crop
        return cache
    # the legacy tuple format, trimmed along the sequence dimension
    return [(k[:, :, :keep, :], v[:, :, :keep, :]) for k, v in cache]


def hf_loop(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
            max_new_tokens: int, gamma: int = 2, trim: str = "crop",
            rollback: bool = True) -> torch.Tensor:
    """Assisted generation as written for transformers' models, KV caches included."""
    device = target_model.device
    vocab = target_model.config.vocab_size
    out = input_ids.to(device)
    start = out.shape[1]
    d_cache = t_cache = None
    while out.shape[1] < start + max_new_tokens:
        n = out.shape[1]
        qs = torch.zeros((gamma, vocab), device=device)
        cur = out
        for k in range(gamma):
            if d_cache is None:
                o = draft_model(cur, use_cache=True)
            else:
                seen = d_cache[0][0].shape[2]
                o = draft_model(cur[:, seen:], past_key_values=d_cache, use_cache=True)
            d_cache = o.past_key_values
            q = torch.softmax(o.logits[:, -1, :], dim=-1)
            x = torch.multinomial(q, num_samples=1)
            qs[k] = q[0]
            cur = torch.cat([cur, x], dim=1)
        if t_cache is None:
            o = target_model(cur)
        else:
            o = target_model(cur[:, t_cache[0][0].shape[2]:], past_key_values=t_cache)
        t_cache = o.past_key_values
        p = torch.softmax(o.logits[0, -gamma - 1:, :], dim=-1)
        accepted = 0
        for i in range(gamma):
            x = cur[0, n + i]
            if torch.rand(1, device=device) < p[i, x] / qs[i, x]:
                accepted += 1
            else:
                break
        if accepted == gamma:
            nxt = torch.multinomial(p[gamma], 1)
        else:
            r = torch.clamp(p[accepted] - qs[accepted], min=0)
            nxt = torch.multinomial(r / r.sum(), 1)
        out = torch.cat([cur[:, : n + accepted], nxt.view(1, 1)], dim=1)
        keep = out.shape[1] - 1  # every emitted token but the newest has been processed
        d_cache = _trim(d_cache, keep, trim)
        if rollback:
            t_cache = _trim(t_cache, keep, trim)
    return out


def hf_loop_sliced(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
                   max_new_tokens: int) -> torch.Tensor:
    return hf_loop(input_ids, draft_model, target_model, max_new_tokens, trim="slice")


def hf_loop_stale(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
                  max_new_tokens: int) -> torch.Tensor:
    """Bug: the target's cache keeps the rejected drafts."""
    return hf_loop(input_ids, draft_model, target_model, max_new_tokens, rollback=False)


@pytest.mark.parametrize("loop", [hf_loop, hf_loop_sliced])
def test_an_hf_style_loop_with_kv_caches_needs_no_adapter(loop: Any) -> None:
    for seed in (0, 1):
        target, draft = random_model_pair(2, seed=seed)
        comparison = check_torch_decode(loop, target, draft, max_new_tokens=3)
        assert comparison.equal, comparison.difference


def test_a_target_cache_not_rolled_back_is_caught() -> None:
    target = TableModel({(0, 0): [F(1, 4), F(3, 4)], (0, 1): [F(3, 4), F(1, 4)]},
                        default=[F(1, 2), F(1, 2)])
    draft = TableModel({}, default=[F(2, 3), F(1, 3)])
    # After a rejection the stale cache holds more positions than the context, so the
    # next target pass returns too few rows and the loop indexes past them.
    with pytest.raises(SamplerRaised, match=r"IndexError.*test_hf_models\.py"):
        check_torch_decode(hf_loop_stale, target, draft, max_new_tokens=3)


def test_the_model_answers_as_a_transformers_model() -> None:
    seen: list[Any] = []

    def probe(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
              max_new_tokens: int) -> torch.Tensor:
        out = target_model(input_ids)
        cache = out.past_key_values
        seen.extend([target_model.config.vocab_size, str(target_model.device),
                     target_model.eval() is target_model, tuple(out.logits.shape),
                     cache.get_seq_length(), tuple(out[0].shape)])
        return torch.cat([input_ids, torch.multinomial(out.logits[0, -1].exp(), 1)[None]], 1)

    target = TableModel({}, default=[F(1, 4), F(1, 4), F(1, 2)])
    law = torch_decode_distribution(probe, target, target, max_new_tokens=1, prompt=(0, 1))
    assert dict(law.items()) == {(0,): F(1, 4), (1,): F(1, 4), (2,): F(1, 2)}
    assert seen[:6] == [3, "cpu", True, (1, 2, 3), 2, (2, 3)]


def test_use_cache_false_returns_no_cache_as_transformers_does() -> None:
    def no_cache_loop(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
                      max_new_tokens: int) -> torch.Tensor:
        cache = None
        for _ in range(max_new_tokens):
            # romsto's calling pattern: the whole context every time, and the cache the
            # previous call returned, which use_cache=False makes None
            out = target_model(input_ids=input_ids, past_key_values=cache, use_cache=False)
            cache = out.past_key_values
            nxt = torch.multinomial(torch.softmax(out.logits[0, -1], dim=-1), 1)
            input_ids = torch.cat([input_ids, nxt[None]], dim=1)
        return input_ids

    target, _ = random_model_pair(2, seed=0)
    assert check_torch_decode(no_cache_loop, target, target, max_new_tokens=2).equal


def test_progress_goes_to_stderr_and_a_stop_says_what_was_reached(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(decode_module, "PROGRESS_AFTER", 0.0)
    target, draft = random_model_pair(2, seed=0)
    with pytest.raises(BudgetExceeded):
        torch_decode_distribution(hf_loop, target, draft, max_new_tokens=3,
                                  budget=Budget(max_executions=5))
    err = capsys.readouterr().err
    assert "specexact: decode loop hf_loop:" in err
    assert "executions in" in err
    assert "specexact: stopped:" in err and "outputs reached so far" in err


def test_a_decode_audit_stopped_inside_the_loop_says_what_it_had_reached(
        capsys: pytest.CaptureFixture[str]) -> None:
    from specexact.steps.verdict import check_step
    from specexact.torch.steps import torch_step

    calls = {"n": 0}

    def stopped_loop(input_ids: torch.Tensor, draft_model: Any, target_model: Any,
                     max_new_tokens: int) -> torch.Tensor:
        calls["n"] += 1
        if calls["n"] == 4:  # Ctrl-C while the fourth execution runs the loop
            raise KeyboardInterrupt
        return hf_loop(input_ids, draft_model, target_model, max_new_tokens)

    step = torch_step(stopped_loop, signature="decode", gamma=2, max_new_tokens=2,
                      uniform="continuous")
    target, draft = random_model_pair(2, seed=0)
    with pytest.raises(KeyboardInterrupt):
        check_step(step, target, draft, 2)
    err = capsys.readouterr().err
    assert err.count("specexact: stopped:") == 1
    assert "decode loop stopped_loop: 3 executions" in err and "outputs reached so far" in err
