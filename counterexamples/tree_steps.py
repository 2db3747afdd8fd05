"""Token-tree and block steps: several drafts per position, or a block judged jointly.

Written against the step protocol ``step(target, draft, prefix, rng) ->
tuple of tokens``; formulas follow the reference sheet, section 3.

Tree steps draft a level when they reach it.  That gives the law of drafting
the whole tree first: the subtree below a child is drawn from the draft given
that child alone, independently of the verifier's coins, and the subtrees of
rejected children are never read.  It keeps the exact enumeration small.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from specexact.numbers import ONE, ZERO

__all__ = [
    "block_verification",
    "one_hot_tree",
    "residual",
    "rrs_without_replacement",
    "specinfer",
    "spectr",
]


def residual(p: Sequence[Fraction], q: Sequence[Fraction]) -> list[Fraction]:
    """max(p - q, 0), entrywise (left unnormalised: categorical normalises)."""
    return [max(a - b, ZERO) for a, b in zip(p, q, strict=True)]


def _normalise(weights: Sequence[Fraction]) -> list[Fraction]:
    total = sum(weights, ZERO)
    return [w / total for w in weights]


def specinfer(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *, k: int = 2,
              depth: int = 1, against_original: bool = False) -> tuple[Any, ...]:
    """SpecInfer multi-round over k i.i.d. siblings at each of ``depth`` levels.

    Start with r = p; sibling x is accepted with probability
    min(1, r(x)/q(x)), otherwise r becomes norm(max(r - q, 0)).  An accepted
    sibling is emitted and its own children are verified against the fresh
    target below it; if every sibling is rejected, y ~ r ends the step; after
    the last level a bonus token comes from the target.

    ``against_original=True`` is the bug: every sibling tested against the
    original p (the final fallback still uses the one-draft residual).
    """
    ctx = tuple(prefix)
    out: list[Any] = []
    for _ in range(depth):
        p, q = target(ctx), draft(ctx)
        siblings = [rng.categorical(q) for _ in range(k)]
        r = list(p)
        chosen = None
        for x in siblings:
            if rng.random() * q[x] < r[x]:
                chosen = x
                break
            if not against_original:
                r = _normalise(residual(r, q))
        if chosen is None:
            if against_original:
                r = residual(p, q)
            return (*out, rng.categorical(r))
        out.append(chosen)
        ctx = (*ctx, chosen)
    return (*out, rng.categorical(target(ctx)))


def rrs_without_replacement(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                            k: int = 2, plain_q: bool = False) -> tuple[Any, ...]:
    """Recursive rejection sampling over k drafts drawn without replacement, then a bonus.

    The j-th draft comes from q^(j) = q restricted to the tokens not drawn
    yet, renormalised; the acceptance ratio and the residual use q^(j).
    ``plain_q=True`` is the bug: ratio and residual with the plain q.
    """
    ctx = tuple(prefix)
    p, q = target(ctx), draft(ctx)
    remaining = list(q)
    drafts: list[tuple[Any, list[Fraction]]] = []
    for _ in range(k):
        if not any(remaining):
            break
        qj = _normalise(remaining)
        x = rng.categorical(qj)
        drafts.append((x, qj))
        remaining[x] = ZERO
    r = list(p)
    for x, qj in drafts:
        used = q if plain_q else qj
        if rng.random() * used[x] < r[x]:
            return (x, rng.categorical(target((*ctx, x))))
        r = _normalise(residual(r, used))
    return (rng.categorical(r),)


def one_hot_tree(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *, k: int = 2,
                 depth: int = 2) -> tuple[Any, ...]:
    """A deterministic tree (EAGLE-2 style): the draft's top-k tokens at each level.

    Every candidate is a one-hot proposal: accept x with probability r(x),
    else zero it in r and renormalise; if all are rejected, y ~ r.  The
    candidates depend only on the draft (top-k by probability, ties to the
    lower id), never on the verifier's coins, which is what makes it lossless.
    """
    ctx = tuple(prefix)
    out: list[Any] = []
    for _ in range(depth):
        q = draft(ctx)
        r = list(target(ctx))
        ranked = sorted((i for i in range(len(q)) if q[i] > 0), key=lambda i: (-q[i], i))
        chosen = None
        for x in ranked[:k]:
            if rng.random() < r[x]:
                chosen = x
                break
            r[x] = ZERO
            r = _normalise(r)
        if chosen is None:
            return (*out, rng.categorical(r))
        out.append(chosen)
        ctx = (*ctx, chosen)
    return (*out, rng.categorical(target(ctx)))


def spectr(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *, k: int = 2,
           rho: Fraction | int | None = None) -> tuple[Any, ...]:
    """SpecTr k-sequential selection (Sun et al. 2023) over k i.i.d. drafts, then a bonus.

    With beta = sum_x min(q(x), p(x)/rho), the first draft X_i accepted with
    probability min(1, p(X_i)/(rho q(X_i))) is emitted; if none is, the
    fallback is [p - min(q, p/rho)(1 - (1-beta)^k)/beta] / (1-beta)^k.
    rho = k (the default) is always valid; rho = 1 generally is not.
    """
    rho_f = Fraction(k if rho is None else rho)
    ctx = tuple(prefix)
    p, q = target(ctx), draft(ctx)
    drafts = [rng.categorical(q) for _ in range(k)]
    for x in drafts:
        if rng.random() * rho_f * q[x] < p[x]:
            return (x, rng.categorical(target((*ctx, x))))
    shares = [min(b, a / rho_f) for a, b in zip(p, q, strict=True)]
    beta = sum(shares, ZERO)
    if beta == 0:
        # Disjoint supports: no draft is ever accepted and the fallback is p.
        fallback = list(p)
    elif beta == 1:
        # Only possible for rho = 1 and q = p, when every draft is accepted;
        # the formula's 0/0 is never reached, so any law would do.
        fallback = list(p)
    else:
        miss = (1 - beta) ** k
        scale = (1 - miss) / beta
        fallback = [(a - s * scale) / miss for a, s in zip(p, shares, strict=True)]
    return (rng.categorical(fallback),)


def block_verification(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                       gamma: int = 2, weighted: bool = True) -> tuple[Any, ...]:
    """Block verification (Sun et al., ICLR 2025) of a drafted chain of ``gamma`` tokens.

    P_0 = 1, P_i = min(1, P_{i-1} p_i(x_i)/q_i(x_i)); h_i = s_i/(s_i + 1 - P_i)
    with s_i = sum_x max(P_i p_{i+1}(x) - q_{i+1}(x), 0) for i < gamma and
    h_gamma = P_gamma.  tau is the largest i whose coin eta_i < h_i; then
    the bonus from p_{gamma+1} if tau = gamma, else a token from
    norm(max(P_tau p_{tau+1} - q_{tau+1}, 0)).
    ``weighted=False`` is the bug: the residual without its P_tau weight.
    """
    ctx = tuple(prefix)
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    weights = [ONE]
    for i in range(gamma):
        x = xs[i]
        weights.append(min(ONE, weights[-1] * ps[i][x] / qs[i][x]))
    h: list[Fraction] = []
    for i in range(1, gamma):
        s = sum(residual([weights[i] * a for a in ps[i]], qs[i]), ZERO)
        denominator = s + 1 - weights[i]
        # P_i = 1 and s_i = 0: every later weight is 1 too, so tau reaches
        # gamma whatever h_i is; 1 avoids the 0/0.
        h.append(s / denominator if denominator else ONE)
    h.append(weights[gamma])
    tau = 0
    for i in range(gamma, 0, -1):
        # strict: with a float32 uniform (0 included) `<=` would pass a coin h = 0
        if rng.random() < h[i - 1]:
            tau = i
            break
    if tau == gamma:
        return (*xs, rng.categorical(ps[gamma]))
    scale = weights[tau] if weighted else ONE
    return (*xs[:tau], rng.categorical(residual([scale * a for a in ps[tau]], qs[tau])))
