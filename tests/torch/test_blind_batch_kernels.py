"""Batch kernels written by someone who read only the docs, audited with defaults.

``blind_batch/`` holds kernels in three engines' idioms, as their author wrote them
(vLLM v1's flattened drafts, FlashInfer's whole-batch uniforms and cumulative product,
TensorRT-LLM's loop per request): a correct one per idiom and one or more bugs per batch
property.  Each is judged as ``specexact audit FILE:FN --torch --signature batch`` judges
it (``gamma = 2``, ``V = 2..3``, the faithful run included).  A default audit of one
kernel takes 20 to 120 CPU s, so all but one run in the slow run.

``vllm_correct_exp`` was meant to be correct: it races the residual against
``exponential_`` noise as vLLM does, and float32's exponential is 0 with probability
2^-53, where ``0 / 0`` is nan and ``argmax`` picks a token the target rules out. That
is a float-only finding (exact rationals pass it), and the audit names it.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from specexact.properties.batch_search import search_batch  # noqa: E402
from specexact.torch.batch import BatchKernel  # noqa: E402

from .blind_batch import flashinfer_style, trtllm_style, vllm_style  # noqa: E402

slow = pytest.mark.slow

#: (module, kernel, the audit's status, the property that must fail or None)
CASES = [
    pytest.param(vllm_style, "vllm_correct", "pass", None, marks=slow),
    pytest.param(flashinfer_style, "flashinfer_correct", "pass", None, marks=slow),
    pytest.param(trtllm_style, "trtllm_correct", "pass", None, marks=slow),
    pytest.param(vllm_style, "vllm_correct_exp", "fail", "row law", marks=slow),
    pytest.param(vllm_style, "vllm_bug_rowlaw", "fail", "row law", marks=slow),
    pytest.param(vllm_style, "vllm_bug_independence", "fail", "independence", marks=slow),
    pytest.param(vllm_style, "vllm_bug_padding", "fail", "padding", marks=slow),
    pytest.param(vllm_style, "vllm_bug_batchmax", "fail", "batch invariance", marks=slow),
    pytest.param(vllm_style, "vllm_bug_seeds", "fail", "seeds", marks=slow),
    pytest.param(flashinfer_style, "flashinfer_bug_rowlaw", "fail", "row law", marks=slow),
    pytest.param(flashinfer_style, "flashinfer_bug_independence", "fail", "independence",
                 marks=slow),
    pytest.param(flashinfer_style, "flashinfer_bug_padding", "fail", "padding", marks=slow),
    pytest.param(flashinfer_style, "flashinfer_bug_batch", "fail", "batch invariance",
                 marks=slow),
    pytest.param(flashinfer_style, "flashinfer_bug_seeds", "fail", "seeds", marks=slow),
    pytest.param(trtllm_style, "trtllm_bug_rowlaw", "fail", "row law", marks=slow),
    pytest.param(trtllm_style, "trtllm_bug_rowlaw_unclamped", "fail", "row law"),
    pytest.param(trtllm_style, "trtllm_bug_independence", "fail", "independence", marks=slow),
    pytest.param(trtllm_style, "trtllm_bug_padding", "fail", "padding", marks=slow),
    pytest.param(trtllm_style, "trtllm_bug_seeds", "fail", "seeds", marks=slow),
]


@pytest.mark.parametrize(("module", "name", "status", "failed"), CASES)
def test_a_blind_kernel_gets_its_verdict_with_defaults(module: Any, name: str, status: str,
                                                        failed: str | None) -> None:
    result = search_batch(BatchKernel(getattr(module, name), k=2))
    report = result.witness.report if result.witness is not None else None
    assert result.status == status, result.covered
    if failed is not None:
        assert report is not None
        assert report.status(failed) == "fail"
