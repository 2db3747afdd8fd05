"""Speculative decoding with a draft of another vocabulary: the rules, right and wrong.

Each rule is a cross-vocabulary step (see :mod:`specexact.crossvocab.decode`):
``step(target, draft, prefix, rng) -> tuple of target ids``, with ``prefix``
the target ids emitted so far.  The draft's context is the draft's canonical
tokenization of the emitted text, followed by the draft's own tokens.

The three lossless families follow Timor et al., "Accelerating LLM Inference
with Lossless Speculative Decoding Algorithms for Heterogeneous Vocabularies"
(ICML 2025):

* TLI, token-level intersection: the draft's row restricted to the strings
  both vocabularies hold and renormalised, then the usual chain rule over
  target ids with that restricted q;
* SLEM, string-level exact match: the draft's text re-tokenized by the
  target, each position kept only when the target's own sample is that
  token (lossless as any proposal verified by exact match);
* SLRS, string-level rejection sampling, written exactly: the proposal is the
  first target token of the draft's text (greedy longest match, with enough
  look-ahead to settle it), and its law Q(t) is the draft's probability of
  the strings starting with t, summed over every draft tokenization.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

from specexact.crossvocab import continuation_law

__all__ = [
    "slem",
    "slem_compares_draft_ids",
    "slem_retokenized_target_context",
    "slrs",
    "slrs_canonical_draft_probability",
    "slrs_drops_partial_token",
    "tli",
    "tli_oov_by_index",
    "tli_unnormalised_q",
]

Ids = tuple[int, ...]


def _draft_context(target: Any, draft: Any, prefix: Ids) -> Ids:
    return tuple(draft.vocab.encode(target.vocab.decode(prefix)))


def _residual(p: Any, q: Any) -> list[Any]:
    return [max(a - b, 0) for a, b in zip(p, q, strict=True)]


def _restricted(target: Any, draft: Any, row: Any) -> list[Any]:
    """The draft row moved onto target ids, kept only on the strings both vocabularies hold."""
    q: list[Any] = [Fraction(0)] * len(target.vocab)
    for d, weight in enumerate(row):
        t = target.vocab.get(draft.vocab[d])
        if t is not None:
            q[t] += weight
    return q


def _verify_chain(target: Any, prefix: Ids, rng: Any, drafts: list[Any],
                  qs: list[Any]) -> tuple[Any, ...]:
    """The textbook chain over target ids: accept x with min(1, p(x)/q(x)), else the residual."""
    out: list[Any] = []
    for x, q in zip(drafts, qs, strict=True):
        p = target(prefix + tuple(out))
        if rng.random() * q[x] < p[x]:
            out.append(x)
            continue
        out.append(rng.categorical(_residual(p, q)))
        return tuple(out)
    out.append(rng.categorical(target(prefix + tuple(out))))
    return tuple(out)


# --------------------------------------------------------------------------
# TLI: token-level intersection
# --------------------------------------------------------------------------


def _tli(target: Any, draft: Any, prefix: Ids, rng: Any, gamma: int, *,
         renormalise_ratio: bool, oov_by_index: bool) -> tuple[Any, ...]:
    tv, dv = target.vocab, draft.vocab
    ctx = _draft_context(target, draft, prefix)
    drafts: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        row = draft(ctx)
        q = _restricted(target, draft, row)
        shared = sum(q)
        if not shared:
            break  # the draft has no mass on a shared token here: stop drafting
        normalised = [w / shared for w in q]
        if oov_by_index:
            # Bug: draw from the whole draft row and map a token the target lacks
            # to the target id with the same index.
            d = rng.categorical(row)
            t = tv.get(dv[d])
            x: Any = t if t is not None else int(d)
            ctx = (*ctx, int(d))
        else:
            x = rng.categorical(normalised)
            ctx = (*ctx, dv.id(tv[x]))
        drafts.append(x)
        qs.append(normalised if renormalise_ratio else q)
    return _verify_chain(target, prefix, rng, drafts, qs)


def tli(target: Any, draft: Any, prefix: Ids, rng: Any, gamma: int = 2) -> tuple[Any, ...]:
    """TLI: draft from q restricted to the shared strings and renormalised, verified with it."""
    return _tli(target, draft, prefix, rng, gamma, renormalise_ratio=True, oov_by_index=False)


def tli_unnormalised_q(target: Any, draft: Any, prefix: Ids, rng: Any,
                       gamma: int = 2) -> tuple[Any, ...]:
    """Wrong: drafts from the renormalised restricted q, but ratio and residual use the
    restricted q before renormalising (its mass is below 1 when the draft likes a token
    the target lacks)."""
    return _tli(target, draft, prefix, rng, gamma, renormalise_ratio=False, oov_by_index=False)


def tli_oov_by_index(target: Any, draft: Any, prefix: Ids, rng: Any,
                     gamma: int = 2) -> tuple[Any, ...]:
    """Wrong: drafts from the whole draft row; a token the target lacks becomes the target
    id with the same index, while the ratio uses the restricted q."""
    return _tli(target, draft, prefix, rng, gamma, renormalise_ratio=True, oov_by_index=True)


# --------------------------------------------------------------------------
# SLEM: string-level exact match
# --------------------------------------------------------------------------


def _draft_text(draft: Any, ctx: Ids, rng: Any, gamma: int) -> tuple[str, list[Any]]:
    text, ids = "", []
    for _ in range(gamma):
        d = rng.categorical(draft(ctx))
        ids.append(d)
        ctx = (*ctx, int(d))
        text += draft.vocab[d]
    return text, ids


def _slem(target: Any, draft: Any, prefix: Ids, rng: Any, gamma: int, *,
          compare_draft_ids: bool = False, canonical_context: bool = False
          ) -> tuple[Any, ...]:
    tv = target.vocab
    text, draft_ids = _draft_text(draft, _draft_context(target, draft, prefix), rng, gamma)
    proposal = tv.encode(text)
    # Bug (canonical_context): the target's context re-tokenized canonically from the text.
    base = tv.encode(tv.decode(prefix)) if canonical_context else prefix
    out: list[Any] = []
    for i, x in enumerate(proposal):
        y = rng.categorical(target(base + tuple(out)))
        # Bug (compare_draft_ids): the target's id compared with the draft's id at the
        # same position, as if the two vocabularies numbered strings alike.
        matched = (i < len(draft_ids) and y == draft_ids[i]) if compare_draft_ids else y == x
        if matched:
            out.append(x)
            continue
        out.append(y)
        return tuple(out)
    out.append(rng.categorical(target(base + tuple(out))))
    return tuple(out)


def slem(target: Any, draft: Any, prefix: Ids, rng: Any, gamma: int = 2) -> tuple[Any, ...]:
    """SLEM: the draft's text re-tokenized by the target, kept while the target's own samples
    match it; the first mismatching sample (or a bonus token) ends the call."""
    return _slem(target, draft, prefix, rng, gamma)


def slem_compares_draft_ids(target: Any, draft: Any, prefix: Ids, rng: Any,
                            gamma: int = 2) -> tuple[Any, ...]:
    """Wrong: the match test compares the target's sampled id with the draft's token id."""
    return _slem(target, draft, prefix, rng, gamma, compare_draft_ids=True)


def slem_retokenized_target_context(target: Any, draft: Any, prefix: Ids, rng: Any,
                                    gamma: int = 2) -> tuple[Any, ...]:
    """Wrong: the target reads its rows after the canonical tokenization of the emitted
    text, not after the tokens it emitted (a non-canonical tokenization treated as
    canonical)."""
    return _slem(target, draft, prefix, rng, gamma, canonical_context=True)


# --------------------------------------------------------------------------
# SLRS: string-level rejection sampling
# --------------------------------------------------------------------------


def _first_token_law(target: Any, draft: Any, ctx: Ids) -> list[Any]:
    """Q(t): P(the draft's text starts with target token t, greedy), summed over its
    tokenizations (the draft's string law over the look-ahead)."""
    tv = target.vocab
    q: list[Any] = [Fraction(0)] * len(tv)
    for text, prob in continuation_law(draft, ctx, tv.max_length).items():
        q[tv.first_token(text)] += prob
    return q


def _canonical_first_token_law(target: Any, draft: Any, ctx: Ids) -> list[Any]:
    """The bug: a string's draft probability taken from its canonical draft tokenization."""
    tv, dv = target.vocab, draft.vocab
    q: list[Any] = [Fraction(0)] * len(tv)
    for chars in itertools.product(dv.alphabet, repeat=tv.max_length):
        text = "".join(chars)
        prob, c = Fraction(1), ctx
        for d in dv.encode(text):
            prob *= draft(c)[d]
            c = (*c, d)
        q[tv.first_token(text)] += prob
    return q


def _slrs(target: Any, draft: Any, prefix: Ids, rng: Any, *, drop_partial: bool = False,
          canonical_probability: bool = False) -> tuple[Any, ...]:
    tv = target.vocab
    ctx = _draft_context(target, draft, prefix)
    p = target(prefix)
    if drop_partial:
        # Bug: two draft tokens, re-tokenized; the last target token may be partial, so it
        # is dropped and the first one left is taken as settled.
        text, _ = _draft_text(draft, ctx, rng, 2)
        settled = tv.encode(text)[:-1]
        if not settled:
            return (rng.categorical(p),)
        x: Any = settled[0]
    else:
        text, c = "", ctx
        while len(text) < tv.max_length:  # enough look-ahead to settle the first token
            d = rng.categorical(draft(c))
            c = (*c, int(d))
            text += draft.vocab[d]
        x = tv.first_token(text)
    q = _canonical_first_token_law(target, draft, ctx) if canonical_probability \
        else _first_token_law(target, draft, ctx)
    if rng.random() * q[x] < p[x]:
        return (x, rng.categorical(target((*prefix, x))))
    return (rng.categorical(_residual(p, q)),)


def slrs(target: Any, draft: Any, prefix: Ids, rng: Any) -> tuple[Any, ...]:
    """SLRS: propose the first target token of the draft's text, accept with
    min(1, p(t)/Q(t)) where Q sums the draft's tokenizations; residual on rejection,
    a bonus token on acceptance."""
    return _slrs(target, draft, prefix, rng)


def slrs_drops_partial_token(target: Any, draft: Any, prefix: Ids, rng: Any
                             ) -> tuple[Any, ...]:
    """Wrong: the proposal comes from re-tokenizing two draft tokens and dropping the last
    target token as partial, but the ratio uses the look-ahead law Q."""
    return _slrs(target, draft, prefix, rng, drop_partial=True)


def slrs_canonical_draft_probability(target: Any, draft: Any, prefix: Ids, rng: Any
                                     ) -> tuple[Any, ...]:
    """Wrong: Q takes each string's draft probability from its canonical draft
    tokenization only, as if the draft never produced a non-canonical one."""
    return _slrs(target, draft, prefix, rng, canonical_probability=True)
