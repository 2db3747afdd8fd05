"""Ops engine code uses: scripted helpers, layout queries, isin, empty-list indices,
per-request generators, and what an unsupported op or a crash says (issue 22)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
import torch

from specexact.errors import SamplerRaised, UnsupportedOperation
from specexact.steps.models import ContextFreeModel
from specexact.steps.verdict import check_step
from specexact.torch import check_torch_sampler, torch_output_distribution, torch_step

F = Fraction
P = ["1/2", "1/4", "1/4"]
Q = ["1/4", "1/4", "1/2"]
HERE = __file__.rsplit("/", 1)[-1]


@torch.jit.script
def _scripted_race(probs: torch.Tensor, num_samples: int) -> torch.Tensor:
    # vLLM v0's _multinomial shape: exponentials from empty_like, divided in place.
    q = torch.empty_like(probs).exponential_(1.0)
    return probs.div_(q).argmax(dim=-1).view(-1, num_samples)


def _textbook_with_scripted_helper(p: torch.Tensor, q: torch.Tensor) -> Any:
    x = torch.multinomial(q, 1)
    if bool(torch.rand(1) < p[x] / q[x]):
        return x
    r = torch.clamp(p - q, min=0.0)
    return _scripted_race((r / r.sum()).unsqueeze(0), 1)


def test_a_scripted_helper_runs_as_python_without_pytorch_jit() -> None:
    verdict = check_torch_sampler(_textbook_with_scripted_helper, P, Q)
    assert verdict.passed, verdict.format()
    # outside the exact mode the helper is TorchScript again
    assert type(_scripted_race).__call__ is torch._C.ScriptFunction.__call__
    assert _scripted_race(torch.tensor([[0.0, 1.0]]), 1).tolist() == [[1]]


def _facts(fn: Callable[[torch.Tensor], Any]) -> Any:
    """What ``fn`` answers on the exact p tensor (it runs once: no randomness)."""
    seen: list[Any] = []

    def sampler(p: torch.Tensor, q: torch.Tensor) -> int:
        seen.append(fn(p))
        return 0

    torch_output_distribution(sampler, ["1/8"] * 8, ["1/8"] * 8)
    return seen[0]


VIEWS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "vector": lambda p: p,
    "matrix": lambda p: p.reshape(2, 4),
    "transposed": lambda p: p.reshape(2, 4).t(),
    "column": lambda p: p.reshape(2, 4)[:, 1],
    "row": lambda p: p.reshape(2, 4)[1],
    "strided": lambda p: p[1::2],
    "expanded": lambda p: p[:2].reshape(2, 1).expand(2, 3),
    "one_wide": lambda p: p.reshape(1, 8).t(),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_layout_queries_answer_as_real_torch(view: str) -> None:
    def layout(t: torch.Tensor) -> Any:
        return (t.is_contiguous(), t.stride(), t.stride(0), t.storage_offset(),
                t.element_size(), t.nbytes, t.contiguous().is_contiguous())

    make = VIEWS[view]
    assert _facts(lambda p: layout(make(p))) == layout(make(torch.full((8,), 0.125)))


def test_data_ptr_and_storage_identify_shared_memory() -> None:
    def pointers(p: torch.Tensor) -> Any:
        view, copy = p[2:], p.clone()
        return (view.untyped_storage().data_ptr() == p.untyped_storage().data_ptr(),
                copy.data_ptr() == p.data_ptr(), p.data_ptr() != 0,
                p.untyped_storage().nbytes(), p.is_pinned())

    assert _facts(pointers) == pointers(torch.full((8,), 0.125))


def test_isin_matches_real_torch() -> None:
    def membership(p: torch.Tensor) -> Any:
        ids = torch.tensor([3, 1, 4, 1, 5])
        stop = torch.tensor([1, 5])
        return (torch.isin(ids, stop).tolist(), torch.isin(ids, stop, invert=True).tolist(),
                torch.isin(ids, 4).tolist(), torch.isin(p, 0.125).all().item())

    assert _facts(membership) == membership(torch.full((8,), 0.125))


def test_shape_aliases_match_real_torch() -> None:
    def aliases(p: torch.Tensor) -> Any:
        grid = torch.zeros(2, 4)
        return (p.view_as(grid).tolist(), torch.broadcast_to(p[:1], (2, 3)).tolist(),
                p.pin_memory().tolist()[:2] if p.is_pinned() else p.tolist()[:2])

    assert _facts(aliases) == aliases(torch.full((8,), 0.125))


def test_isin_on_a_drawn_token() -> None:
    def stop_on_two(p: torch.Tensor, q: torch.Tensor) -> Any:
        x = torch.multinomial(p, 1)
        return 9 if bool(torch.isin(x, torch.tensor([2, 7]))) else x

    law = torch_output_distribution(stop_on_two, P, Q)
    assert dict(law.items()) == {0: F(1, 2), 1: F(1, 4), 9: F(1, 4)}


def test_indexing_with_an_empty_list_is_an_empty_selection() -> None:
    def empty(p: torch.Tensor) -> Any:
        rows = p.reshape(2, 4)
        return (tuple(p[[]].shape), tuple(rows[[]].shape), tuple(rows[[], 1].shape),
                p[[0, 2]].tolist(), p[[True] * 4 + [False] * 4].tolist())

    assert _facts(empty) == empty(torch.full((8,), 0.125))


def _race_per_row(p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> Any:
    """Two requests in one batch: row 0 seeded (its own generator), row 1 not (None)."""
    generators: list[torch.Generator | None] = [generator, None]
    rows = torch.stack([p, q])
    noise = torch.empty_like(rows)
    for i, gen in enumerate(generators):
        noise[i].exponential_(1.0, generator=gen)
    picks = (rows / noise).argmax(dim=-1)
    return picks[0] * 3 + picks[1]


def test_per_request_generators_some_none_are_independent_streams() -> None:
    law = torch_output_distribution(_race_per_row, P, Q, semantics="exact")  # ideal races
    p, q = [F(x) for x in P], [F(x) for x in Q]
    assert dict(law.items()) == {i * 3 + j: p[i] * q[j] for i in range(3) for j in range(3)}


def chain_with_request_generators(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor,
                                  target_probs: torch.Tensor,
                                  generators: list[torch.Generator]) -> torch.Tensor:
    """A chain verifier drawing every uniform and residual from its request's generator."""
    gen = generators[0]
    k = draft_token_ids.shape[1]
    out = torch.full((1, k + 1), -1, dtype=torch.long)
    for i in range(k):
        x = draft_token_ids[0, i]
        if torch.rand(1, generator=gen) < target_probs[0, i, x] / draft_probs[0, i, x]:
            out[0, i] = x
        else:
            r = torch.clamp(target_probs[0, i] - draft_probs[0, i], min=0)
            out[0, i] = torch.multinomial(r, 1, generator=gen)[0]
            return out
    out[0, k] = torch.multinomial(target_probs[0, k], 1, generator=gen)[0]
    return out


