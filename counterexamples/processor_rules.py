"""Step rules around the sampler: processors with state, stopping, and the bug shapes
reported in engines (reference sheet, section 7), each with its processor configuration.

Every rule here is judged against the processed target's joint law under its
``processors`` (a :class:`specexact.steps.processors.ProcessorPipeline`); the
wrong ones carry the exact witness the default search
(:func:`specexact.properties.search_step` with those processors) shrank their failure to.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from specexact.counterexamples import processor_steps as ps
from specexact.counterexamples.chain_steps import chain
from specexact.counterexamples.steps import StepRule, named_step
from specexact.pipelines import MinP, TopK, TopP
from specexact.steps.models import ContextFreeModel
from specexact.steps.processors import (
    NO_PROCESSORS,
    BadWords,
    FrequencyPenalty,
    LogitBias,
    MinNewTokens,
    NoRepeatNGram,
    PresencePenalty,
    ProcessorPipeline,
    RepetitionPenalty,
    Stopping,
    TokenGrammar,
)
from specexact.witness import StepWitness

__all__ = ["CONFIGS", "PROCESSOR_RULES", "processed_step"]

_F = Fraction

#: The processor configurations the rules are judged under, by name.
CONFIGS: dict[str, ProcessorPipeline] = {
    "penalties": ProcessorPipeline((RepetitionPenalty(_F(2)), PresencePenalty(_F(2, 3)),
                                    FrequencyPenalty(_F(1, 2)))),
    "frequency": ProcessorPipeline((FrequencyPenalty(_F(1, 3)),)),
    "bias-min-p": ProcessorPipeline((LogitBias({0: _F(1, 2)}), MinP(_F(1, 2)))),
    "min-p": ProcessorPipeline((MinP(_F(1, 2)),)),
    "logit-bias": ProcessorPipeline((LogitBias({0: _F(1, 3)}),)),
    "top-k-top-p": ProcessorPipeline((TopK(2), TopP(_F(1, 2)))),
    "bad-words": ProcessorPipeline((BadWords(((0, 0),)),)),
    "bad-words-ngram": ProcessorPipeline((BadWords(((1, 0),)), NoRepeatNGram(3))),
    "no-repeat-ngram": ProcessorPipeline((NoRepeatNGram(2),)),
    # Token 1 ends the reasoning; after it, tokens must alternate 0, then anything but 0.
    "grammar": ProcessorPipeline((TokenGrammar({(0, 0): 1, (1, 1): 0, (1, 2): 0},
                                               boundary=1),)),
    "grammar-from-start": ProcessorPipeline((TokenGrammar({(0, 0): 1, (1, 1): 0,
                                                           (1, 2): 0}),)),
    "min-new-tokens": ProcessorPipeline((MinNewTokens(2, eos=(1,)),), Stopping(eos=(1,))),
    "eos": ProcessorPipeline((), Stopping(eos=(1,))),
    "stopping": ProcessorPipeline((), Stopping(eos=(2,), stop_sequences=((0, 1),),
                                               max_new_tokens=3)),
    "stop-and-cap": ProcessorPipeline((), Stopping(stop_sequences=((0,),), max_new_tokens=2)),
    "everything": ProcessorPipeline((RepetitionPenalty(_F(3, 2)), LogitBias({1: _F(2)}),
                                     MinP(_F(1, 4)), NoRepeatNGram(3)),
                                    Stopping(eos=(1,), max_new_tokens=3)),
}

_SHEET = "reference sheet, section 7"


def _cf(p: tuple[str, ...], q: tuple[str, ...], horizon: int,
        config: str | None) -> StepWitness:
    return StepWitness(ContextFreeModel(p), ContextFreeModel(q), horizon,
                       processors=None if config is None else CONFIGS[config])


def processed_step(fn: Callable[..., Any], name: str, **options: Any) -> Callable[..., Any]:
    """``fn`` with its options fixed, as a step called ``name`` that takes ``processors``."""
    bound = functools.partial(fn, **options)

    def step(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
             processors: ProcessorPipeline = NO_PROCESSORS) -> Any:
        return bound(target, draft, prefix, rng, processors)

    step.__name__ = step.__qualname__ = name.replace("-", "_")
    step.__doc__ = fn.__doc__
    step.__module__ = fn.__module__
    return step


def _rule(name: str, lossless: bool, fn: Any, summary: str, source: str | None,
          config: str | None, witness: StepWitness | None = None,
          **options: Any) -> StepRule:
    takes = "processors" in inspect.signature(fn).parameters
    step = processed_step(fn, name, **options) if takes else named_step(fn, name, **options)
    return StepRule(name, lossless, step, summary, source, witness,
                    processors=None if config is None else CONFIGS[config])


_LOSSLESS = [
    _rule("processed-chain-penalties", True, ps.processed_chain,
          "The chain rule (gamma = 2) on the processed target: repetition, presence and "
          "frequency penalties computed from the emitted prefix at every verified position "
          "and at the bonus. Rows are read once the drafts before them are accepted.",
          _SHEET, "penalties"),
    _rule("processed-chain-bias-min-p", True, ps.processed_chain,
          "The processed chain rule under a logit bias and min_p = 1/2, applied at every "
          "verified position, not only at the bonus token.", _SHEET, "bias-min-p"),
    _rule("processed-chain-top-k-top-p", True, ps.processed_chain,
          "The processed chain rule under top-k 2 then top-p 1/2 (the engines' boundary "
          "rules): the ratio and residual use the filtered target law.", _SHEET,
          "top-k-top-p"),
    _rule("processed-chain-bad-words-ngram", True, ps.processed_chain,
          "The processed chain rule with a banned word (1, 0) and no repeated 3-gram: the "
          "bans depend on the drafts accepted so far in the window.", _SHEET,
          "bad-words-ngram"),
    _rule("processed-chain-grammar", True, ps.processed_chain,
          "The processed chain rule with a token grammar (a 2-state DFA) that applies "
          "after the reasoning-boundary token 1, also when the boundary is accepted "
          "inside the window.", _SHEET, "grammar"),
    _rule("processed-chain-min-new-tokens", True, ps.processed_chain,
          "The processed chain rule with min_new_tokens = 2 (EOS 1 banned while fewer "
          "than 2 tokens were emitted, counted per token) and EOS stopping.", _SHEET,
          "min-new-tokens"),
    _rule("chain-stopping", True, ps.processed_chain,
          "The chain rule with stopping: an accepted EOS or a completed stop sequence "
          "ends the sequence mid-block, and max_new_tokens cuts it; nothing follows.",
          _SHEET, "stopping"),
    _rule("processed-chain-everything", True, ps.processed_chain,
          "The processed chain rule (gamma = 3) under penalties, a logit bias, min_p, no "
          "repeated 3-gram, EOS and max_new_tokens at once.", _SHEET, "everything",
          gamma=3),
    _rule("sampler-match-step", True, ps.sampler_match,
          "Exact-match (sampler-match) verification on the processed target: y ~ p at each "
          "position, drafts kept while they equal y. Every token is a target sample: "
          "lossless, though publicly suspected.", "lablup/mlxcel #992 (refuting #902)",
          "bias-min-p"),
    _rule("one-hot-fallback-step", True, ps.one_hot_fallback,
          "Draft probabilities dropped: each sampled draft is verified as if q were "
          "one-hot, accept with p(x), else p with x removed. Wasteful but lossless.",
          "vLLM #38174, #16899", "bias-min-p"),
    _rule("over-trimmed-draft-cache", True, ps.over_trimmed_draft,
          "The draft cache trimmed one token too far: drafts come from rows at a shorter "
          "context and the ratio uses those same rows. Lower acceptance, true q: "
          "lossless.", _SHEET, None),
    _rule("beam-draft-one-hot", True, ps.beam_draft,
          "Deterministic (beam / greedy) drafts verified as one-hot proposals: accept with "
          "p(x), residual p with x removed. Lossless for any target.",
          "apple/ml-recurrent-drafter #6 (the fix)", None),
    _rule("exact-match-shared-sample", True, ps.exact_match_paths,
          "Two candidate tokens verified by exact match against one shared target sample "
          "y ~ p, which is emitted: the candidates only save work.",
          "fms-extras #12/#17 (the fix)", None),
]

_WRONG = [
    _rule("min-p-bonus-only", False, ps.processed_chain,
          "min_p treated as argmax-invariant: applied to the bonus token only, the verified "
          "positions use the raw target rows.", "vLLM #42744", "min-p",
          _cf(("3/4", "1/4"), ("0", "1"), 1, "min-p"), bonus_only=True),
    _rule("logit-bias-bonus-only", False, ps.processed_chain,
          "A logit bias applied to the bonus token only; the verified positions use the "
          "raw target rows.", "vLLM #42744", "logit-bias",
          _cf(("1/2", "1/2"), ("0", "1"), 1, "logit-bias"), bonus_only=True),
    _rule("bad-words-bonus-only", False, ps.processed_chain,
          "A bad-words ban applied to the bonus token only: a banned word can be accepted "
          "inside the window.", "vLLM #42744 (same shape)", "bad-words",
          _cf(("1/2", "1/2"), ("0", "1"), 2, "bad-words"), bonus_only=True),
    _rule("no-repeat-ngram-bonus-only", False, ps.processed_chain,
          "No-repeat-n-gram applied to the bonus token only: a repeated 2-gram can be "
          "accepted inside the window.", "vLLM #42744 (same shape)", "no-repeat-ngram",
          _cf(("1/2", "1/2", "0"), ("0", "0", "1"), 3, "no-repeat-ngram"), bonus_only=True),
    _rule("penalties-ignored", False, chain,
          "The plain chain rule, which takes no processors: the penalties are silently "
          "ignored on the speculative path.", "TensorRT-LLM #17701, vLLM #18902",
          "penalties", _cf(("1/2", "1/2"), ("0", "1"), 2, "penalties"), gamma=2),
    _rule("penalty-state-per-step", False, ps.stale_window_state,
          "The penalty state is updated once per step: every position of the window sees "
          "the history of the step's start, so the frequency penalty shrinks with the "
          "number of accepted tokens.", "SGLang #33643", "frequency",
          _cf(("1/2", "1/2"), ("0", "1"), 2, "frequency"), history="step start"),
    _rule("min-new-tokens-per-step", False, ps.stale_window_state,
          "min_new_tokens counted per step, not per token: EOS stays banned at every "
          "position of a window that starts before the minimum.", "SGLang #33643",
          "min-new-tokens", _cf(("1/2", "1/2"), ("1", "0"), 3, "min-new-tokens"),
          history="step start"),
    _rule("shared-penalty-counter", False, ps.stale_window_state,
          "Draft and verify copies share one penalty counter: drafts are counted when "
          "drafted (rejected ones too), accepted ones again when verified.",
          "vmlx-swift #357/#361", "frequency",
          _cf(("1/2", "1/2"), ("0", "1"), 1, "frequency"), history="shared counter"),
    _rule("grammar-not-advanced-in-window", False, ps.stale_window_state,
          "The grammar matcher is advanced only by the bonus token: every position of the "
          "window is masked with the grammar state of the step's start.", "LMDeploy #4551",
          "grammar-from-start",
          _cf(("1/2", "1/2"), ("1", "0"), 2, "grammar-from-start"),
          history="grammar at step start"),
    _rule("grammar-lost-after-boundary", False, ps.stale_window_state,
          "When the reasoning-boundary token is accepted inside the window, the positions "
          "after it (and the bonus row) get no grammar mask.", "vLLM #44297", "grammar",
          _cf(("1/2", "1/2"), ("0", "1"), 2, "grammar"),
          history="no grammar after boundary"),
    _rule("grammar-force-reject-from-p", False, ps.force_reject_recover_from_p,
          "A grammar-invalid draft is force-rejected with q zeroed and the recovery token "
          "drawn from the processed p instead of the residual.",
          "local-inference-lab/vllm #476", "grammar-from-start",
          _cf(("1/3", "1/3", "1/3"), ("2/3", "1/3", "0"), 2, "grammar-from-start")),
    _rule("eos-mid-block-continues", False, ps.continue_after_stop,
          "An EOS accepted mid-block does not stop generation: the rest of the block is "
          "verified and emitted after it.", "transformers #47912", "eos",
          _cf(("0", "1"), ("0", "1"), 2, "eos")),
    _rule("cap-before-stop-sequence", False, ps.cap_before_stop,
          "max_new_tokens checked before the stop sequences: when the cap cuts the step's "
          "output, tokens after a stop sequence leak.", "SGLang #31599", "stop-and-cap",
          _cf(("1", "0"), ("1", "0"), 2, "stop-and-cap")),
    _rule("first-draft-unverified", False, ps.first_draft_unverified,
          "The first (n-gram) draft is committed without verification; only the later "
          "drafts are tested.", "ohdearquant/lattice #258", None,
          _cf(("0", "1"), ("1", "0"), 1, None)),
    _rule("rollback-keeps-rejected", False, ps.rollback_keeps_rejected,
          "Accept/rollback off by one: the rejected draft stays in the output before its "
          "replacement (a duplicated token).", "kekzl/imp #667", None,
          _cf(("0", "1"), ("1", "0"), 1, None)),
    _rule("rejection-one-late", False, ps.rejection_one_late,
          "A rejection handled one iteration late: the rejected draft is kept and the "
          "replacement drawn at the next position.", "openvino.genai #4190", None,
          _cf(("0", "1"), ("1", "0"), 1, None)),
    _rule("bf16-draft-exact-ratio", False, ps.bf16_draft_exact_ratio,
          "The draft samples from its probabilities rounded to bf16 (8 significant bits) "
          "while the ratio and residual use the exact q. Invisible on rows whose entries "
          "round by one common factor.", "DeepSpec #31/#30", None,
          _cf(("3/5", "2/5"), ("3/5", "2/5"), 1, None)),
    _rule("beam-draft-q-ratio", False, ps.beam_draft,
          "Deterministic beam drafts verified with the draft's q(x) although the proposal "
          "is one-hot: min(1, p/q) and max(p - q, 0) are the wrong law.",
          "apple/ml-recurrent-drafter #6", None,
          _cf(("1/2", "1/2"), ("1/2", "1/2"), 1, None), one_hot=False),
    _rule("independent-target-per-path", False, ps.exact_match_paths,
          "Exact-match verification with an independent target sample per candidate path, "
          "the first matching path kept: a token gets several chances.",
          "fms-extras #12/#17", None, _cf(("1/2", "1/2"), ("0", "1"), 1, None),
          shared=False),
]

PROCESSOR_RULES: tuple[StepRule, ...] = (*_LOSSLESS, *_WRONG)
