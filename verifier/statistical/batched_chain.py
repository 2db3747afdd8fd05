"""The batched ``chain`` step audit: the joint law of several emitted tokens, sampled.

The code under test is ``fn(draft_token_ids [N, k], draft_probs [N, k, V],
target_probs [N, k + 1, V], generator) -> [N, k + 1]``, each output row the
tokens one verification step emits, padded with -1 after the first
rejection (the last target row is the bonus row).  specexact plays the
models: each case is a pair of exact toy models (:mod:`specexact.steps.models`),
specexact draws the k drafts of every row itself from the draft model, reads
both models' rows at the right prefixes and calls ``fn`` on the whole batch.
Each row is decoded, step after step, until it has ``horizon`` tokens, and
the counts of those token sequences are tested against the target model's
exact joint law, so a step whose first token is right but whose later
tokens are not is caught.

Rows of every case share each call (smaller vocabularies padded with
zero-probability tokens), and rows at different depths of their decode
share later calls.  Generators, seeding and the decision are those of
:mod:`specexact.statistical.batched`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specexact.errors import InvalidArgument
from specexact.numbers import as_distribution
from specexact.statistical.audit import (
    DEFAULT_ALPHA,
    Case,
    StatisticalReport,
)
from specexact.statistical.batched import (
    DEFAULT_BATCH_ROWS,
    Backend,
    Batch,
    ProgressCallback,
    Tally,
    Unit,
    audit_backend,
    check_common,
    check_panel,
    crash_text,
    run_batches,
    takes_generator,
    units_of,
)
from specexact.steps.models import random_model_pair
from specexact.validation import check_integer

__all__ = [
    "DEFAULT_CHAIN_SAMPLES",
    "ChainCase",
    "batched_chain_audit",
    "default_chain_panel",
]

#: Emitted sequences per case for chain audits (each takes up to ``horizon`` calls).
DEFAULT_CHAIN_SAMPLES = 500_000
#: The prefix trees of a panel hold at most this many rows.
_MAX_NODES = 400_000


@dataclass(frozen=True)
class ChainCase:
    """A target and a draft model over one vocabulary, decoded from the empty prefix."""

    name: str
    target: Callable[[tuple[int, ...]], Sequence[Any]]
    draft: Callable[[tuple[int, ...]], Sequence[Any]]
    vocab_size: int


_PANEL: tuple[tuple[str, int, int, str], ...] = (
    ("random models, V=2", 2, 11, "random"),
    ("random models, V=3", 3, 12, "random"),
    ("random models, V=4", 4, 13, "random"),
    ("context-free models, V=3", 3, 14, "context-free"),
    ("draft = target, V=3", 3, 15, "equal"),
    ("draft with zeros, V=3", 3, 16, "zeros"),
    ("disjoint supports, V=4", 4, 17, "disjoint"),
    ("one-hot rows, V=3", 3, 18, "one-hot"),
)


def default_chain_panel() -> tuple[ChainCase, ...]:
    """Eight model pairs: random, context-free, equal, with zeros, disjoint, one-hot."""
    out = []
    for name, vocab, seed, kind in _PANEL:
        target, draft = random_model_pair(vocab, seed, kind=kind)
        out.append(ChainCase(name, target, draft, vocab))
    return tuple(out)


@dataclass
class _Trie:
    """Every prefix up to ``depth`` of every case: rows as floats, children, exact laws."""

    target: Any  # [nodes, width] float64
    draft: Any
    child: Any  # [nodes, width] int64, -1 past the depth (or past the vocabulary)
    roots: list[int]
    cases: list[Case]
    vocabs: list[int]


def _exact_row(model: Callable[..., Any], prefix: tuple[int, ...], vocab: int,
               what: str) -> tuple[Fraction, ...]:
    row = as_distribution(model(prefix), name=f"{what} row at prefix {prefix}")
    if len(row) != vocab:
        msg = f"{what} row at prefix {prefix} has {len(row)} entries, expected {vocab}"
        raise InvalidArgument(msg)
    return row


def _build(cases: Sequence[ChainCase], horizon: int, gamma: int, np: Any) -> _Trie:
    depth = horizon - 1 + gamma
    width = max(c.vocab_size for c in cases)
    total = sum(sum(c.vocab_size ** d for d in range(depth + 1)) for c in cases)
    if total > _MAX_NODES:
        msg = (f"the panel's prefix trees would hold {total} rows (horizon {horizon}, "
               f"gamma {gamma}); lower --gamma or --horizon")
        raise InvalidArgument(msg)
    target = np.zeros((total, width))
    draft = np.zeros((total, width))
    child = np.full((total, width), -1, dtype=np.int64)
    roots: list[int] = []
    judged: list[Case] = []
    nxt = 0
    for case in cases:
        v = case.vocab_size
        roots.append(nxt)
        index: dict[tuple[int, ...], int] = {}
        exact_t: dict[tuple[int, ...], tuple[Fraction, ...]] = {}
        exact_d: dict[tuple[int, ...], tuple[Fraction, ...]] = {}
        for d in range(depth + 1):
            for prefix in itertools.product(range(v), repeat=d):
                index[prefix] = nxt
                t = exact_t[prefix] = _exact_row(case.target, prefix, v, f"{case.name}: target")
                r = exact_d[prefix] = _exact_row(case.draft, prefix, v, f"{case.name}: draft")
                target[nxt, :v] = [float(x) for x in t]
                draft[nxt, :v] = [float(x) for x in r]
                if d:
                    child[index[prefix[:-1]], prefix[-1]] = nxt
                nxt += 1
        seqs = list(itertools.product(range(v), repeat=horizon))

        def law(rows: dict[tuple[int, ...], tuple[Fraction, ...]],
                seqs: list[tuple[int, ...]] = seqs) -> tuple[Fraction, ...]:
            out = []
            for s in seqs:
                mass = Fraction(1)
                for i, tok in enumerate(s):
                    mass *= rows[s[:i]][tok]
                out.append(mass)
            return tuple(out)

        judged.append(Case(case.name, law(exact_t), law(exact_d),
                           tuple(",".join(map(str, s)) for s in seqs)))
    return _Trie(target, draft, child, roots, judged, [c.vocab_size for c in cases])


def _categorical(rows: Any, rng: Any, np: Any) -> Any:
    """One draw per row of nonnegative float weights (a zero-weight token is never drawn)."""
    cum = rows.cumsum(axis=1)
    u = rng.random(len(rows)) * cum[:, -1]
    x = (cum <= u[:, None]).sum(axis=1)
    last = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)
    return np.minimum(x, last)


def batched_chain_audit(fn: Callable[..., Any], *, gamma: int, horizon: int | None = None,
                        samples: int | None = None, seed: int = 0,
                        alpha: Fraction | float = DEFAULT_ALPHA,
                        cases: Sequence[ChainCase] | None = None,
                        max_seconds: float | None = None, array: str = "auto",
                        device: str = "cpu", dtype: str | None = None,
                        generators: str = "shared", batch_rows: int = DEFAULT_BATCH_ROWS,
                        progress: ProgressCallback | None = None) -> StatisticalReport:
    """Audit the batched chain step ``fn`` (see the module doc) with ``gamma`` drafts.

    Each case gets ``samples`` decoded sequences of ``horizon`` tokens
    (default ``min(gamma + 1, 4)``), tested against the target's exact joint
    law; the other options are those of
    :func:`specexact.statistical.batched.batched_statistical_audit`.
    """
    check_integer(gamma, "gamma", min_value=1)
    horizon = min(gamma + 1, 4) if horizon is None else horizon
    check_integer(horizon, "horizon", min_value=1)
    samples = DEFAULT_CHAIN_SAMPLES if samples is None else samples
    alpha_f = check_common(samples, seed, alpha, batch_rows)
    backend = audit_backend(fn, array=array, device=device, dtype=dtype, seed=seed,
                            generators=generators)
    panel = check_panel(cases, default_chain_panel, ChainCase, "ChainCase")
    trie = _build(panel, horizon, gamma, backend.np)
    units = units_of(trie.cases, generators)
    mode = f"{backend.describe()}, chain step, gamma {gamma}, joint law of {horizon} tokens"
    return run_batches(units, _chain_batch(fn, units, trie, gamma, horizon, backend),
                       samples=samples, seed=seed, alpha=alpha_f, batch_rows=batch_rows,
                       backend=backend, max_seconds=max_seconds, progress=progress, mode=mode)


def _chain_batch(fn: Callable[..., Any], units: Sequence[Unit], trie: _Trie, gamma: int,
                 horizon: int, backend: Backend) -> Batch:
    """Decode every row of a batch to ``horizon`` tokens, calling ``fn`` step after step."""
    np = backend.np
    m = len(units)
    case_of_unit = [trie.cases.index(u.case) for u in units]
    vocab = np.array([len(u.case.p) for u in units], dtype=np.int64)  # V ** horizon
    base = np.array([trie.vocabs[c] for c in case_of_unit], dtype=np.int64)
    roots = np.array([trie.roots[c] for c in case_of_unit], dtype=np.int64)
    seeded_unit = np.array([bool(u.seeded) for u in units])
    drafts_rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence((backend.seed, 4))))

    def batch(unit: Any, r: int, tally: Tally) -> bool:
        node = roots[unit].copy()
        code = np.zeros(len(unit), dtype=np.int64)
        emitted = np.zeros(len(unit), dtype=np.int64)
        alive = np.ones(len(unit), dtype=bool)
        while alive.any():
            rows = np.nonzero(alive)[0]
            out = _call(fn, rows, unit, node, trie, gamma, backend, seeded_unit, drafts_rng,
                        tally)
            if out is None:
                return False
            _advance(out, rows, unit, node, code, emitted, alive, base,
                     horizon, trie, tally)
        finished = emitted >= horizon
        flat = np.bincount(unit[finished] * int(vocab.max()) + code[finished],
                           minlength=m * int(vocab.max()))
        for u in range(m):
            tally.add_counts(u, flat[u * int(vocab.max()):u * int(vocab.max())
                                     + int(vocab[u])].tolist())
        return True

    return batch


def _call(fn: Callable[..., Any], rows: Any, unit: Any, node: Any, trie: _Trie, gamma: int,
          backend: Backend, seeded_unit: Any, drafts_rng: Any, tally: Tally
          ) -> Any:
    """Draft, call ``fn`` on the alive ``rows``; the output as int64 [n, k + 1] (or None
    after a crash or a result that is not a token array, recorded in ``tally``)."""
    np = backend.np
    n = len(rows)
    nodes = np.empty((n, gamma + 1), dtype=np.int64)
    ids = np.empty((n, gamma), dtype=np.int64)
    nodes[:, 0] = node[rows]
    for j in range(gamma):
        x = _categorical(trie.draft[nodes[:, j]], drafts_rng, np)
        ids[:, j] = x
        nodes[:, j + 1] = trie.child[nodes[:, j], x]
    seeded = np.nonzero(seeded_unit[unit[rows]])[0].tolist() \
        if backend.layout != "shared" else None
    generator = backend.generator(seeded, n)
    args = (backend.ids(ids), backend.probs(trie.draft[nodes[:, :gamma]]),
            backend.probs(trie.target[nodes]))
    try:
        result = fn(*args, generator) if takes_generator(fn, 4) else fn(*args)
    except Exception as exc:
        tally.crash = crash_text(exc)
        return None
    try:
        arr = backend.to_numpy(result)
        why = None
    except TypeError as exc:
        arr, why = None, str(exc)
    if arr is not None and arr.shape != (n, gamma + 1):
        why = f"returned shape {list(arr.shape)} for {n} rows; expected [{n}, {gamma + 1}]"
    elif arr is not None and (arr.dtype == np.bool_ or not np.issubdtype(arr.dtype,
                                                                          np.integer)):
        why = f"returned {arr.dtype} values, not integer token ids"
    if why is not None:
        for u in sorted(set(unit[rows].tolist())):
            tally.add_invalid(u, int((unit[rows] == u).sum()), [why])
        return None
    assert arr is not None
    return arr.astype(np.int64)


def _advance(tokens: Any, rows: Any, unit: Any, node: Any, code: Any,
             emitted: Any, alive: Any, base: Any, horizon: int, trie: _Trie,
             tally: Tally) -> None:
    """Append each row's emitted tokens (up to the first -1) to its sequence."""
    import numpy as np

    width = tokens.shape[1]
    pad = tokens == -1
    length = np.where(pad.any(axis=1), pad.argmax(axis=1), width)
    limit = base[unit[rows]]
    in_vocab = (tokens >= 0) & (tokens < limit[:, None])
    col = np.arange(width)[None, :]
    ok = (length >= 1) & ((col >= length[:, None]) | in_vocab).all(axis=1)
    for i in np.nonzero(~ok)[0][:200].tolist():
        u = int(unit[rows[i]])
        row = tokens[i].tolist()
        why = "emitted no token (row starts with -1)" if length[i] == 0 else \
            f"emitted {row[:int(length[i])]}, outside the vocabulary of {int(limit[i])}"
        tally.add_invalid(u, 1, [why])
    if (~ok).sum() > 200:
        bad = np.nonzero(~ok)[0][200:]
        per_unit = np.bincount(unit[rows[bad]], minlength=len(tally.units))
        for u in np.nonzero(per_unit)[0].tolist():
            tally.add_invalid(u, int(per_unit[u]), [])
    alive[rows[~ok]] = False
    take = np.minimum(length, horizon - emitted[rows])
    for j in range(width):
        step = ok & (j < take)
        if not step.any():
            break
        r = rows[step]
        t = tokens[step, j]
        code[r] = code[r] * base[unit[r]] + t
        node[r] = trie.child[node[r], t]
    emitted[rows[ok]] += take[ok]
    alive[rows[ok & (emitted[rows] >= horizon)]] = False