def test_chain_signature_hands_per_request_generators() -> None:
    target = ContextFreeModel([F(1, 3), F(2, 3)])
    draft = ContextFreeModel([F(2, 3), F(1, 3)])
    step = torch_step(chain_with_request_generators, signature="chain", gamma=2,
                      uniform="continuous")
    assert check_step(step, target, draft, 2).passed


def test_unsupported_op_names_the_op_the_line_and_a_spelling() -> None:
    def entropy_weighted(p: torch.Tensor, q: torch.Tensor) -> Any:
        return torch.special.entr(p).argmax()  # the line the message names

    with pytest.raises(UnsupportedOperation) as info:
        torch_output_distribution(entropy_weighted, P, Q)
    text = str(info.value)
    line = entropy_weighted.__code__.co_firstlineno + 1
    assert "special_entr" in text
    assert f"{HERE}:{line}" in text
    assert "-(p * torch.log(p))" in text


def test_an_exception_in_user_code_names_its_type_and_line() -> None:
    def bare(p: torch.Tensor, q: torch.Tensor) -> Any:
        raise RuntimeError  # the line the message names

    with pytest.raises(SamplerRaised) as info:
        torch_output_distribution(bare, P, Q)
    line = bare.__code__.co_firstlineno + 1
    assert f"RuntimeError (no message) (at {__file__}:{line})" in str(info.value)


def test_an_error_torch_raises_is_placed_at_the_users_call() -> None:
    def bad_shape(p: torch.Tensor, q: torch.Tensor) -> Any:
        return torch.functional.broadcast_shapes((2,), (3,))  # raises inside torch

    with pytest.raises(SamplerRaised) as info:
        torch_output_distribution(bad_shape, P, Q)
    line = bad_shape.__code__.co_firstlineno + 1
    assert f"{HERE}:{line})" in str(info.value)


def test_row_ops_on_an_empty_slice_keep_the_row_length() -> None:
    # romsto's loop takes softmax of logits[..., a:a, :] when no draft is left to verify
    def empty_rows(p: torch.Tensor) -> Any:
        rows = p.reshape(1, 2, 4)[..., 1:1, :]
        return (tuple(torch.softmax(rows, dim=-1).shape), tuple(rows.cumsum(-1).shape),
                tuple(rows.sort(dim=-1).values.shape), tuple(rows.topk(2).indices.shape),
                tuple((rows / torch.softmax(rows, -1)).shape))

    assert _facts(empty_rows) == empty_rows(torch.full((8,), 0.125))
