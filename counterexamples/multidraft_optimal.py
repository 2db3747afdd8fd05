"""Newer multi-draft and tree algorithms, their wrong variants, and the optimal acceptance.

For k drafts the law of the drafted *set* S decides how often any verifier
can emit one of them.  The best acceptance over all couplings of S with the
target law p is a max-flow (Hu et al., ICLR 2025; the reference sheet,
section 8): sets on one side with capacity Q(S), tokens on the other with
capacity p(x), an edge when x is in S.  Its min-cut form is the subset bound

    alpha* = min over token sets A of  p(A) + P(S is not inside A),

and an optimal flow f(S, x) is itself a lossless verifier: given S, emit
x in S with probability f(S, x) / Q(S), otherwise a token from the leftover
p(y) - sum_S f(S, y) (normalised).  :func:`optimal_acceptance` and
:func:`optimal_flow` compute both exactly; :func:`multidraft_gaps` reports
each multi-draft rule's acceptance against alpha* for its own set law.

Rules here (k = 2 drafts): the optimal verifier on i.i.d. drafts, Hu et al.'s
greedy drafts (the draft's top token plus one sampled) with it, SpecHub's
sparse pairs (Sun et al., EMNLP 2024: every pair holds the hub token
argmax q), importance-sampling selection (Khisti et al., ICLR 2025), and
traversal verification of a chain (Weng et al., NeurIPS 2025), each with a
wrong variant.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specexact.counterexamples.samplers import normalise, residual
from specexact.counterexamples.steps import StepRule, named_step
from specexact.exact import enumerate_law
from specexact.numbers import ONE, ZERO
from specexact.steps.models import ContextFreeModel
from specexact.witness import SamplerWitness, StepWitness

__all__ = [
    "ALGORITHM_SAMPLER_RULES",
    "ALGORITHM_STEP_RULES",
    "GAP_RULES",
    "GapRow",
    "SamplerRule",
    "cdf_boundary_preceding",
    "greedy_set_law",
    "iid_set_law",
    "multidraft_gaps",
    "optimal_acceptance",
    "optimal_flow",
    "spechub_set_law",
    "top_set_law",
    "traversal_chain",
    "without_replacement_set_law",
]

Probs = Sequence[Fraction]
DraftSet = tuple[int, ...]
SetLaw = Mapping[DraftSet, Fraction]


# --------------------------------------------------------------------------
# Set laws of the drafting schemes (k = 2)
# --------------------------------------------------------------------------


def _add(law: dict[DraftSet, Fraction], tokens: Sequence[int], mass: Fraction) -> None:
    if mass:
        key = tuple(sorted(set(tokens)))
        law[key] = law.get(key, ZERO) + mass


def iid_set_law(q: Probs, k: int = 2) -> dict[DraftSet, Fraction]:
    """The law of the set of k i.i.d. draws from q."""
    law: dict[DraftSet, Fraction] = {}
    for draws in itertools.product(range(len(q)), repeat=k):
        mass = ONE
        for x in draws:
            mass *= q[x]
        _add(law, draws, mass)
    return law


def without_replacement_set_law(q: Probs, k: int = 2) -> dict[DraftSet, Fraction]:
    """The law of the set of k draws from q without replacement (fewer when q runs out)."""
    law: dict[DraftSet, Fraction] = {}

    def walk(drawn: tuple[int, ...], mass: Fraction) -> None:
        rest = [ZERO if i in drawn else w for i, w in enumerate(q)]
        total = sum(rest, ZERO)
        if len(drawn) == k or not total:
            _add(law, drawn, mass)
            return
        for x, w in enumerate(rest):
            if w:
                walk((*drawn, x), mass * w / total)

    walk((), ONE)
    return law


def _top(q: Probs) -> int:
    return min(range(len(q)), key=lambda i: (-q[i], i))


def top_set_law(q: Probs, k: int = 2) -> dict[DraftSet, Fraction]:
    """The deterministic set of q's k most likely tokens (ties: lower ids)."""
    ranked = sorted(range(len(q)), key=lambda i: (-q[i], i))[:k]
    return {tuple(sorted(ranked)): ONE}


