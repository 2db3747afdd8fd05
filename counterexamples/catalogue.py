"""The catalogue: named rules with their expected verdict and exact witness.

Sampler rules live in :mod:`specexact.counterexamples.samplers` (one draft),
:mod:`specexact.counterexamples.multidraft` (several drafts for one position) and
:mod:`specexact.counterexamples.pipeline_rules` (mixed sampling pipelines); step rules
come from :data:`specexact.counterexamples.steps.STEP_RULES` and cross-vocabulary rules from
:data:`specexact.counterexamples.crossvocab_rules.CROSSVOCAB_RULES`.  The sampler witnesses
are what the default search (:func:`specexact.properties.search_sampler`) shrank each
failure to when the entry was written; ``tests/test_catalogue.py``
re-verifies every witness exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from specexact.counterexamples import multidraft, pipeline_rules
from specexact.counterexamples import samplers as s
from specexact.counterexamples.crossvocab_rules import CROSSVOCAB_RULES
from specexact.counterexamples.lookup import by_name
from specexact.counterexamples.multidraft_optimal import (
    ALGORITHM_SAMPLER_RULES,
    ALGORITHM_STEP_RULES,
)
from specexact.counterexamples.processor_rules import PROCESSOR_RULES
from specexact.counterexamples.steps import STEP_RULES
from specexact.witness import SamplerWitness, StepWitness

__all__ = ["Entry", "SamplerWitness", "StepWitness", "catalogue", "get", "left_out"]


def _w(p: Sequence[str], q: Sequence[str]) -> SamplerWitness:
    return SamplerWitness.of(p, q)


@dataclass(frozen=True)
class Entry:
    """One rule of the catalogue.

    ``lossless`` is the expected verdict.  Lossy-by-design rules (relaxed
    acceptance presented as such) have ``lossless=False``,
    ``lossy_by_design=True`` and ``max_tv``, the largest exact TV the search
    found (attained by ``witness``).  ``uniform_bits`` says the rule is
    judged with a grid uniform (pass it to the check or the search);
    ``stateful`` step rules need :class:`~specexact.steps.models.CachedModel`
    models and ``target_kind="one-hot"`` rules are meant for one-hot
    (greedy) targets only.
    """

    name: str
    kind: Literal["sampler", "step", "cross-vocab", "batch"]
    lossless: bool
    rule: Callable[..., Any]
    summary: str
    source: str | None
    witness: Any
    lossy_by_design: bool = False
    max_tv: Fraction | None = None
    uniform_bits: int | None = None
    stateful: bool = False
    target_kind: str = "any"
    #: Steps: the processors and stopping the rule is judged under (a ProcessorPipeline).
    processors: Any = None
    #: The vocabulary sizes the audit judges (None: the kind's default).
    vocab_sizes: tuple[int, int] | None = None


def _sampler(name: str, rule: Callable[..., Any], summary: str, source: str | None,
             witness: SamplerWitness | None = None, **extra: Any) -> Entry:
    return Entry(name, "sampler", witness is None, rule, summary, source, witness, **extra)


_SHEET = "reference sheet"
_LEVIATHAN = "Leviathan et al., ICML 2023, Algorithm 1; Chen et al. 2023"

_LOSSLESS_SAMPLERS = (
    _sampler("textbook", s.textbook,
             "Accept the drafted x with probability min(1, p(x)/q(x)); on rejection draw "
             "from norm(max(p - q, 0)). The accepted mass min(p, q) plus the residual "
             "max(p - q, 0) is exactly p.", _LEVIATHAN),
    _sampler("textbook-bernoulli", s.textbook_bernoulli,
             "The textbook rule with the acceptance coin drawn as a Bernoulli of "
             "min(1, p/q): the same law, a different source of randomness.", _LEVIATHAN),
    _sampler("one-hot-verification", s.onehot_verification,
             "Verifies x as if q were one-hot: accept with probability p(x), else draw from "
             "p with x removed. Wasteful (acceptance sum q p instead of sum min(p, q)) but "
             "lossless, since x does not depend on the verifier's coins.",
             f"{_SHEET}, section 2 (wasteful but lossless)"),
    _sampler("exact-match-verification", s.exact_match,
             "Samples y ~ p and keeps the draft only when y == x, else emits y: it always "
             "emits y, so it is p itself, and the draft only saves work when it matches.",
             f"{_SHEET}, section 2 (wasteful but lossless)"),
    _sampler("multiround-k2", multidraft.multiround,
             "SpecInfer multi-round with 2 i.i.d. siblings: each is tested against the "
             "running residual r, which becomes norm(max(r - q, 0)) after a rejection; the "
             "fallback draws from r.", "Miao et al., ASPLOS 2024"),
    _sampler("rrs-k2", multidraft.rrs_without_replacement,
             "Recursive rejection sampling with 2 drafts drawn without replacement: the "
             "j-th draft's ratio and residual use q^(j), q without the drawn tokens.",
             "Jeon et al. 2024; EAGLE-1"),
    _sampler("spectr-rho-k2", multidraft.spectr,
             "SpecTr k-sequential selection with k = rho = 2: accept with "
             "min(1, p/(rho q)); the fallback formula is valid because "
             "1 - (1 - beta)^k <= rho beta, and beta = 0 has its own branch.",
             "Sun et al., NeurIPS 2023"),
    _sampler("deterministic-tree-k2", multidraft.deterministic_tree,
             "Two one-hot siblings (the draft's top-2 tokens): accept each with probability "
             "r(x), else zero it in r and renormalise; fallback y ~ r. Lossless with the "
             "thresholds at 1.", "EAGLE-2/3, SGLang, vLLM argmax drafts"),
    _sampler("draft-tempered-true-q", pipeline_rules.draft_tempered_true_q,
             "The draft samples at temperature 1/2 and the ratio and residual use that "
             "tempered law: correctness only needs the true proposal law, not a good one.",
             f"{_SHEET}, section 4"),
    _sampler("draft-filtered-true-q", pipeline_rules.draft_filtered_true_q,
             "The draft samples from its top-2 filtered law and the ratio and residual use "
             "that filtered law: lossless.", f"{_SHEET}, section 4"),
)

_WRONG_SAMPLERS = (
    _sampler("naive-resample", s.naive_resample,
             "After a rejection it resamples from p, so mass already covered by acceptance "
             "is added again: the output is min(p, q) + (1 - A) p, not p.",
             f"{_SHEET}, section 5 (resample from p after a rejection)",
             _w(["1/2", "1/2"], ["0", "1"])),
    _sampler("residual-floor", s.residual_floor,
             "The residual is floored, max(p - q, eps) with eps = 1/100 (clamp(min=tiny)): "
             "tokens where p <= q, even p = 0, get fallback mass.",
             "vLLM review #13933 (v0 rejection sampler docstring)",
             _w(["0", "1"], ["1", "0"])),
    _sampler("residual-plus-epsilon", s.residual_plus_epsilon,
             "An epsilon (1/100) added to the residual to dodge 0/0: every token gets "
             "fallback mass, including tokens with p = 0.",
             f"{_SHEET}, section 1 (do not add an epsilon to dodge 0/0)",
             _w(["0", "1"], ["1", "0"])),
    _sampler("padded-lanes", s.padded_lanes,
             "The floored residual is taken over a vocabulary padded by two lanes, so the "
             "fallback can emit ids >= V.", "vLLM GHSA-8wr5-jm2h-8r4f (padded lanes)",
             _w(["0", "1"], ["1", "0"])),
    _sampler("residual-without-clamp", s.residual_without_clamp,
             "The fallback draws from p - q without max(., 0): negative weights, a crash "
             "on valid input whenever a rejection happens.", f"{_SHEET}, section 1",
             _w(["0", "1"], ["1", "0"])),
    _sampler("residual-normalised-eagerly", s.residual_normalised_eagerly,
             "Normalises the residual before the acceptance test: when p = q exactly the "
             "residual is 0 and normalising it is 0/0 (NaN in float code). Wrong only at "
             "p = q.", "SGLang #22643 (zero-mass fallback, NaN from 0/0)",
             _w(["1", "0"], ["1", "0"])),
    _sampler("argmax-residual", s.argmax_residual,
             "Greedy fallback: emits argmax of the residual. With two tokens the residual "
             "is one-hot, so the bug shows only from vocabulary 3.",
             "SGLang #22643 (argmax fallback)", _w(["1/2", "1/2", "0"], ["0", "0", "1"])),
    _sampler("fallback-next-token", s.fallback_next_token,
             "On rejection emits the next id, (x + 1) mod V: the residual's only token when "
             "V = 2, wrong from vocabulary 3.", None,
             _w(["0", "0", "1"], ["1", "0", "0"])),
    _sampler("fallback-over-proposed", s.fallback_over_proposed,
             "Builds the fallback only over tokens the draft can propose (q > 0): a token "
             "with q = 0 < p is never emitted (here the fallback is empty and the draw "
             "crashes). Wrong only with zeros in q.",
             f"{_SHEET}, section 1 (a final vector over proposed tokens only)",
             _w(["0", "1"], ["1", "0"])),
    _sampler("fallback-p-after-one-hot", s.fallback_p_after_onehot,
             "One-hot verification (accept with probability p(x)) whose fallback is p "
             "itself instead of p with x removed: x gets mass twice.", f"{_SHEET}, section 2",
             _w(["1/2", "1/2"], ["0", "1"])),
    _sampler("positionwise-residual", s.positionwise_residual,
             "The residual is taken position-wise over candidate lists sorted by p and by q, "
             "so each difference mixes two tokens (here it is all zero and the draw "
             "crashes).", f"{_SHEET}, section 5 (candidate lists with different supports)",
             _w(["0", "1"], ["1", "0"])),
    _sampler("shared-uniform-fallback", s.shared_uniform,
             "One uniform drives the test and the inverse-CDF fallback draw: after a "
             "rejection u >= p(x)/q(x), so the fallback favours later ids. Exact for V = 2 "
             "(one-hot residual), wrong from vocabulary 3.",
             "FlashInfer #424 (one uniform reused)",
             _w(["1/3", "1/3", "1/3"], ["0", "0", "1"])),
    _sampler("inclusive-uniform", s.inclusive_uniform,
             "Accepts when u <= p/q with u on the float32 grid {k / 2^24}, 0 included: "
             "u = 0 accepts a token with p = 0 (mass 2^-24 q(x)). Judged with "
             "uniform_bits = 24.", "SGLang #35771", _w(["0", "1"], ["1", "0"]),
             uniform_bits=24),
    _sampler("zero-uniform-accepts-all", s.always_accept,
             "A degenerate uniform that is always 0 makes u <= p/q true for every draft: "
             "the output is q.", "vllm-ascend #13766", _w(["0", "1"], ["1", "0"])),
    _sampler("inverted-ratio", s.inverted_ratio,
             "Accepts with min(1, q/p) instead of min(1, p/q): tokens the draft over-rates "
             "are kept, even with p = 0.", None, _w(["0", "1"], ["1", "0"])),
    _sampler("argmax-draft-softmax-q", s.argmax_draft_softmax_q,
             "The draft proposes argmax q, but the ratio uses the softmax q: the proposal "
             "law is one-hot, so the correct ratio is p(x)/1.", "transformers #32867",
             _w(["1/2", "1/2"], ["1/2", "1/2"])),
    _sampler("greedy-at-temperature", s.greedy_at_temperature,
             "Greedy verification (keep x iff x = argmax p, else emit argmax p) used while "
             "the target samples: the output is one-hot at argmax p.", "SGLang #31214",
             _w(["1/2", "1/2"], ["0", "1"])),
    _sampler("draft-tempered-ratio-untempered", pipeline_rules.draft_tempered_ratio_untempered,
             "The draft samples at temperature 1/2 (q^2 renormalised) while the ratio and "
             "residual use the untempered q: the ratio is not the proposal law's.",
             "transformers #47932 (raw logits vs processed sampling)",
             _w(["2/3", "1/3"], ["2/3", "1/3"])),
    _sampler("draft-filtered-ratio-default", pipeline_rules.draft_filtered_ratio_default,
             "The draft samples from its top-2 filtered law while verification uses "
             "probabilities computed with default parameters (unfiltered); identical to the "
             "textbook rule for V = 2, wrong from vocabulary 3.", "vLLM #9834",
             _w(["0", "3/5", "2/5"], ["1/5", "2/5", "2/5"])),
    _sampler("acceptance-residual-mismatch",
             pipeline_rules.ratio_and_residual_on_different_pipelines,
             "Acceptance computed on the tempered draft law, residual on the raw one: here "
             "p = q, so the raw residual is empty although tempered drafts get rejected.",
             "EAGLE before 2025-04 (leaf token from unprocessed logits); reference sheet, "
             "section 5", _w(["2/3", "1/3"], ["2/3", "1/3"])),
    _sampler("multiround-original-p", multidraft.multiround_original_p,
             "Two i.i.d. siblings, each tested against the original p instead of the "
             "running residual: a token gets a second chance (the sheet's example gives "
             "(4/9, 5/9) for p = (1/3, 2/3)).", f"{_SHEET}, section 3 (SpecInfer)",
             _w(["1/2", "1/2"], ["0", "1"])),
    _sampler("multiround-sorted-siblings", multidraft.multiround_sorted_siblings,
             "Sorts the i.i.d. siblings by token id before multi-round verification: the "
             "first sibling is then the smaller id, no longer a draw from q.",
             f"{_SHEET}, section 3 (sorting siblings)", _w(["1/2", "1/2"], ["1/2", "1/2"])),
    _sampler("rrs-plain-q", multidraft.rrs_plain_q,
             "Drafts drawn without replacement but the ratio and residual use the plain q "
             "(the sheet's example emits token 2 with probability 1 instead of 3/4).",
             f"{_SHEET}, section 3 (recursive rejection sampling)",
             _w(["0", "2/3", "1/3"], ["2/3", "1/3", "0"])),
    _sampler("spectr-rho-one", multidraft.spectr_rho_one,
             "SpecTr k-sequential with k = 2 and rho = 1: 1 - (1 - beta)^k > rho beta, so "
             "the fallback has negative weights (a crash) or the output is biased.",
             "Sun et al., NeurIPS 2023", _w(["1/2", "1/2"], ["0", "1"])),
)

_LOSSY_BY_DESIGN = (
    _sampler("lenient-acceptance", s.lenient,
             "Relaxed acceptance min(1, 2 p/q) with the textbook fallback: faster, and "
             "lossy by design. Largest exact TV found: 1/2 (the draft's token always kept).",
             f"{_SHEET}, section 5 (lenience factors)", _w(["1/2", "1/2"], ["0", "1"]),
             lossy_by_design=True, max_tv=Fraction(1, 2)),
    _sampler("typical-acceptance", s.typical_acceptance,
             "Medusa's typical acceptance: keep x when p(x) > min(0.09, 0.3 exp(-H(p))), "
             "else y ~ p. Lossy by design; largest exact TV found 10/11, where a token with "
             "p = 1/11 is always kept.", "Cai et al., Medusa, 2024",
             _w(["1/11", "10/11"], ["1", "0"]), lossy_by_design=True,
             max_tv=Fraction(10, 11)),
    _sampler("deterministic-tree-threshold", multidraft.deterministic_tree_threshold,
             "The one-hot tree with threshold_acc = 1/2: a sibling is accepted with "
             "min(1, 2 r(x)). Lossy by design; largest exact TV found 1/2.",
             "SGLang threshold_single / threshold_acc", _w(["1/2", "1/2"], ["0", "1"]),
             lossy_by_design=True, max_tv=Fraction(1, 2)),
)


def _batch(name: str, fn: Callable[..., Any], gamma: int, lossless: bool, summary: str,
           source: str, *, faithful: bool = False, convention: str = "batch") -> Entry:
    """A batch kernel (``--signature batch``, or a batched chain or hf function) judged at
    ``gamma`` drafts and V = 2; the witness is the audit's own (the smallest failing case
    of the batch panel)."""
    from specexact.torch.batch import BatchKernel

    kernel = BatchKernel(fn, k=gamma, faithful=faithful, convention=convention)
    return Entry(name, "batch", lossless, kernel, summary, source, None, vocab_sizes=(2, 2))


_SECTION_11 = "reference sheet, section 11"
def _have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


#: Decided once: a failed import is not cached, so asking again would search the path again.
_TORCH = _have_torch()


def _batch_entries() -> tuple[Entry, ...]:
    """The batch kernels' entries; none where torch is not installed (see :func:`left_out`)."""
    if not _TORCH:
        return ()
    from specexact.counterexamples import batch_kernels as bk

    return (
        _batch("batch-vllm-rejection", bk.vllm_rejection, 2, True,
               "vLLM's native rejection sampler over a batch: one request at a time with its own "
               "generator, a uniform per drafted position, the residual on rejection, the bonus "
               "after the last real draft. Every batch property holds.",
               "vLLM v1 rejection sampler (native path)"),
        _batch("batch-flashinfer-chain", bk.flashinfer_chain, 2, True,
               "FlashInfer's chain speculative sampling in torch: the batch's uniforms in one "
               "tensor (each row's from its own generator), acceptance as a cumulative product "
               "masked by the padding, then the correction token. Every batch property holds.",
               "FlashInfer chain_speculative_sampling"),
        *(_batch(f"batch-block-verification-gamma{g}", bk.block_verification, g, True,
                 "Block verification (Sun et al.) per request with an independent uniform per "
                 "position: path weights min(1, w p/q), kept from the deepest position back with "
                 "h_i = s_i / (s_i + 1 - w_i). Lossless.",
                 "Sun et al., ICLR 2025; vLLM #40819") for g in (2, 3, 4)),
        *(_batch(f"batch-block-shared-uniform-gamma{g}", bk.block_verification_shared_uniform,
                 g, False,
                 "Block verification with one uniform per request for every position instead of "
                 "one per position: exact at one draft, biased from two (the overconfident-draft "
                 "row of the panel, V = 2).",
                 "a downstream backport of vLLM #40819 (one uniform per request, after an "
                 "automated review's suggestion)") for g in (2, 3)),
        _batch("batch-hf-loop", bk.hf_batched, 2, True,
               "transformers' _speculative_sampling written for a batch: ratios, a uniform per "
               "position from the request's generator, n_matches from the cumulative sum of the "
               "rejections, then the residual or the bonus. Every batch property holds.",
               "transformers _speculative_sampling, batched"),
        _batch("batch-hf-fewest-matches", bk.hf_batched_fewest_matches, 2, False,
               "The batched transformers loop kept rectangular: every row is cut to the batch's "
               "fewest matches and a row that had accepted there emits a fresh target token, so "
               "a row's law depends on its neighbours.",
               "padded batched assisted generation (rows cut to the shortest acceptance)"),
        _batch("batch-vllm-flat-mixed-seeded", bk.vllm_flat, 2, True,
               "vLLM v1's flattened layout (cu_num_draft_tokens): uniforms for every drafted "
               "token from the global generator, then each seeded row's slice from its own "
               "generator; seeded and unseeded rows mixed. Every batch property holds.",
               "vLLM v1 rejection sampler (generate_uniform_probs)"),
        _batch("batch-vllm-flat-row-offset", bk.vllm_flat_row_offset, 2, False,
               "The flattened layout indexed by the row number instead of the token offset: "
               "from two drafts a row reads its neighbour's uniforms (each row's law is right; "
               "the rows are dependent).",
               "vLLM v1 flattened layout, offset bug class (TensorRT-LLM #19487's symptom)"),
        _batch("batch-compacted-rows", bk.compacted_rows, 2, True,
               "Rows with no draft decoded apart, the others gathered (index_select) and "
               "verified with their own generators mapped back. Every batch property holds.",
               "per-request torch.Generator rows (vLLM seeded_seqs)"),
        _batch("batch-compacted-generators", bk.compacted_generators, 2, False,
               "The gathered batch takes generators by its row number: next to a request "
               "with no draft, a seeded request draws from its neighbour's generator.",
               "per-request generators after compaction (vLLM seeded_seqs keyed by batch index)"),
        _batch("batch-mixed-seeded-empty-like", bk.mixed_batch_empty_like, 2, False,
               "vLLM v0's recovered-token noise in torch.empty_like, filled per seeded request "
               "and for the whole batch only when no request is seeded: an unseeded row next to "
               "a seeded one reads uninitialised memory.",
               f"{_SECTION_11}; vLLM v0 mixed seeded/unseeded batch"),
        _batch("batch-placeholder-accepted", bk.placeholder_accepted, 2, False,
               "Acceptance computed at every position, padding included: the -1 placeholder is "
               "read as a token id and can be accepted, so a padded position emits.",
               "vLLM #46533; FlashInfer #879"),
        _batch("batch-shared-stream", bk.shared_stream, 2, False,
               "Unseeded requests draw from one stream state, so their uniforms are the same "
               "draws: each row's law is right, the rows are dependent.",
               "TensorRT-LLM #19487"),
        _batch("batch-ignored-seeds", bk.ignored_seeds, 2, False,
               "Per-request generators ignored under speculative decoding: every row draws "
               "from the global generator, so a seed does not fix a request's tokens.",
               "vLLM #6038 (its test never checked seeds, #6743)"),
        _batch("batch-half-when-batched", bk.trtllm_half_when_batched, 1, False,
               "A batched fast path computing in float16 when B > 1: a row's law depends on "
               "the batch size (seen in the faithful float32 run).",
               "vLLM RFC #54506; MLX-LM #1423", faithful=True),
        _batch("batch-hf-signature", bk.hf_speculative_sampling_batched, 2, True,
               "transformers' _speculative_sampling with a batch dimension, audited in its own "
               "shape (--signature hf --batched): each row's ratios, uniforms and n_matches, "
               "then its residual or bonus. Row law, independence and batch invariance hold.",
               "transformers _speculative_sampling, batched", convention="hf"),
        _batch("batch-hf-signature-batch-sum", bk.hf_speculative_sampling_batch_sum, 2, False,
               "The batched port keeping transformers' batch-1 n_matches = (...).sum(): the "
               "count is the whole batch's, so a row emits its neighbours' accepted drafts.",
               "porting transformers _speculative_sampling to a batch", convention="hf"),
        _batch("batch-chain-global", bk.chain_global, 2, True,
               "vLLM v0's chain shape without generators (--signature chain --batched): "
               "uniforms [B, k] from the global generator, the first rejection's residual or "
               "the bonus. Row law, independence and batch invariance hold.",
               "vLLM v0 RejectionSampler (unseeded batch)", convention="chain"),
        _batch("batch-chain-shared-row", bk.chain_global_shared_row, 2, False,
               "The chain shape with one row of uniforms broadcast over the batch: each row's "
               "law is right, the rows are dependent.",
               "TensorRT-LLM #19487's bug class in the chain shape", convention="chain"),
    )


