"""Thin adapters from upstream engine functions to specexact's torch signatures.

Every upstream function runs unmodified (loaded by :mod:`upstream_load`); each
adapter line is commented with why the calling convention differs.  Licences:
feifeibear/LLMSpeculativeSampling Apache-2.0, romsto/Speculative-Decoding MIT,
SafeAILab/EAGLE Apache-2.0, FasterDecoding/Medusa Apache-2.0.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from upstream_load import module, stub

FEIFEIBEAR = ("feifeibear/LLMSpeculativeSampling", "59a209d37b2e463459057a784f8bd31c1136a58b")
ROMSTO = ("romsto/Speculative-Decoding", "db7db67604359d0380c330c240c276ec1f85ba65")
EAGLE = ("SafeAILab/EAGLE", "cb7e0841fe0c206c6ed74a197ad5e2a1f13f5a2b")
MEDUSA = ("FasterDecoding/Medusa", "e2a5d20c048a9b0a4092e6933c34313687422518")
#: Every repository (and commit) the audits read.
ALL_REPOSITORIES = (FEIFEIBEAR, ROMSTO, EAGLE, MEDUSA)


class _NoBar(contextlib.nullcontext[Any]):
    """tqdm's progress bar, which the loop only updates (tqdm is not a dependency)."""

    n = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(self)

    def update(self, k: int) -> None:
        self.n += k


class RealLM:
    """A context-free toy model for real torch: log-probabilities as logits."""

    def __init__(self, row: list[float]) -> None:
        self.row = torch.log(torch.tensor(row))
        self.device = torch.device("cpu")

    def __call__(self, input_ids: torch.Tensor, **kwargs: Any) -> Any:
        logits = self.row.expand(1, input_ids.shape[1], len(self.row)).clone()
        return SimpleNamespace(logits=logits, past_key_values=None)


def feifeibear() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``speculative_sampling`` (KV cache) and ``speculative_sampling_v2``, gamma = 2."""
    repo, commit = FEIFEIBEAR
    stub("tqdm", tqdm=_NoBar)                                  # progress bar only
    stub("globals", Decoder=None)                              # tokenizer, verbose output only
    stub("transformers.models.bloom.modeling_bloom",           # an isinstance test only
         BloomForCausalLM=type("BloomForCausalLM", (), {}))
    stub("sampling", __path__=[])                              # the package shell
    module("sampling.utils", repo, commit, "sampling/utils.py")
    module("sampling.kvcache_model", repo, commit, "sampling/kvcache_model.py")
    ss = module("sampling.speculative_sampling", repo, commit,
                "sampling/speculative_sampling.py")

    def cached(input_ids: Any, draft: Any, target: Any, max_new_tokens: int) -> Any:
        # gamma=2: the default 4 multiplies the audit's paths
        return ss.speculative_sampling(input_ids, draft, target, max_new_tokens, gamma=2)

    def v2(input_ids: Any, draft: Any, target: Any, max_new_tokens: int) -> Any:
        return ss.speculative_sampling_v2(input_ids, draft, target, max_new_tokens, gamma=2)

    return cached, v2


def romsto() -> Callable[..., Any]:
    """``speculative_generate`` with multinomial sampling, gamma = 2."""
    repo, commit = ROMSTO
    stub("transformers.cache_utils",                           # an isinstance test only
         DynamicCache=type("DynamicCache", (), {}))
    stub("utils", __path__=[])                                 # the package shell
    stub("utils.printing")                                     # debug output only
    lp = module("utils.logits_processor", repo, commit, "utils/logits_processor.py")
    module("utils.caching", repo, commit, "utils/caching.py")
    stub("sampling", __path__=[])                              # the package shell
    sd = module("sampling.speculative_decoding", repo, commit,
                "sampling/speculative_decoding.py")

    def generate(input_ids: Any, draft: Any, target: Any, max_new_tokens: int) -> Any:
        generated, _rate = sd.speculative_generate(
            input_ids[0].tolist(),                             # the loop takes a list of ids
            draft, target, gamma=2,                            # audit size (default 5)
            logits_processor=lp.MultinomialProcessor(1.0),     # sampling (default greedy)
            max_gen_len=max_new_tokens,
            eos_tokens_id=-1)                                  # no stop token in the toys
        return torch.tensor([input_ids[0].tolist() + generated])  # ids back as [1, n + m]

    return generate


def eagle() -> Callable[..., Any]:
    """``evaluate_posterior`` on a depth-1 tree of the draft's top-2 tokens."""
    repo, commit = EAGLE
    names = ("LogitsProcessorList", "RepetitionPenaltyLogitsProcessor",
             "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper")
    stub("transformers.generation.logits_process",             # imported, unused here
         **{n: type(n, (), {}) for n in names})
    utils = module("eagle_model_utils", repo, commit, "eagle/model/utils.py")

    def identity(input_ids: Any, scores: Any) -> Any:          # temperature 1, no warpers
        return scores

    def posterior(p: torch.Tensor, q: torch.Tensor) -> Any:
        vocab = p.shape[0]
        k = min(2, vocab)
        top = torch.topk(q, k).indices                         # EAGLE's candidates: top-k
        candidates = torch.stack([torch.zeros(k, dtype=torch.long), top], dim=1)
        logits = torch.log(p)[None, None, :].expand(k, 2, vocab)  # target logits per node
        best, accept_length, sample_p = utils.evaluate_posterior(logits, candidates, identity)
        if accept_length == 1:                                 # the accepted candidate
            return candidates[best, 1]
        return torch.multinomial(sample_p, 1)                  # EAGLE samples sample_p next

    return posterior


def medusa() -> dict[str, Callable[..., Any]]:
    """``evaluate_posterior`` (nucleus at top_p = 1; typical with its defaults, fast and
    not) on the draft's top-1 candidate, then the token Medusa's loop emits next."""
    repo, commit = MEDUSA
    utils = module("medusa_model_utils", repo, commit, "medusa/model/utils.py")

    def step(p: torch.Tensor, q: torch.Tensor, sampling: str, top_p: float,
             fast: bool) -> Any:
        vocab = p.shape[0]
        candidate = torch.argmax(q)                            # the head's top-1 token
        candidates = torch.stack([torch.zeros((), dtype=torch.long), candidate])[None]
        logits = torch.log(p)[None, None, :].expand(1, 2, vocab)  # target logits per node
        best, accept_length = utils.evaluate_posterior(logits, candidates, 1.0, top_p=top_p,
                                                       sampling=sampling, fast=fast)
        if accept_length == 1:                                 # the candidate is emitted
            return candidates[best, 1]
        row = logits[best, 0][None]                            # else the loop's next token
        if sampling == "nucleus":
            return utils.get_nucleus_one_token(row, 1.0, top_p)[0, 0]
        return utils.get_typical_one_token(row, 1.0, 0.3, 0.09)[0, 0]

    return {
        "nucleus": lambda p, q: step(p, q, "nucleus", 1.0, True),   # top_p = 1: the target p
        "typical": lambda p, q: step(p, q, "typical", 0.8, True),
        "typical_slow": lambda p, q: step(p, q, "typical", 0.8, False),
    }
