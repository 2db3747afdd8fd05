"""Thin adapters from serving engines' verification code to specexact's torch signatures.

Every upstream function runs unmodified (loaded by :mod:`upstream_load` from the
git-ignored ``sources/`` folder; see ``SOURCES`` below for where each file comes
from); each adapter line says why the calling convention differs.  Licences:
vLLM Apache-2.0, transformers Apache-2.0, LMDeploy Apache-2.0,
lucidrains/speculative-decoding MIT.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import torch
from upstream_load import module, stub

#: vLLM v0 (0.6 era, ``@torch.jit.script`` ``_multinomial`` with per-request seeded
#: generators), as kept in the jiqing-feng/vllm fork of vllm-project/vllm.
VLLM = ("jiqing-feng/vllm", "da6cb3e0c833b7afa4516602ce789d2201d7c9f4")
#: vLLM's typical acceptance sampler and the base sampler it shares.
VLLM_TYPICAL = ("jiqing-feng/vllm", "d90c48fe40a4c1e4bc843d7e1e8305df3c000dbc")
#: transformers' ``_speculative_sampling`` (the module-level function of
#: src/transformers/generation/utils.py, kept alone: the rest of the 209,627-character
#: module is the generation mixin, which it does not use).
TRANSFORMERS = ("huggingface/transformers", "000034a44ef887621d9b36001a5eb7c46e64cb3f")
#: LMDeploy's pure-torch RejectionSampler (lmdeploy/pytorch/spec_decode/reject_sampler.py).
LMDEPLOY = ("InternLM/lmdeploy", "6090280df7ebc02a6d19751fd5d42ebbb2b34bc7")
#: lucidrains' ``speculative_decoding`` loop.
LUCIDRAINS = ("lucidrains/speculative-decoding", "72171ac91cd040ad6b67c186ac985e4f50a0c269")
#: Every repository (and commit) these adapters read, with the paths.
SOURCES = {
    VLLM: ("vllm/model_executor/layers/rejection_sampler.py",),
    VLLM_TYPICAL: ("vllm/model_executor/layers/spec_decode_base_sampler.py",
                   "vllm/model_executor/layers/typical_acceptance_sampler.py"),
    TRANSFORMERS: ("src/transformers/generation/utils.py",),
    LMDEPLOY: ("lmdeploy/pytorch/spec_decode/reject_sampler.py",),
    LUCIDRAINS: ("speculative_decoding/speculative_decoding.py",),
}
ALL_REPOSITORIES = tuple(SOURCES)


def _vllm_package() -> None:
    stub("vllm", __path__=[])                                  # the package shells
    stub("vllm.model_executor", __path__=[])
    stub("vllm.model_executor.layers", __path__=[])
    stub("vllm.envs", VLLM_USE_FLASHINFER_SAMPLER=False)       # the env-var table: default off
    stub("vllm.logger", init_logger=logging.getLogger)         # vLLM's logger factory
    repo, commit = VLLM_TYPICAL
    module("vllm.model_executor.layers.spec_decode_base_sampler", repo, commit,
           "vllm/model_executor/layers/spec_decode_base_sampler.py")


def _counted(sampler: Any) -> Any:
    sampler.init_gpu_tensors("cpu")                            # the engine calls this at start-up
    return sampler


def vllm_rejection() -> dict[str, Callable[..., Any]]:
    """``RejectionSampler.forward`` on one request (the ``chain`` signature), three ways:
    unseeded; its row seeded with its own ``torch.Generator``; and in a batch of two
    identical requests where one row is seeded and the other not (the audited row
    first seeded, then unseeded)."""
    _vllm_package()
    repo, commit = VLLM
    rs = module("vllm.model_executor.layers.rejection_sampler", repo, commit,
                "vllm/model_executor/layers/rejection_sampler.py")

    def bonus(target_probs: torch.Tensor, generator: Any = None) -> torch.Tensor:
        # vLLM's sampler draws the bonus token from the target's last row before the
        # rejection sampler runs (with the request's generator when it is seeded)
        return torch.multinomial(target_probs[:, -1], 1, generator=generator)

    def chain(draft_token_ids: Any, draft_probs: Any, target_probs: Any) -> Any:
        sampler = _counted(rs.RejectionSampler(disable_bonus_tokens=False))
        return sampler(target_probs, bonus(target_probs), draft_probs, draft_token_ids)

    def seeded(draft_token_ids: Any, draft_probs: Any, target_probs: Any,
               generators: Any) -> Any:
        sampler = _counted(rs.RejectionSampler(disable_bonus_tokens=False))
        return sampler(target_probs, bonus(target_probs, generators[0]), draft_probs,
                       draft_token_ids, seeded_seqs={0: generators[0]})

    def mixed(audited_row: int) -> Callable[..., Any]:
        def run(draft_token_ids: Any, draft_probs: Any, target_probs: Any,
                generators: Any) -> Any:
            # two identical requests; row 0 is seeded with the handed-in generator
            sampler = _counted(rs.RejectionSampler(disable_bonus_tokens=False))
            two = [torch.cat([t, t]) for t in (target_probs, draft_probs, draft_token_ids)]
            bonuses = torch.cat([bonus(target_probs, generators[0]), bonus(target_probs)])
            out = sampler(two[0], bonuses, two[1], two[2], seeded_seqs={0: generators[0]})
            return out[audited_row:audited_row + 1]
        return run

    return {"chain": chain, "seeded": seeded, "mixed_seeded_row": mixed(0),
            "mixed_unseeded_row": mixed(1)}


def vllm_typical() -> Callable[..., Any]:
    """``TypicalAcceptanceSampler.forward`` with vLLM's defaults (posterior_threshold
    0.09, posterior_alpha 0.3), bonus tokens on, on one request."""
    _vllm_package()
    repo, commit = VLLM_TYPICAL
    tas = module("vllm.model_executor.layers.typical_acceptance_sampler", repo, commit,
                 "vllm/model_executor/layers/typical_acceptance_sampler.py")

    def typical(draft_token_ids: Any, draft_probs: Any, target_probs: Any) -> Any:
        sampler = _counted(tas.TypicalAcceptanceSampler(posterior_threshold=0.09,
                                                        posterior_alpha=0.3))
        # the bonus token: vLLM's sampler draws it from the target's last row
        bonus = torch.multinomial(target_probs[:, -1], 1)
        return sampler(target_probs, bonus, draft_probs, draft_token_ids)

    return typical


def transformers_sampling() -> Callable[..., Any]:
    """transformers' ``_speculative_sampling``: the ``hf`` signature as it is."""
    repo, commit = TRANSFORMERS
    utils = module("transformers_generation_utils", repo, commit,
                   "src/transformers/generation/utils.py")
    return utils._speculative_sampling


