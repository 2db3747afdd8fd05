"""Planted wrong rules whose bug shows on only a few percent of random inputs.

Each one is right except in a narrow region that real bugs live in (issue
13): a residual with exactly three positive entries next to one zero in q,
p and q sharing a support smaller than V (the same top-k mask on both), a
residual with four positive entries (V = 5), a draft row read one position
late, a tree whose second sibling is accepted after the first was rejected,
a chain that trusts equal rows at one context, and a wrong bonus token (the
4th token of a gamma = 3 step).  ``tests/quality/test_search_power.py``
checks the default search finds each of them at several seeds;
``benchmarks/bench_search_power.py`` prints, per rule, the fraction of seeds
that find it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from specexact.counterexamples.samplers import normalise, residual

_ZERO = Fraction(0)


def _textbook_with_residual(p: list[Fraction], q: list[Fraction], rng: Any,
                            res: list[Fraction]) -> Any:
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(res)


def _drop_last_positive(res: list[Fraction]) -> list[Fraction]:
    out = list(res)
    last = max(i for i, r in enumerate(out) if r > 0)
    out[last] = _ZERO
    return out if any(out) else list(res)


def one_zero_three_residuals(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Wrong only when q has exactly one zero and the residual has three positive entries."""
    res = residual(p, q)
    if sum(b == 0 for b in q) == 1 and sum(r > 0 for r in res) == 3:
        res = _drop_last_positive(res)
    return _textbook_with_residual(p, q, rng, res)


def shared_smaller_support(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Wrong only when p and q have the same support, smaller than V, and differ there.

    As after one top-k mask applied to both rows: the rule then trusts the
    draft and accepts it outright.
    """
    support_p = {i for i, a in enumerate(p) if a > 0}
    support_q = {i for i, b in enumerate(q) if b > 0}
    if support_p == support_q and 2 <= len(support_p) < len(p):
        return rng.categorical(q)
    return _textbook_with_residual(p, q, rng, residual(p, q))


def four_residuals(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Wrong only when the residual has four positive entries (so V >= 5)."""
    res = residual(p, q)
    if sum(r > 0 for r in res) >= 4:
        res = _drop_last_positive(res)
    return _textbook_with_residual(p, q, rng, res)


# ---- vocabulary-parallel samplers: right while V fits in one shard (issue 25) ----


def sharded_uniform_shards(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Shards of 8 tokens: the fallback picks a shard with residual mass uniformly, then a
    token in it by its residual (the shards' residual totals are never all-reduced)."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    res = residual(p, q)
    shards = [range(start, min(start + 8, len(p))) for start in range(0, len(p), 8)]
    live = [shard for shard in shards if any(res[i] for i in shard)]
    shard = live[rng.categorical([Fraction(1)] * len(live))]
    return shard[rng.categorical([res[i] for i in shard])]


def sharded_by_target_mass(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Shards of 16 tokens: the shard is chosen by its share of p (what each rank already
    reduced for the softmax), not by its share of the residual."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    res = residual(p, q)
    width = 16
    starts = list(range(0, len(p), width))
    weights = [sum(p[s:s + width], _ZERO) if any(res[s:s + width]) else _ZERO for s in starts]
    start = starts[rng.categorical(weights)]
    return start + rng.categorical(res[start:start + width])


def gathered_local_residuals(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Two tensor-parallel ranks of 32 tokens: each normalises its own residual and the
    gathered vector is sampled, so every rank with residual mass weighs as much."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    res = residual(p, q)
    gathered: list[Fraction] = []
    for rank in range(0, len(p), 32):
        local = res[rank:rank + 32]
        total = sum(local, _ZERO)
        gathered += [r / total if total else _ZERO for r in local]
    return rng.categorical(gathered)


#: The vocabulary-parallel rules, with the shard size they are right within.
SHARDED_SAMPLERS = {
    "sharded-uniform-shards": (sharded_uniform_shards, 8),
    "sharded-by-target-mass": (sharded_by_target_mass, 16),
    "gathered-local-residuals": (gathered_local_residuals, 32),
}

PLANTED_SAMPLERS = {
    "one-zero-three-residuals": one_zero_three_residuals,
    "shared-smaller-support": shared_smaller_support,
    "four-residuals": four_residuals,
    **{name: rule for name, (rule, _) in SHARDED_SAMPLERS.items()},
}


def draft_row_late(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any
                   ) -> tuple[Any, ...]:
    """Chain, gamma = 2, whose residual at a rejection reads q one position late."""
    ctx = tuple(prefix)
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(2):
        qs.append(draft((*ctx, *xs)))
        xs.append(rng.categorical(qs[-1]))
    ps = [target((*ctx, *xs[:i])) for i in range(3)]
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            late = draft((*ctx, *xs[: i + 1]))
            res = residual(ps[i], late)
            if not any(res):
                res = residual(ps[i], qs[i])
            return (*xs[:i], rng.categorical(res))
    return (*xs, rng.categorical(ps[2]))


def second_sibling_stale_child(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any
                               ) -> tuple[Any, ...]:
    """SpecInfer, 2 siblings, depth 2: when the second sibling wins, its children are
    drafted from the first (rejected) sibling's draft row, but verified with the right one."""
    ctx = tuple(prefix)
    out: list[Any] = []
    stale: tuple[int, ...] | None = None
    for _ in range(2):
        p, q = target(ctx), draft(ctx)
        proposal = q if stale is None else draft(stale)
        siblings = [rng.categorical(proposal) for _ in range(2)]
        r = list(p)
        chosen = None
        for j, x in enumerate(siblings):
            if q[x] > 0 and rng.random() * q[x] < r[x]:
                chosen = x
                stale = (*ctx, siblings[0]) if j == 1 else None
                break
            res = residual(r, q)
            r = normalise(res) if any(res) else r
        if chosen is None:
            return (*out, rng.categorical(r))
        out.append(chosen)
        ctx = (*ctx, chosen)
    return (*out, rng.categorical(target(ctx)))


def trusts_equal_rows(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any
                      ) -> tuple[Any, ...]:
    """Chain, gamma = 2: once target and draft rows agree at a position, the rest of
    the block is accepted unchecked ("the models agree here, so they agree")."""
    ctx = tuple(prefix)
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(2):
        qs.append(draft((*ctx, *xs)))
        xs.append(rng.categorical(qs[-1]))
    ps = [target((*ctx, *xs[:i])) for i in range(3)]
    for i, x in enumerate(xs):
        if list(ps[i]) == list(qs[i]):
            return (*xs, rng.categorical(ps[2]))
        if not rng.random() * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i], qs[i])))
    return (*xs, rng.categorical(ps[2]))


def bonus_from_draft(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any
                     ) -> tuple[Any, ...]:
    """Chain, gamma = 3, whose bonus token (the 4th) comes from the draft row."""
    ctx = tuple(prefix)
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(3):
        qs.append(draft((*ctx, *xs)))
        xs.append(rng.categorical(qs[-1]))
    ps = [target((*ctx, *xs[:i])) for i in range(3)]
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i], qs[i])))
    return (*xs, rng.categorical(draft((*ctx, *xs))))


