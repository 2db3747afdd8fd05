"""vLLM v1's Triton rejection sampler, loaded unmodified from a mirror (issue 22).

``vllm/v1/sample/rejection_sampler.py`` holds the launcher ``rejection_sample`` and
its ``@triton.jit`` kernels (``rejection_greedy_sample_kernel``,
``rejection_random_sample_kernel``, ``expand_kernel``,
``sample_recovered_tokens_kernel``).  The file is compiled from the jiqing-feng/vllm
fork of vllm-project/vllm (it keeps v1 as upstream has it) at ``VLLM_V1``; only the
imports it names at module level and never uses on this path are stand-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from upstream_load import module, stub

#: The repository and commit the file is read from (main of the fork, 2025-08-22).
VLLM_V1 = ("jiqing-feng/vllm", "8896eb72ebe90be6f1b83f32b3d3d0c379db4f82")
PATH = "vllm/v1/sample/rejection_sampler.py"
ALL_REPOSITORIES = (VLLM_V1,)


@dataclass
class Sampling:
    """The fields of vLLM's ``SamplingMetadata`` that ``rejection_sample`` reads: one
    random (temperature 1) request, unseeded."""

    temperature: torch.Tensor
    all_greedy: bool = False
    all_random: bool = True
    generators: dict[int, torch.Generator] = field(default_factory=dict)


def rejection_sampler() -> Any:
    """The module, with its imports stood in (``vllm.triton_utils`` is real Triton)."""
    import triton
    import triton.language as tl

    for name in ("vllm", "vllm.v1", "vllm.v1.sample", "vllm.v1.sample.ops",
                 "vllm.v1.spec_decode"):
        stub(name, __path__=[])                                     # the package shells
    import logging
    stub("vllm.logger", init_logger=logging.getLogger)              # vLLM's logger factory
    stub("vllm.triton_utils", tl=tl, triton=triton)                 # real Triton, re-exported
    stub("vllm.v1.sample.metadata", SamplingMetadata=Sampling)      # annotations only
    stub("vllm.v1.sample.ops.topk_topp_sampler", apply_top_k_top_p=None)  # compute_probs only
    stub("vllm.v1.spec_decode.metadata", SpecDecodeMetadata=None)   # forward() only
    repo, commit = VLLM_V1
    return module("vllm.v1.sample.rejection_sampler", repo, commit, PATH)


def chain() -> Callable[..., Any]:
    """``rejection_sample`` on one request of k drafts: the ``chain`` signature.

    vLLM's sampler draws the bonus token from the target's last row before the
    rejection sampler runs; ``target_probs`` reach it as ``compute_probs`` returns
    them at temperature 1 (the softmax of the logits, here the rows themselves).
    """
    rs = rejection_sampler()

    def rejection_sample(draft_token_ids: Any, draft_probs: Any, target_probs: Any) -> Any:
        k = draft_token_ids.shape[1]
        bonus = torch.multinomial(target_probs[:, -1], 1)
        return rs.rejection_sample(
            draft_token_ids[0], [k], k, torch.tensor([k], dtype=torch.int32),
            draft_probs[0], target_probs[0, :k], bonus,
            Sampling(temperature=torch.ones(1)))

    return rejection_sample
