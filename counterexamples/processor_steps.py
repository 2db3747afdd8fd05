"""Chain steps around the sampler: processors with state, stopping, and how they go wrong.

Each step follows the protocol ``step(target, draft, prefix, rng,
processors=pipeline)`` (a :class:`specexact.steps.processors.ProcessorPipeline`):
the target to keep is the *processed* law after the emitted prefix, at every
verified position and at the bonus position, and a sequence ends where the
pipeline's stopping says.  The draft is left unprocessed: correctness only
needs the ratio and the residual to use the law the draft really drew from.

The wrong variants each carry one bug shape from public reports (reference
sheet, section 7); their witnesses live in :mod:`specexact.counterexamples.processor_rules`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from specexact.counterexamples.tree_steps import residual
from specexact.numbers import ZERO
from specexact.steps.processors import NO_PROCESSORS, ProcessorPipeline, TokenGrammar

__all__ = [
    "beam_draft",
    "bf16",
    "bf16_draft_exact_ratio",
    "cap_before_stop",
    "continue_after_stop",
    "exact_match_paths",
    "first_draft_unverified",
    "force_reject_recover_from_p",
    "one_hot_fallback",
    "over_trimmed_draft",
    "processed_chain",
    "rejection_one_late",
    "rollback_keeps_rejected",
    "sampler_match",
    "stale_window_state",
]

Rows = Callable[[tuple[Any, ...], Any], Any]


def _draft_block(draft: Any, ctx: tuple[Any, ...], rng: Any, gamma: int
                 ) -> tuple[list[Any], list[Any]]:
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    return xs, qs


def _verify(target: Any, ctx: tuple[Any, ...], xs: list[Any], qs: list[Any], rng: Any,
            verified: Rows, bonus: Rows, processors: ProcessorPipeline, *,
            stop_mid_block: bool = True) -> tuple[Any, ...]:
    """The chain rule with ``verified(emitted, row)`` at the drafted positions and
    ``bonus(emitted, row)`` at the bonus position; rows are read lazily (only once the
    drafts before them are accepted)."""
    for i, x in enumerate(xs):
        seen = (*ctx, *xs[:i])
        p = verified(seen, target(seen))
        if not rng.random() * qs[i][x] < p[x]:
            return (*xs[:i], rng.categorical(residual(p, qs[i])))
        if stop_mid_block and processors.finished((*seen, x)):
            return tuple(xs[:i + 1])
    seen = (*ctx, *xs)
    return (*xs, rng.categorical(bonus(seen, target(seen))))


def processed_chain(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                    processors: ProcessorPipeline = NO_PROCESSORS, *, gamma: int = 2,
                    bonus_only: bool = False) -> tuple[Any, ...]:
    """The chain rule on the processed target: ``processors(emitted, target(emitted))`` at
    every verified position and at the bonus, stopping after an accepted EOS or stop
    sequence and at max_new_tokens.

    ``bonus_only=True`` is the bug of treating the processors as argmax-invariant: the
    verified positions use the raw rows and only the bonus token is processed.
    """
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    raw: Rows = lambda seen, row: row  # noqa: E731 - the unprocessed row
    verified = raw if bonus_only else processors
    return processors.cut(ctx, _verify(target, ctx, xs, qs, rng, verified, processors,
                                       processors))


def stale_window_state(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                       processors: ProcessorPipeline = NO_PROCESSORS, *, gamma: int = 2,
                       history: str = "step start") -> tuple[Any, ...]:
    """Bugs in the processors' state inside the window (the rows are otherwise right).

    ``history`` is what the processors see at each position:

    * ``"step start"``: the state is updated once per step, so every position of
      the window sees the emitted prefix as it was when the step began (SGLang
      #33643: the penalizer fed one token per step; min_new_tokens counting steps);
    * ``"shared counter"``: the draft and verify copies share one counter: the
      drafts were counted when drafted (rejected ones included) and the accepted
      ones again when verified (vmlx-swift #357/#361);
    * ``"grammar at step start"``: only the grammar is stale: its matcher is
      advanced once per step, by the bonus token (LMDeploy #4551);
    * ``"no grammar after boundary"``: when the window holds the reasoning-boundary
      token, the positions after it (and the bonus row) get no grammar mask
      (vLLM #44297).
    """
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    rows = _stale_rows(processors, ctx, xs, history)
    return processors.cut(ctx, _verify(target, ctx, xs, qs, rng, rows, rows, processors))


def _without_grammar(processors: ProcessorPipeline) -> ProcessorPipeline:
    return ProcessorPipeline(tuple(p for p in processors.processors
                                   if not isinstance(p, TokenGrammar)), processors.stopping)


def _stale_rows(processors: ProcessorPipeline, ctx: tuple[Any, ...], xs: list[Any],
                history: str) -> Rows:
    if history == "step start":
        return lambda seen, row: processors(ctx, row)
    if history == "shared counter":
        return lambda seen, row: processors((*ctx, *xs, *seen[len(ctx):]), row)
    grammars = [p for p in processors.processors if isinstance(p, TokenGrammar)]
    others = _without_grammar(processors)
    if history == "grammar at step start":
        def rows(seen: tuple[Any, ...], row: Any) -> Any:
            weights = others.weights(seen, row)
            for grammar in grammars:
                weights = grammar(tuple(int(t) for t in ctx), weights)
            return _normalised(weights)
        return rows
    if history == "no grammar after boundary":
        def unmasked(seen: tuple[Any, ...], row: Any) -> Any:
            opened = any(g.constrained(tuple(int(t) for t in ctx)) is not None
                         for g in grammars)
            return processors(seen, row) if opened else others(seen, row)
        return unmasked
    msg = f"history={history!r} is not a known bug shape"
    raise ValueError(msg)


def _normalised(weights: Sequence[Fraction]) -> tuple[Fraction, ...]:
    total = sum(weights, ZERO)
    return tuple(w / total for w in weights)


def force_reject_recover_from_p(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                                processors: ProcessorPipeline = NO_PROCESSORS, *,
                                gamma: int = 2) -> tuple[Any, ...]:
    """Bug: a draft the processors forbid (processed p(x) = 0) is force-rejected with q
    zeroed, and the recovery token drawn from the processed p instead of the residual
    (a vLLM fork, local-inference-lab #476)."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    for i, x in enumerate(xs):
        seen = (*ctx, *xs[:i])
        p = processors(seen, target(seen))
        if p[x] == 0:
            return processors.cut(ctx, (*xs[:i], rng.categorical(p)))
        if not rng.random() * qs[i][x] < p[x]:
            return processors.cut(ctx, (*xs[:i], rng.categorical(residual(p, qs[i]))))
        if processors.finished((*seen, x)):
            return tuple(xs[:i + 1])
    seen = (*ctx, *xs)
    return processors.cut(ctx, (*xs, rng.categorical(processors(seen, target(seen)))))


def continue_after_stop(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                        processors: ProcessorPipeline = NO_PROCESSORS, *,
                        gamma: int = 2) -> tuple[Any, ...]:
    """Bug: an EOS (or stop sequence) accepted mid-block does not stop generation; the
    rest of the block is verified and emitted (transformers #47912)."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    return _verify(target, ctx, xs, qs, rng, processors, processors, processors,
                   stop_mid_block=False)


def cap_before_stop(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                    processors: ProcessorPipeline = NO_PROCESSORS, *,
                    gamma: int = 2) -> tuple[Any, ...]:
    """Bug: the step's output is cut at max_new_tokens first, and the stop sequences are
    checked only when the cap did not cut it, so tokens after a stop leak (SGLang #31599)."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    out = _verify(target, ctx, xs, qs, rng, processors, processors, processors,
                  stop_mid_block=False)
    cap = processors.stopping.max_new_tokens
    if cap is not None and len(ctx) + len(out) >= cap:
        return out[:cap - len(ctx)]
    return processors.cut(ctx, out)


def first_draft_unverified(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                           gamma: int = 2) -> tuple[Any, ...]:
    """Bug: the first (n-gram) draft is committed without verification; only the later
    drafts are tested (ohdearquant/lattice #258)."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    for i in range(1, gamma):
        seen = (*ctx, *xs[:i])
        p = target(seen)
        if not rng.random() * qs[i][xs[i]] < p[xs[i]]:
            return (*xs[:i], rng.categorical(residual(p, qs[i])))
    return (*xs, rng.categorical(target((*ctx, *xs))))


def rollback_keeps_rejected(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                            gamma: int = 2) -> tuple[Any, ...]:
    """Bug: the rollback after a rejection is one token short: the rejected draft stays
    in the output before its replacement (kekzl/imp #667, accept/rollback off by one)."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    for i, x in enumerate(xs):
        p = target((*ctx, *xs[:i]))
        if not rng.random() * qs[i][x] < p[x]:
            return (*xs[:i + 1], rng.categorical(residual(p, qs[i])))
    return (*xs, rng.categorical(target((*ctx, *xs))))


def rejection_one_late(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                       gamma: int = 2) -> tuple[Any, ...]:
    """Bug: a rejection is handled one iteration late: the rejected draft is kept and the
    replacement drawn at the next position (openvino.genai #4190)."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    for i, x in enumerate(xs):
        p = target((*ctx, *xs[:i]))
        if not rng.random() * qs[i][x] < p[x]:
            later = (*ctx, *xs[:i + 1])
            if i + 1 < gamma:
                return (*xs[:i + 1], rng.categorical(residual(target(later), qs[i + 1])))
            return (*xs, rng.categorical(target(later)))
    return (*xs, rng.categorical(target((*ctx, *xs))))


def bf16(x: Fraction) -> Fraction:
    """``x`` rounded to bfloat16's 8 significant bits (round half to even), exactly."""
    if x <= 0:
        return Fraction(0)
    exponent = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** exponent > x:
        exponent -= 1
    scale = Fraction(2) ** (7 - exponent)
    return Fraction(round(x * scale)) / scale


def bf16_draft_exact_ratio(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                           gamma: int = 2) -> tuple[Any, ...]:
    """Bug: the draft samples from its probabilities in bf16 (8 significant bits,
    renormalised) while the ratio and residual use the exact q (DeepSpec #31/#30)."""
    ctx = tuple(prefix)
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical([bf16(w) for w in q]))
    return _verify(target, ctx, xs, qs, rng, _raw, _raw, NO_PROCESSORS)


def _raw(seen: tuple[Any, ...], row: Any) -> Any:
    return row


def _argmax(row: Sequence[Fraction]) -> int:
    best = 0
    for i in range(1, len(row)):
        if row[i] > row[best]:
            best = i
    return best


def beam_draft(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
               gamma: int = 2, one_hot: bool = True) -> tuple[Any, ...]:
    """Deterministic (beam / greedy) drafts, the draft's argmax at each position.

    Their proposal law is one-hot, so the right ratio is p(x)/1 and the residual p with
    x removed (``one_hot=True``, lossless).  ``one_hot=False`` verifies them with the
    draft's q(x) instead (apple/ml-recurrent-drafter #6).
    """
    ctx = tuple(prefix)
    xs: list[int] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        x = _argmax(q)
        xs.append(x)
        qs.append(tuple(Fraction(int(i == x)) for i in range(len(q))) if one_hot else q)
    return _verify(target, ctx, xs, qs, rng, _raw, _raw, NO_PROCESSORS)


def one_hot_fallback(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                     processors: ProcessorPipeline = NO_PROCESSORS, *,
                     gamma: int = 2) -> tuple[Any, ...]:
    """Draft probabilities dropped (not kept by the drafter): each sampled draft is
    verified as if q were one-hot at it, accept with p(x), else p with x removed.
    Wasteful but lossless (vLLM #38174, #16899)."""
    ctx = tuple(prefix)
    xs, _ = _draft_block(draft, ctx, rng, gamma)
    for i, x in enumerate(xs):
        seen = (*ctx, *xs[:i])
        p = processors(seen, target(seen))
        if not rng.random() < p[x]:
            rest = [ZERO if t == x else w for t, w in enumerate(p)]
            return (*xs[:i], rng.categorical(rest))
        if processors.finished((*seen, x)):
            return tuple(xs[:i + 1])
    seen = (*ctx, *xs)
    return processors.cut(ctx, (*xs, rng.categorical(processors(seen, target(seen)))))


def sampler_match(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                  processors: ProcessorPipeline = NO_PROCESSORS, *,
                  gamma: int = 2) -> tuple[Any, ...]:
    """Exact-match ("sampler-match") verification: y_i ~ processed p at each position,
    drafts kept while x_i == y_i, and y emitted at the first mismatch.  Every emitted
    token is a target sample: lossless (lablup/mlxcel #992, refuting #902)."""
    ctx = tuple(prefix)
    xs, _ = _draft_block(draft, ctx, rng, gamma)
    out: list[Any] = []
    for x in xs:
        seen = (*ctx, *out)
        y = rng.categorical(processors(seen, target(seen)))
        out.append(y)
        if processors.finished((*seen, y)) or y != x:
            return tuple(out)
    seen = (*ctx, *out)
    return processors.cut(ctx, (*out, rng.categorical(processors(seen, target(seen)))))


def exact_match_paths(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                      paths: int = 2, shared: bool = True) -> tuple[Any, ...]:
    """Exact-match verification of ``paths`` candidate tokens drawn from q.

    ``shared=True``: one target sample y ~ p, emitted (the candidates only save work
    when one matches): lossless.  ``shared=False``: an independent target sample per
    candidate path, and the first matching path kept: a token gets several chances
    (fms-extras #12/#17).
    """
    ctx = tuple(prefix)
    q = draft(ctx)
    p = target(ctx)
    candidates = [rng.categorical(q) for _ in range(paths)]
    if shared:
        return (rng.categorical(p),)
    samples = [rng.categorical(p) for _ in range(paths)]
    for x, y in zip(candidates, samples, strict=True):
        if x == y:
            return (x,)
    return (samples[0],)


def over_trimmed_draft(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                       gamma: int = 2) -> tuple[Any, ...]:
    """The draft's cache trimmed one token too far: its rows are read at a context
    missing the last emitted token.  The drafts come from those rows and the ratio uses
    the same rows, so acceptance drops but the law is kept (true q)."""
    ctx = tuple(prefix)
    short = ctx[:-1]
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft((*short, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    return _verify(target, ctx, xs, qs, rng, _raw, _raw, NO_PROCESSORS)