PLANTED_STEPS = {
    "draft-row-late": draft_row_late,
    "second-sibling-stale-child": second_sibling_stale_child,
    "trusts-equal-rows": trusts_equal_rows,
    "bonus-from-draft": bonus_from_draft,
}


# ---- the last token of a step at V >= 4 (issue 25) ----------------------------------


def _top_k(row: Any, k: int) -> list[Fraction]:
    """The row cut to its ``k`` largest entries (first index on ties), renormalised."""
    keep = sorted(range(len(row)), key=lambda i: (-row[i], i))[:k]
    return normalise([row[i] if i in keep else _ZERO for i in range(len(row))])


def bonus_from_top3(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                    gamma: int = 3) -> tuple[Any, ...]:
    """Chain, gamma = 3, whose bonus token (the 4th) is drawn from the target row cut to
    its top 3 entries (a sampler's top-k applied to the bonus only): right at V <= 3."""
    ctx = tuple(prefix)
    xs: list[Any] = []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        x = rng.categorical(q)
        p = target((*ctx, *xs))
        if not rng.random() * q[x] < p[x]:
            return (*xs, rng.categorical(residual(p, q)))
        xs.append(x)
    return (*xs, rng.categorical(_top_k(target((*ctx, *xs)), 3)))


def last_draft_against_top3(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any,
                            *, gamma: int = 3) -> tuple[Any, ...]:
    """Chain, gamma = 3: the last draft token is verified against, and resampled from, the
    target row with its smallest entry masked out (a cached top-3 of the last position)."""
    ctx = tuple(prefix)
    xs: list[Any] = []
    qs = []
    for _ in range(gamma):
        qs.append(draft((*ctx, *xs)))
        xs.append(rng.categorical(qs[-1]))
    for i, x in enumerate(xs):
        p = target((*ctx, *xs[:i]))
        if i == gamma - 1:
            p = _top_k(p, 3)
        if not rng.random() * qs[i][x] < p[x]:
            return (*xs[:i], rng.categorical(residual(p, qs[i])))
    return (*xs, rng.categorical(target((*ctx, *xs))))


def bonus_from_top3_gamma4(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any
                           ) -> tuple[Any, ...]:
    """:func:`bonus_from_top3` at gamma = 4: the wrong token is the 5th, past the horizon
    the defaults choose for every case (4)."""
    return bonus_from_top3(target, draft, prefix, rng, gamma=4)