def _step_entries(rules: Sequence[Any] = STEP_RULES) -> tuple[Entry, ...]:
    return tuple(Entry(rule.name, "step", rule.lossless, rule.rule, rule.summary,
                       rule.source, rule.witness, stateful=rule.stateful,
                       target_kind=rule.target_kind, processors=rule.processors)
                 for rule in rules)


def _new_sampler_entries(rules: Sequence[Any]) -> tuple[Entry, ...]:
    return tuple(_sampler(r.name, r.rule, r.summary, r.source, r.witness,
                          uniform_bits=r.uniform_bits) for r in rules)


def _crossvocab_entries() -> tuple[Entry, ...]:
    return tuple(Entry(rule.name, "cross-vocab", rule.lossless, rule.rule, rule.summary,
                       rule.source, rule.witness) for rule in CROSSVOCAB_RULES)


_ENTRIES: tuple[Entry, ...] = tuple(
    sorted((*_LOSSLESS_SAMPLERS, *_WRONG_SAMPLERS, *_LOSSY_BY_DESIGN, *_step_entries(),
            *_step_entries(PROCESSOR_RULES), *_step_entries(ALGORITHM_STEP_RULES),
            *_new_sampler_entries(ALGORITHM_SAMPLER_RULES), *_crossvocab_entries(),
            *_batch_entries()),
           key=lambda e: (not e.lossless, e.lossy_by_design, e.kind)))


def catalogue() -> tuple[Entry, ...]:
    """Every rule in the catalogue: lossless ones first, lossy-by-design ones last."""
    return _ENTRIES


def left_out() -> tuple[str, ...]:
    """Why parts of the catalogue are not in :func:`catalogue` on this installation: one
    line each, naming the extra that brings them (empty when nothing is left out).

    The batch kernels are torch code (``--signature batch``): without torch they are
    left out, and a catalogue audit says so instead of failing.
    """
    if not _TORCH:
        return ("the batch kernels' rules (--signature batch) need torch, which is not "
                "installed: pip install 'specexact[torch]'",)
    return ()


def get(name: str) -> Entry:
    """The entry called ``name``; raises KeyError listing close names."""
    return by_name(_ENTRIES, name, "catalogue entry")
