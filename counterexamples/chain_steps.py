"""Chain steps: gamma drafted tokens verified one after another (Leviathan et al.).

Written against the step protocol ``step(target, draft, prefix, rng) ->
tuple of tokens``.  The wrong variants each carry one bug from the
reference sheet; their exact witnesses live in :mod:`specexact.counterexamples.steps`.
"""

from __future__ import annotations

from typing import Any

from specexact.counterexamples.tree_steps import residual

__all__ = [
    "bonus_from_residual",
    "chain",
    "greedy",
    "greedy_verify_sampled",
    "residual_wrong_position",
    "shared_uniform",
    "stale_context_fallback",
    "stateful_chain",
]


def _draft_block(draft: Any, ctx: tuple[Any, ...], rng: Any, gamma: int
                 ) -> tuple[list[Any], list[Any]]:
    """Draw x_1..x_gamma, each from the draft after the tokens before it."""
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    return xs, qs


def chain(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *, gamma: int = 2,
          bonus: bool = True) -> tuple[Any, ...]:
    """Leviathan et al., Algorithm 1: draft gamma tokens, one target pass, verify in order.

    Draft x_i ~ q_i; accept with probability min(1, p_i(x_i)/q_i(x_i)) using a
    fresh uniform each time; at the first rejection emit a token from
    norm(max(p_i - q_i, 0)) and drop the later drafts; if all are accepted,
    a bonus token from p_{gamma+1} (``bonus=False`` stops without it: wasteful,
    still lossless).
    """
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i], qs[i])))
    return (*xs, rng.categorical(ps[gamma])) if bonus else tuple(xs)


def shared_uniform(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                   gamma: int = 2) -> tuple[Any, ...]:
    """Bug: one uniform drawn once and reused to test every position of the block."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    u = rng.random()
    for i, x in enumerate(xs):
        if not u * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i], qs[i])))
    return (*xs, rng.categorical(ps[gamma]))


def bonus_from_residual(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                        gamma: int = 1) -> tuple[Any, ...]:
    """Bug: after every draft is accepted, the bonus comes from norm(max(p - q, 0)), not p."""
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i], qs[i])))
    return (*xs, rng.categorical(residual(ps[gamma], draft((*ctx, *xs)))))


def residual_wrong_position(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                            gamma: int = 1) -> tuple[Any, ...]:
    """Bug: the residual at a rejection takes p one position late (target logits not shifted).

    Rejecting x_i should use max(p_i - q_i, 0); this uses p_{i+1}, the
    target's row after the rejected token.  Invisible with context-free models.
    """
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i + 1], qs[i])))
    return (*xs, rng.categorical(ps[gamma]))


def stale_context_fallback(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                           gamma: int = 1) -> tuple[Any, ...]:
    """Bug: after a rejection, p and q for the replacement are read at a stale context.

    The context still holds the rejected draft (it was not cut back), so
    the residual is max(p - q, 0) after prefix + x_1..x_i instead of after
    prefix + x_1..x_{i-1}.  Invisible with context-free models.
    """
    ctx = tuple(prefix)
    xs, qs = _draft_block(draft, ctx, rng, gamma)
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            stale = (*ctx, *xs[: i + 1])
            return (*xs[:i], rng.categorical(residual(target(stale), draft(stale))))
    return (*xs, rng.categorical(ps[gamma]))


def _argmax(row: Any) -> int:
    best = 0
    for i in range(1, len(row)):
        if row[i] > row[best]:
            best = i
    return best


def greedy(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
           gamma: int = 2) -> tuple[int, ...]:
    """Greedy speculative decoding: argmax drafts, kept while they equal the target's argmax.

    At the first mismatch it emits the target's argmax; after gamma matches,
    the target's argmax as bonus.  It reproduces greedy decoding of the
    target, so it preserves the target's law exactly when the target's rows
    are one-hot, and only then.  Uses no randomness.
    """
    ctx = tuple(prefix)
    out: list[int] = []
    for _ in range(gamma):
        x = _argmax(draft(ctx))
        y = _argmax(target(ctx))
        out.append(y)
        if x != y:
            return tuple(out)
        ctx = (*ctx, x)
    return (*out, _argmax(target(ctx)))


def greedy_verify_sampled(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                          gamma: int = 1) -> tuple[Any, ...]:
    """Bug: drafts sampled from q but verified greedily (accept iff x = argmax p)
    while the target samples: greedy verification at temperature > 0."""
    ctx = tuple(prefix)
    xs, _ = _draft_block(draft, ctx, rng, gamma)
    for i, x in enumerate(xs):
        y = _argmax(target((*ctx, *xs[:i])))
        if x != y:
            return (*xs[:i], y)
    return (*xs, rng.categorical(target((*ctx, *xs))))


def stateful_chain(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                   gamma: int = 2, rollback: bool = True) -> tuple[Any, ...]:
    """The chain rule against stateful models (:class:`specexact.steps.models.CachedModel`).

    Both caches hold ``prefix`` on entry.  The draft model is fed its own
    drafts; the target is fed the block (one pass, reading p_1..p_{gamma+1}
    on the way).  After a rejection at position i both caches are truncated
    to prefix + x_1..x_{i-1}; the emitted replacement or bonus token is then
    appended, so each cache ends holding exactly the emitted prefix.
    ``rollback=False`` is the bug of forgetting the truncation.
    """
    n = len(prefix)
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft.next_distribution()
        x = rng.categorical(q)
        draft.append(x)
        qs.append(q)
        xs.append(x)
    ps = []
    for x in xs:
        ps.append(target.next_distribution())
        target.append(x)
    ps.append(target.next_distribution())
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            y = rng.categorical(residual(ps[i], qs[i]))
            if rollback:
                target.truncate(n + i)
                draft.truncate(n + i)
            target.append(y)
            draft.append(y)
            return (*xs[:i], y)
    y = rng.categorical(ps[gamma])
    target.append(y)
    draft.append(y)
    return (*xs, y)