def batched_bonus_top3_gamma4(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any
                              ) -> tuple[Any, ...]:
    """Chain, gamma = 4, written as a verify loop over a precomputed batch of target rows
    (ratio test, as engines write it): the bonus row comes from a top-3 cache (wrong on
    the 5th token only, at V >= 4)."""
    ctx = tuple(prefix)
    drafted: list[Any] = []
    rows = []
    while len(drafted) < 4:
        row = draft(ctx + tuple(drafted))
        rows.append(row)
        drafted.append(rng.categorical(row))
    targets = [target(ctx + tuple(drafted[:n])) for n in range(5)]
    targets[4] = _top_k(targets[4], 3)
    n = 0
    while n < 4:
        x = drafted[n]
        if rng.random() >= targets[n][x] / rows[n][x]:
            return (*drafted[:n], rng.categorical(residual(targets[n], rows[n])))
        n += 1
    return (*drafted, rng.categorical(targets[4]))


#: Steps right at V <= 3 that are wrong only on a late token at V >= 4.
LATE_TOKEN_STEPS = {
    "bonus-from-top3": bonus_from_top3,
    "last-draft-against-top3": last_draft_against_top3,
    "bonus-from-top3-gamma4": bonus_from_top3_gamma4,
    "batched-bonus-top3-gamma4": batched_bonus_top3_gamma4,
}
PLANTED_STEPS.update(LATE_TOKEN_STEPS)


# --------------------------------------------------------------------------
# Cross-vocabulary steps whose bug needs a mergeable pair past the first step
# --------------------------------------------------------------------------


def _canonical(target: Any, ids: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(target.vocab.encode(target.vocab.decode(ids)))


def tli_verifies_after_retokenizing(target: Any, draft: Any, prefix: tuple[int, ...],
                                    rng: Any) -> tuple[Any, ...]:
    """TLI, one draft token, whose verifier reads the target's rows after the canonical
    re-tokenization of the emitted text instead of the ids it emitted."""
    tv, dv = target.vocab, draft.vocab
    row = draft(tuple(dv.encode(tv.decode(prefix))))
    q = [Fraction(0)] * len(tv)
    for d, w in enumerate(row):
        t = tv.get(dv[d])
        if t is not None:
            q[t] += w
    context = _canonical(target, prefix)                       # bug: not ``prefix``
    p = target(context)
    if not sum(q):
        return (rng.categorical(p),)
    q = [w / sum(q) for w in q]
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return (x, rng.categorical(target(_canonical(target, (*prefix, x)))))
    return (rng.categorical(residual(p, q)),)


def slem_bonus_after_retokenizing(target: Any, draft: Any, prefix: tuple[int, ...],
                                  rng: Any) -> tuple[Any, ...]:
    """SLEM with one draft token: the target's samples read the ids emitted, but the
    bonus token reads the canonical re-tokenization of the text so far."""
    tv, dv = target.vocab, draft.vocab
    ctx = tuple(dv.encode(tv.decode(prefix)))
    text = dv[rng.categorical(draft(ctx))]
    out: list[Any] = []
    for x in tv.encode(text):
        y = rng.categorical(target((*prefix, *out)))
        out.append(y)
        if y != x:
            return tuple(out)
    bonus_context = _canonical(target, (*prefix, *out))         # bug: not prefix + out
    out.append(rng.categorical(target(bonus_context)))
    return tuple(out)


def slem_recommits_all_but_the_last_token(target: Any, draft: Any, prefix: tuple[int, ...],
                                          rng: Any) -> tuple[Any, ...]:
    """SLEM with one draft token whose target context keeps the last emitted token as
    it is but re-tokenizes the committed text before it canonically: wrong only once
    two committed tokens can merge and one more token follows them."""
    tv, dv = target.vocab, draft.vocab
    base = (*_canonical(target, prefix[:-1]), *prefix[-1:])   # bug: not ``prefix``
    text = dv[rng.categorical(draft(tuple(dv.encode(tv.decode(prefix)))))]
    out: list[Any] = []
    for x in tv.encode(text):
        y = rng.categorical(target((*base, *out)))
        out.append(y)
        if y != x:
            return tuple(out)
    out.append(rng.categorical(target((*base, *out))))
    return tuple(out)


#: Cross-vocabulary steps wrong only when a merge is possible after emitted tokens.
PLANTED_CROSSVOCAB = {
    "tli-verifies-after-retokenizing": tli_verifies_after_retokenizing,
    "slem-bonus-after-retokenizing": slem_bonus_after_retokenizing,
    "slem-recommits-all-but-the-last-token": slem_recommits_all_but_the_last_token,
}
