"""Triton rejection kernels and their launchers, as an engine writes them (issue 22).

Each launcher takes the rows as torch tensors, draws its randomness with torch on
the host (as vLLM v1 does) and launches a ``@triton.jit`` kernel; the tests audit
the launchers like any torch function.  Every correct kernel has buggy twins.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl


@triton.jit
def race_kernel(out_ptr, p_ptr, q_ptr, u_ptr, e_ptr, V, BLOCK: tl.constexpr,
                INCLUSIVE: tl.constexpr):
    """Accept the draft in ``out_ptr`` with probability min(1, p/q), else recover by an
    exponential race over the residual (argmax of max(p - q, 0) / E)."""
    x = tl.load(out_ptr)
    px = tl.load(p_ptr + x)
    qx = tl.load(q_ptr + x)
    u = tl.load(u_ptr)
    if INCLUSIVE:  # noqa: SIM108 (kernels branch as engines write them)
        accept = u <= px / qx                # bug: u = 0 accepts a p = 0 draft
    else:
        accept = u < px / qx
    if accept:
        return
    offs = tl.arange(0, BLOCK)
    m = offs < V
    p = tl.load(p_ptr + offs, mask=m, other=0.0)
    q = tl.load(q_ptr + offs, mask=m, other=0.0)
    r = tl.maximum(p - q, 0.0)
    e = tl.load(e_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr, tl.argmax(tl.where(r > 0, r / e, -1.0), axis=0))


def _launch(kernel: Any, p: Any, q: Any, generator: Any, uniforms: int, noise: bool,
            **flags: Any) -> Any:
    """Draw the draft from q, then the uniforms (and an Exp(1) row), and launch."""
    V = p.shape[-1]
    out = torch.multinomial(q, 1, generator=generator)
    drawn = [torch.rand(uniforms, generator=generator)]
    if noise:
        drawn.append(torch.empty(V).exponential_(generator=generator))
    kernel[(1,)](out, p, q, *drawn, V, BLOCK=triton.next_power_of_2(V), num_warps=1,
                 **flags)
    return out


def race_sampler(p: Any, q: Any, generator: Any = None) -> Any:
    """The textbook rule: correct."""
    return _launch(race_kernel, p, q, generator, 1, True, INCLUSIVE=False)


def race_inclusive(p: Any, q: Any, generator: Any = None) -> Any:
    """``u <= p/q``: a p = 0 draft is accepted when torch.rand returns its grid zero."""
    return _launch(race_kernel, p, q, generator, 1, True, INCLUSIVE=True)


@triton.jit
def cdf_kernel(out_ptr, p_ptr, q_ptr, u_ptr, V, BLOCK: tl.constexpr,
               NORMALISE: tl.constexpr):
    """Accept, else recover by inverse CDF over the residual with a second uniform."""
    x = tl.load(out_ptr)
    if tl.load(u_ptr) < tl.load(p_ptr + x) / tl.load(q_ptr + x):
        return
    offs = tl.arange(0, BLOCK)
    m = offs < V
    r = tl.maximum(tl.load(p_ptr + offs, mask=m, other=0.0)
                   - tl.load(q_ptr + offs, mask=m, other=0.0), 0.0)
    if NORMALISE:
        r = r / tl.sum(r, axis=0)
    cdf = tl.cumsum(r, axis=0)
    below = (cdf <= tl.load(u_ptr + 1)) & m
    tl.store(out_ptr, tl.sum(below.to(tl.int32), axis=0))


def cdf_sampler(p: Any, q: Any, generator: Any = None) -> Any:
    """Inverse-CDF recovery over the normalised residual: exact with ideal uniforms."""
    return _launch(cdf_kernel, p, q, generator, 2, False, NORMALISE=True)


def cdf_unnormalised(p: Any, q: Any, generator: Any = None) -> Any:
    """``max(p - q, 0)`` without dividing by its sum: the CDF tops out below 1."""
    return _launch(cdf_kernel, p, q, generator, 2, False, NORMALISE=False)


@triton.jit
def chain_kernel(out_ptr, ids_ptr, q_ptr, p_ptr, bonus_ptr, u_ptr, e_ptr, K, V,
                 BLOCK: tl.constexpr, SHARED_UNIFORM: tl.constexpr):
    """Verify K drafts in order (one program per request); -1 pads after a rejection."""
    req = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < V
    rejected = False
    for pos in range(K):
        if not rejected:
            row = (req * (K + 1) + pos) * V
            x = tl.load(ids_ptr + req * K + pos)
            if SHARED_UNIFORM:  # noqa: SIM108
                u = tl.load(u_ptr + req * K)        # bug: one uniform for every position
            else:
                u = tl.load(u_ptr + req * K + pos)
            if u < tl.load(p_ptr + row + x) / tl.load(q_ptr + (req * K + pos) * V + x):
                tl.store(out_ptr + req * (K + 1) + pos, x)
            else:
                rejected = True
                r = tl.maximum(tl.load(p_ptr + row + offs, mask=m, other=0.0)
                               - tl.load(q_ptr + (req * K + pos) * V + offs, mask=m,
                                         other=0.0), 0.0)
                e = tl.load(e_ptr + (req * K + pos) * V + offs, mask=m, other=1.0)
                tl.store(out_ptr + req * (K + 1) + pos,
                         tl.argmax(tl.where(r > 0, r / e, -1.0), axis=0))
    if not rejected:
        tl.store(out_ptr + req * (K + 1) + K, tl.load(bonus_ptr + req))


def _chain(draft_token_ids: Any, draft_probs: Any, target_probs: Any, shared: bool) -> Any:
    n, k = draft_token_ids.shape
    V = target_probs.shape[-1]
    out = torch.full((n, k + 1), -1, dtype=torch.int64)
    bonus = torch.multinomial(target_probs[:, k], 1)     # drawn before the kernel runs
    u = torch.rand(n, k)
    e = torch.empty(n, k, V).exponential_()
    chain_kernel[(n,)](out, draft_token_ids.contiguous(), draft_probs.contiguous(),
                       target_probs.contiguous(), bonus, u, e, k, V,
                       BLOCK=triton.next_power_of_2(V), SHARED_UNIFORM=shared)
    return out


def chain_sampler(draft_token_ids: Any, draft_probs: Any, target_probs: Any) -> Any:
    """The chain rule, one uniform per position: correct."""
    return _chain(draft_token_ids, draft_probs, target_probs, False)


def chain_shared_uniform(draft_token_ids: Any, draft_probs: Any, target_probs: Any) -> Any:
    """One uniform for all positions: acceptances are correlated."""
    return _chain(draft_token_ids, draft_probs, target_probs, True)


@triton.jit
def sigmoid_kernel(out_ptr, p_ptr):
    tl.store(out_ptr, tl.sigmoid(tl.load(p_ptr)) > 0.5)


def unsupported_op(p: Any, q: Any) -> Any:
    """A kernel using ``tl.sigmoid``, which the exact ``tl`` does not model."""
    out = torch.zeros(1, dtype=torch.int64)
    sigmoid_kernel[(1,)](out, p)
    return out


@triton.jit
def copy_kernel(dst_ptr, src_ptr, n, BLOCK: tl.constexpr, OTHER: tl.constexpr,
                MASKED: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if MASKED:
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n, other=OTHER),
                 mask=offs < BLOCK)
    else:
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs))


def copy_block(src: Any, block: int, other: Any = None, masked: bool = True) -> Any:
    """``dst[i] = src[i]`` for ``i < len(src)`` and ``other`` beyond, over ``block`` lanes."""
    dst = torch.zeros(block, dtype=src.dtype)
    copy_kernel[(1,)](dst, src, src.shape[0], BLOCK=block, OTHER=other, MASKED=masked)
    return dst


@triton.jit
def arithmetic_kernel(int_ptr, float_ptr, a, b, x):
    tl.store(int_ptr, a // b)              # C semantics: -7 // 2 = -3
    tl.store(int_ptr + 1, a % b)           # and -7 % 2 = -1
    tl.store(float_ptr, x / 3.0)           # a float32 scalar argument, float32 division
    tl.store(float_ptr + 1, a / b)         # int32 / int32 is float32 in Triton


def arithmetic(p: Any, q: Any) -> Any:
    """A token that encodes what the kernel computed (see the test)."""
    ints = torch.zeros(2, dtype=torch.int64)
    floats = torch.zeros(2, dtype=torch.float32)
    arithmetic_kernel[(1,)](ints, floats, -7, 2, 1.0)
    third = bool(floats[0] == torch.tensor(1 / 3, dtype=torch.float32))
    return (ints[0] + 10) * 100 + (ints[1] + 10) * 10 + int(third) \
        + 1000 * int(bool(floats[1] == -3.5))


@triton.jit
def nan_kernel(out_ptr, x_ptr, PROPAGATE: tl.constexpr):
    x = tl.load(x_ptr)                      # 0 / 0: a NaN
    if PROPAGATE:  # noqa: SIM108
        y = tl.maximum(x, 1.0, propagate_nan=tl.PropagateNan.ALL)
    else:
        y = tl.maximum(x, 1.0)              # Triton's default: the non-NaN operand
    tl.store(out_ptr, y == 1.0)


def nan_maximum(propagate: bool) -> Any:
    def fn(p: Any, q: Any) -> Any:
        out = torch.zeros(1, dtype=torch.int64)
        zero = torch.zeros(1)
        nan_kernel[(1,)](out, zero / zero, PROPAGATE=propagate)
        return out[0]
    return fn


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit
def sized_copy_kernel(dst_ptr, src_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n, other=0), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})],
                 key=["n"])
@triton.jit
def tuned_copy_kernel(dst_ptr, src_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n, other=0), mask=offs < n)


def heuristic_copy(p: Any, q: Any) -> Any:
    src = torch.tensor([4, 5, 6])
    dst = torch.zeros(3, dtype=torch.int64)
    sized_copy_kernel[(1,)](dst, src, 3)
    return dst[0] * 100 + dst[1] * 10 + dst[2]


def tuned_copy(p: Any, q: Any) -> Any:
    src = torch.tensor([4, 5, 6])
    dst = torch.zeros(3, dtype=torch.int64)
    tuned_copy_kernel[(1,)](dst, src, 3)
    return dst[0]