def greedy_set_law(q: Probs, k: int = 2) -> dict[DraftSet, Fraction]:
    """Hu et al.'s greedy drafts for k = 2: q's top token, plus one token drawn from q."""
    top = _top(q)
    law: dict[DraftSet, Fraction] = {}
    for x, w in enumerate(q):
        _add(law, (top, x), w)
    return law


def spechub_set_law(q: Probs, k: int = 2) -> dict[DraftSet, Fraction]:
    """SpecHub's sparse pairs: x ~ q with the hub a = argmax q; when x = a, the other
    token is drawn from q without a."""
    hub = _top(q)
    law: dict[DraftSet, Fraction] = {}
    rest = ONE - q[hub]
    for x, w in enumerate(q):
        if x != hub:
            _add(law, (hub, x), w)
        elif rest:
            for y, v in enumerate(q):
                if y != hub:
                    _add(law, (hub, y), w * v / rest)
        else:
            _add(law, (hub,), w)
    return law


# --------------------------------------------------------------------------
# The optimal coupling
# --------------------------------------------------------------------------


def optimal_acceptance(p: Probs, set_law: SetLaw) -> Fraction:
    """alpha* = min over token sets A of p(A) + P(S not inside A): the best probability,
    over every lossless verifier, of emitting a drafted token."""
    tokens = range(len(p))
    best = ONE
    for size in range(len(p) + 1):
        for chosen in itertools.combinations(tokens, size):
            inside = set(chosen)
            value = sum((p[x] for x in chosen), ZERO) + sum(
                (m for s, m in set_law.items() if not set(s) <= inside), ZERO)
            best = min(best, value)
    return best


_FLOWS: dict[Any, dict[tuple[DraftSet, int], Fraction]] = {}


def _cached_flow(p: Probs, set_law: SetLaw) -> dict[tuple[DraftSet, int], Fraction]:
    # A sampler call recomputes its coupling on every path the enumeration runs.
    key = (tuple(p), tuple(sorted(set_law.items())))
    flow = _FLOWS.get(key)
    if flow is None:
        if len(_FLOWS) > 4096:
            _FLOWS.clear()
        flow = _FLOWS[key] = optimal_flow(p, set_law)
    return flow


def optimal_flow(p: Probs, set_law: SetLaw) -> dict[tuple[DraftSet, int], Fraction]:
    """An optimal coupling: the flow f(S, x) of a maximum flow (exact augmenting paths).

    Its value is :func:`optimal_acceptance`; f(S, .) sums to at most Q(S) and
    f(., x) to at most p(x).
    """
    sets = sorted(s for s, m in set_law.items() if m)
    flow: dict[tuple[DraftSet, int], Fraction] = {}
    out_of = {s: ZERO for s in sets}
    into = [ZERO] * len(p)
    while True:
        path = _augmenting_path(p, set_law, sets, flow, out_of, into)
        if path is None:
            return {k: v for k, v in flow.items() if v}
        s0, steps, last, amount = path
        out_of[s0] += amount
        into[last] += amount
        for s, x, sign in steps:
            flow[(s, x)] = flow.get((s, x), ZERO) + sign * amount


def _augmenting_path(p: Probs, set_law: SetLaw, sets: list[DraftSet],
                     flow: Mapping[tuple[DraftSet, int], Fraction],
                     out_of: Mapping[DraftSet, Fraction], into: Sequence[Fraction]
                     ) -> tuple[DraftSet, list[tuple[DraftSet, int, int]], int,
                                Fraction] | None:
    """A shortest path source -> set -> token (-> set backwards -> token ...) -> sink."""
    # Breadth-first over tokens reached; a token is left by a backward edge to a set
    # already sending it flow, then forward to another token of that set.
    frontier: list[tuple[DraftSet, int]] = []
    parent: dict[int, tuple[DraftSet, int | None]] = {}
    capacity: dict[int, Fraction] = {}
    for s in sets:
        spare = set_law[s] - out_of[s]
        if spare <= 0:
            continue
        for x in s:
            if x not in parent:
                parent[x] = (s, None)
                capacity[x] = spare
                frontier.append((s, x))
    while frontier:
        nxt: list[tuple[DraftSet, int]] = []
        for _, x in frontier:
            if p[x] - into[x] > 0:
                return _trace(parent, x, min(capacity[x], p[x] - into[x]))
            for s in sets:
                back = flow.get((s, x), ZERO)
                if back <= 0:
                    continue
                for y in s:
                    if y not in parent:
                        parent[y] = (s, x)
                        capacity[y] = min(capacity[x], back)
                        nxt.append((s, y))
        frontier = nxt
    return None