def lmdeploy() -> Callable[..., Any]:
    """``RejectionSampler.forward`` (greedy, its only policy) on one request, with the
    target's probabilities as its logits and vLLM-style bonus sampling."""
    repo, commit = LMDEPLOY
    rs = module("lmdeploy_reject_sampler", repo, commit,
                "lmdeploy/pytorch/spec_decode/reject_sampler.py")

    def sampler(draft_token_ids: Any, draft_probs: Any, target_probs: Any) -> Any:
        bonus = torch.multinomial(target_probs[:, -1], 1)      # the engine's bonus token
        out, _rejected, _last = rs.RejectionSampler()(target_probs[:, :-1], draft_token_ids,
                                                      bonus, draft_probs=draft_probs)
        return out

    return sampler


class _Net:
    """An HF-style decode model seen through lucidrains' calling convention:
    ``net(out, seq_start_pos=..., cache=..., return_cache=True) -> (logits, cache)``
    with ``cache = (cached_kv, embeds)``, a key/value tensor the loop slices along its
    sequence axis (one entry per position already seen, here the position itself)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __call__(self, out: torch.Tensor, seq_start_pos: Any = None, cache: Any = None,
                 return_cache: bool = False) -> Any:
        logits = self.model(out).logits                        # [1, n, V] over every position
        n = out.shape[-1]
        kv = torch.arange(n, dtype=torch.float32)[None, None, :, None]  # [b, h, n, d]
        return logits, (kv, None)


def lucidrains() -> Callable[..., Any]:
    """``speculative_decoding`` with gamma = 2, temperature 1 and no top-k filtering
    (``filter_thres=0`` keeps all ``ceil(V)`` logits), emitting ``max_new_tokens``."""
    for name in ("beartype", "einops"):                        # imports the loop does not
        try:                                                   # need at run time here
            __import__(name)
        except ImportError:
            stub(name, beartype=lambda f: f, rearrange=_rearrange)
    repo, commit = LUCIDRAINS
    sd = module("lucidrains_speculative_decoding", repo, commit,
                "speculative_decoding/speculative_decoding.py")

    def generate(input_ids: Any, draft_model: Any, target_model: Any,
                 max_new_tokens: int) -> Any:
        n = input_ids.shape[-1]
        out, _rate = sd.speculative_decoding(_Net(target_model), _Net(draft_model), input_ids,
                                             seq_len=n + max_new_tokens, gamma=2,
                                             filter_thres=0.0)
        return torch.cat([input_ids, out], dim=-1)

    return generate


def _rearrange(t: Any, pattern: str) -> Any:
    """The three einops patterns the loop uses at batch size 1 (einops not installed)."""
    shapes = {"b -> b 1 1": lambda x: x[:, None, None], "b n 1 -> b n": lambda x: x[..., 0],
              "b -> b 1": lambda x: x[:, None], "b 1 d -> b d": lambda x: x[:, 0],
              "... -> ... 1": lambda x: x[..., None]}
    return shapes[pattern](t)


assert math.ceil((1 - 0.0) * 3) == 3                           # filter_thres=0 keeps V logits