def _trace(parent: Mapping[int, tuple[DraftSet, int | None]], last: int, amount: Fraction
           ) -> tuple[DraftSet, list[tuple[DraftSet, int, int]], int, Fraction]:
    steps: list[tuple[DraftSet, int, int]] = []
    x = last
    while True:
        s, previous = parent[x]
        steps.append((s, x, 1))
        if previous is None:
            return s, steps, last, amount
        steps.append((s, previous, -1))
        x = previous


def _verify_optimally(p: Probs, set_law: SetLaw, drafts: Sequence[Any], rng: Any) -> Any:
    """Given the drafted set, the optimal coupling's conditional law, then the leftover."""
    key = tuple(sorted({int(x) for x in drafts}))
    flow = _cached_flow(p, set_law)
    mass = set_law.get(key, ZERO)
    weights = [flow.get((key, x), ZERO) for x in key]
    spare = mass - sum(weights, ZERO)
    pick = rng.categorical([*weights, spare])
    if pick < len(key):
        return key[pick]
    into = [ZERO] * len(p)
    for (_, x), f in flow.items():
        into[x] += f
    return rng.categorical([a - b for a, b in zip(p, into, strict=True)])


# --------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------


def optimal_iid(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Two i.i.d. drafts from q, verified with the optimal coupling of their set law."""
    drafts = [rng.categorical(q) for _ in range(2)]
    return _verify_optimally(p, iid_set_law(q), drafts, rng)


def optimal_iid_fallback_p(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Bug: the optimal coupling, but when no draft is assigned the token comes from p
    instead of the leftover p - inflow."""
    drafts = [rng.categorical(q) for _ in range(2)]
    law = iid_set_law(q)
    key = tuple(sorted({int(x) for x in drafts}))
    flow = _cached_flow(p, law)
    weights = [flow.get((key, x), ZERO) for x in key]
    pick = rng.categorical([*weights, law[key] - sum(weights, ZERO)])
    return key[pick] if pick < len(key) else rng.categorical(p)


def _greedy_drafts(q: list[Fraction], rng: Any) -> list[Any]:
    return [_top(q), rng.categorical(q)]


def greedy_optimal(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Hu et al.'s greedy drafts (q's top token, plus one drawn from q) with the optimal
    verifier of that set law."""
    return _verify_optimally(p, greedy_set_law(q), _greedy_drafts(q, rng), rng)


def greedy_iid_verifier(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Bug: greedy drafts verified with the coupling built for i.i.d. drafts."""
    return _verify_optimally(p, iid_set_law(q), _greedy_drafts(q, rng), rng)


def _spechub_drafts(q: list[Fraction], rng: Any) -> list[Any]:
    hub = _top(q)
    x = rng.categorical(q)
    if x != hub:
        return [x, hub]
    rest = [ZERO if i == hub else w for i, w in enumerate(q)]
    return [hub, rng.categorical(rest)] if any(rest) else [hub]


def spechub(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """SpecHub's sparse pairs (each holds the hub argmax q), verified with the exact
    optimal transport of that set law (the LP SpecHub solves over its sparse law)."""
    return _verify_optimally(p, spechub_set_law(q), _spechub_drafts(q, rng), rng)


def spechub_multiround(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Bug: SpecHub's pairs verified by SpecInfer multi-round, as if both were draws
    from q: the hub is tested with the ratio r/q although it is always drafted."""
    r = list(p)
    for x in _spechub_drafts(q, rng):
        if rng.random() * q[x] < r[x]:
            return x
        r = normalise(residual(r, q))
    return rng.categorical(r)


_SELECTED: dict[Any, list[Fraction]] = {}


def _is_selected_law(p: Probs, q: Probs) -> list[Fraction]:
    """The law of the token importance-sampling selection picks from two i.i.d. drafts."""
    key = (tuple(p), tuple(q))
    if key not in _SELECTED:
        if len(_SELECTED) > 4096:
            _SELECTED.clear()
        _SELECTED[key] = _selected_law(p, q)
    return _SELECTED[key]


def _selected_law(p: Probs, q: Probs) -> list[Fraction]:
    law = [ZERO] * len(p)
    for a, b in itertools.product(range(len(q)), repeat=2):
        mass = q[a] * q[b]
        if not mass:
            continue
        wa, wb = p[a] / q[a], p[b] / q[b]
        share = wa / (wa + wb) if wa + wb else ONE
        law[a] += mass * share
        law[b] += mass * (1 - share)
    return law


def _is_select(p: Probs, q: Probs, rng: Any) -> Any:
    a, b = rng.categorical(q), rng.categorical(q)
    wa, wb = p[a] / q[a], p[b] / q[b]
    if not wa + wb:
        return a
    return a if rng.bernoulli(wa / (wa + wb)) else b


def is_selection(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Khisti et al.: pick one of two i.i.d. drafts with probability proportional to
    p/q, then the textbook rule with the law s that selection induces."""
    s = _is_selected_law(p, q)
    x = _is_select(p, q, rng)
    if rng.random() * s[x] < p[x]:
        return x
    return rng.categorical(residual(p, s))


def is_selection_ratio_q(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Bug: the selected draft verified with q, as if it were a plain draw from q."""
    x = _is_select(p, q, rng)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(residual(p, q))


def cdf_boundary_preceding(p: list[Fraction], q: list[Fraction], rng: Any) -> Any:
    """Bug: the residual is drawn by an inverse CDF that puts a uniform landing exactly on
    a bucket boundary in the preceding bucket (``u <= cdf[i]`` instead of ``u < cdf[i]``):
    u = 0 picks token 0 even when it has no mass (SGLang #35798).  Invisible with an
    ideal uniform; on the float32 grid (0 included) it emits tokens with p = 0."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    weights = residual(p, q)
    total = sum(weights, ZERO)
    u = rng.random()
    cumulative = ZERO
    for token, w in enumerate(weights):
        cumulative += w / total
        if u <= cumulative:
            return token
    return len(weights) - 1


# --------------------------------------------------------------------------
# Traversal verification (the chain case)
# --------------------------------------------------------------------------


def traversal_chain(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any, *,
                    gamma: int = 2, token_level: bool = False) -> tuple[Any, ...]:
    """Traversal verification (Weng et al., NeurIPS 2025) of a drafted chain, leaf to root.

    The deepest node is judged first, with the sequence-level weight of its whole
    path, P_i = min(1, P_{i-1} p_i(x_i)/q_i(x_i)); a rejected node's mass folds into
    its parent's residual, norm(max(P_i p_{i+1} - q_{i+1}, 0)), whose total s_i
    decides the parent's own coin s_i/(s_i + 1 - P_i).  On a chain this is the
    optimal block verification.  ``token_level=True`` is the bug of using the
    token-level weight min(1, p_i/q_i) in place of the path's.
    """
    ctx = tuple(prefix)
    xs: list[Any] = []
    qs: list[Any] = []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    weight = [ONE]
    for i, x in enumerate(xs):
        ratio = ps[i][x] / qs[i][x]
        weight.append(min(ONE, ratio if token_level else weight[-1] * ratio))
    for node in range(gamma, 0, -1):
        if node == gamma:
            coin = weight[node]
        else:
            s = sum(residual([weight[node] * a for a in ps[node]], qs[node]), ZERO)
            coin = s / (s + 1 - weight[node]) if s + 1 - weight[node] else ONE
        if rng.random() < coin:
            if node == gamma:
                return (*xs, rng.categorical(ps[gamma]))
            return (*xs[:node], rng.categorical(
                residual([weight[node] * a for a in ps[node]], qs[node])))
    return (rng.categorical(residual(ps[0], qs[0])),)


# --------------------------------------------------------------------------
# Gaps to the optimal acceptance
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class GapRow:
    """One multi-draft rule on one (p, q): its acceptance, alpha* for its set law, the gap."""

    rule: str
    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    acceptance: Fraction
    optimal: Fraction

    @property
    def gap(self) -> Fraction:
        return self.optimal - self.acceptance


class _DraftRecorder:
    """The random source, recording the first ``k`` categorical draws (the drafts)."""

    def __init__(self, rng: Any, k: int) -> None:
        self._rng = rng
        self._k = k
        self.drafts: list[Any] = []

    def categorical(self, weights: Any) -> Any:
        token = self._rng.categorical(weights)
        if len(self.drafts) < self._k:
            self.drafts.append(token)
        return token

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng, name)


Joint = Callable[[list[Fraction], list[Fraction], Any], tuple[Sequence[Any], Any]]


def _recorded(rule: Callable[..., Any]) -> Joint:
    """(drafts, token) of a rule that draws its k = 2 drafts as its first categorical draws."""
    def joint(p: list[Fraction], q: list[Fraction], rng: Any) -> tuple[Sequence[Any], Any]:
        recorder = _DraftRecorder(rng, 2)
        out = rule(p, q, recorder)
        return recorder.drafts, out
    return joint


def _top_two(rule: Callable[..., Any]) -> Joint:
    def joint(p: list[Fraction], q: list[Fraction], rng: Any) -> tuple[Sequence[Any], Any]:
        return next(iter(top_set_law(q))), rule(p, q, rng)
    return joint


def _greedy_joint(p: list[Fraction], q: list[Fraction], rng: Any
                  ) -> tuple[Sequence[Any], Any]:
    drafts = _greedy_drafts(q, rng)
    return drafts, _verify_optimally(p, greedy_set_law(q), drafts, rng)


def _spechub_joint(p: list[Fraction], q: list[Fraction], rng: Any
                   ) -> tuple[Sequence[Any], Any]:
    drafts = _spechub_drafts(q, rng)
    return drafts, _verify_optimally(p, spechub_set_law(q), drafts, rng)


def _rrs_joint(p: list[Fraction], q: list[Fraction], rng: Any
               ) -> tuple[Sequence[Any], Any]:
    # specexact.counterexamples.multidraft.rrs_without_replacement, keeping its drafts apart from
    # the fallback draw (q can run out before k drafts).
    r = list(p)
    drafts: list[Any] = []
    qj: list[Fraction] | None = list(q)
    for _ in range(2):
        if qj is None:
            break
        x = int(rng.categorical(qj))
        drafts.append(x)
        if rng.random() * qj[x] < r[x]:
            return drafts, x
        r = normalise(residual(r, qj))
        rest = [ZERO if i in drafts else w for i, w in enumerate(q)]
        qj = normalise(rest) if any(rest) else None
    return drafts, rng.categorical(r)


def _acceptance(joint: Joint, p: Probs, q: Probs) -> Fraction:
    """P(the emitted token is one of the drafts), exactly."""
    def run(rng: Any) -> Any:
        drafts, out = joint(list(p), list(q), rng)
        return int(int(out) in {int(x) for x in drafts})

    return enumerate_law(run).prob(1)


def _gap_rules() -> list[tuple[str, Joint, Callable[[Probs], SetLaw]]]:
    from specexact.counterexamples import multidraft

    return [
        ("multiround-k2", _recorded(multidraft.multiround), iid_set_law),
        ("rrs-k2", _rrs_joint, without_replacement_set_law),
        ("spectr-rho-k2", _recorded(multidraft.spectr), iid_set_law),
        ("deterministic-tree-k2", _top_two(multidraft.deterministic_tree), top_set_law),
        ("optimal-iid-k2", _recorded(optimal_iid), iid_set_law),
        ("is-selection-k2", _recorded(is_selection), iid_set_law),
        ("greedy-multidraft-optimal-k2", _greedy_joint, greedy_set_law),
        ("spechub-k2", _spechub_joint, spechub_set_law),
    ]


#: The multi-draft rules :func:`multidraft_gaps` reports on.
GAP_RULES = tuple(name for name, _, _ in _gap_rules())


def multidraft_gaps(p: Sequence[Any], q: Sequence[Any]) -> list[GapRow]:
    """Each lossless k = 2 multi-draft rule of the catalogue on (p, q): its exact
    acceptance P(emitted token in the drafted set) and alpha* for its own set law."""
    pf = tuple(Fraction(x) for x in p)
    qf = tuple(Fraction(x) for x in q)
    return [GapRow(name, pf, qf, _acceptance(joint, pf, qf),
                   optimal_acceptance(pf, set_law(qf)))
            for name, joint, set_law in _gap_rules()]


# --------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplerRule:
    """One sampler rule of this module (registered in the catalogue)."""

    name: str
    lossless: bool
    rule: Callable[..., Any]
    summary: str
    source: str | None
    witness: SamplerWitness | None = None
    uniform_bits: int | None = None


def _w(p: Sequence[str], q: Sequence[str]) -> SamplerWitness:
    return SamplerWitness.of(p, q)


_HU = "Hu et al., ICLR 2025 (optimal multi-draft speculative decoding)"

ALGORITHM_SAMPLER_RULES: tuple[SamplerRule, ...] = (
    SamplerRule("optimal-iid-k2", True, optimal_iid,
                "Two i.i.d. drafts verified with an exact optimal coupling of their set law "
                "and p (a max-flow): the emitted token is a draft with probability alpha*, "
                "the subset bound, and the leftover p - inflow covers the rest.", _HU),
    SamplerRule("greedy-multidraft-optimal-k2", True, greedy_optimal,
                "Greedy multi-draft: the draft's top token plus one drawn from q, verified "
                "with the optimal coupling of that set law; lossless whatever the set law, "
                "as long as the verifier uses the true one.", _HU),
    SamplerRule("spechub-k2", True, spechub,
                "SpecHub's sparse draft pairs (each holds the hub token argmax q; the other "
                "is drawn from q, or from q without the hub when the first draw is it), "
                "verified with the exact optimal transport of that sparse law.",
                "Sun et al., EMNLP 2024 (SpecHub)"),
    SamplerRule("is-selection-k2", True, is_selection,
                "Importance-sampling selection: one of two i.i.d. drafts picked with "
                "probability proportional to p/q, then the textbook rule against p with "
                "the exact law s that the selection induces.",
                "Khisti et al., ICLR 2025"),
    SamplerRule("optimal-iid-fallback-p", False, optimal_iid_fallback_p,
                "The optimal coupling of two i.i.d. drafts, but when no draft is assigned "
                "the token is drawn from p instead of the leftover p - inflow: mass "
                "already placed on the drafts is added again.", _HU,
                _w(["1/2", "1/2"], ["0", "1"])),
    SamplerRule("greedy-multidraft-iid-verifier", False, greedy_iid_verifier,
                "Greedy drafts (top token plus one drawn) verified with the coupling built "
                "for i.i.d. drafts: the verifier's set law is not the drafts'.", _HU,
                _w(["1/2", "1/2"], ["1/2", "1/2"])),
    SamplerRule("spechub-multiround", False, spechub_multiround,
                "SpecHub's hub pairs verified by SpecInfer multi-round as if both tokens were "
                "draws from q: the hub, always drafted, is tested with the ratio r/q.",
                "Sun et al., EMNLP 2024 (SpecHub)", _w(["0", "2/3", "1/3"], ["2/3", "1/3", "0"])),
    SamplerRule("cdf-boundary-preceding-bucket", False, cdf_boundary_preceding,
                "The residual drawn by an inverse CDF that puts a uniform on a bucket "
                "boundary into the preceding bucket: u = 0 on the float32 grid emits token "
                "0 where it has no mass. Judged with uniform_bits = 24.", "SGLang #35798",
                _w(["0", "1"], ["1", "0"]), uniform_bits=24),
    SamplerRule("is-selection-ratio-q", False, is_selection_ratio_q,
                "Importance-sampling selection, then the selected draft verified with q "
                "instead of the law s the selection induces.", "Khisti et al., ICLR 2025",
                _w(["1/2", "1/2"], ["3/4", "1/4"])),
)

_WEG = "Weng et al., NeurIPS 2025 (traversal verification)"

ALGORITHM_STEP_RULES: tuple[StepRule, ...] = (
    StepRule("traversal-chain", True,
             named_step(traversal_chain, "traversal-chain", gamma=2),
             "Traversal verification of a drafted chain (gamma = 2), leaf to root: each "
             "node judged with its path's sequence-level weight, a rejected node's mass "
             "folded into its parent's residual. The tree case is not reproduced here.",
             _WEG, None),
    StepRule("traversal-token-level-weights", False,
             named_step(traversal_chain, "traversal-token-level-weights", gamma=2,
                        token_level=True),
             "Traversal verification with token-level weights min(1, p_i/q_i) where the "
             "path's cumulative weight belongs: the sequence-level coins no longer match "
             "the residuals.", _WEG,
             StepWitness(ContextFreeModel(("0", "1")), ContextFreeModel(("1/2", "1/2")), 1)),
)
