"""The batch signature, sampled: the exact mode's properties on the real kernel.

The code under test is ``fn(draft_token_ids [B, k], draft_probs [B, k, V],
target_probs [B, k + 1, V], generators) -> [B, k + 1]`` (``--signature
batch``, see :mod:`specexact.torch.batch`): ``-1`` pads a row that drafted
fewer tokens, ``generators`` holds one ``torch.Generator`` (on the device) or
``None`` per row, and each returned row holds the emitted tokens then ``-1``.
It runs on real torch tensors of ``dtype`` on ``device``.

Each call hands the kernel a large batch: a block of six requests (two equal
rows of ``k`` drafts, two rows of one draft padded with different fillers, a
row with no draft, a seeded row) repeated; specexact draws every row's drafts
from its own ``q``.  Each row's emitted tokens, continued by its target rows
(as :func:`~specexact.torch.batch.stream_law` does), are counted per property:

* **row law**: the full row, the row with no draft, and the seeded row, each
  against the product law of its target rows;
* **independence**: the first tokens of the two equal rows of a block, jointly,
  against the product of their exact laws (a G-test on the contingency table);
* **padding**: the two padded rows (uniform and one-hot fillers) against their
  exact law, and any token at a padded position (or after ``-1``) a certain failure;
* **batch invariance**: the full row alone (``B = 1``, one call per draw) against
  the same exact law it is tested against inside the batch;
* **seeds**: every seeded row is called again, with the same drafts and a
  generator seeded the same, in a batch of seeded rows only; any token that
  differs is a certain failure (with the example).

The decision is that of :mod:`specexact.statistical.batched` (certain failures,
then a G-test per case and Holm); a pass is statistical, not a proof.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from specexact.statistical.audit import DEFAULT_ALPHA, Case, StatisticalReport, scipy_stats
from specexact.statistical.batched import (
    Backend,
    Batch,
    ProgressCallback,
    Tally,
    Unit,
    audit_backend,
    check_common,
    crash_text,
    run_batches,
)
from specexact.validation import check_integer

__all__ = [
    "BATCH_SIGNATURE_PROPERTIES",
    "DEFAULT_BATCH_SIGNATURE_SAMPLES",
    "batch_signature_audit",
    "property_verdicts",
]

#: Draws per case (the B = 1 case makes one call per draw).
DEFAULT_BATCH_SIGNATURE_SAMPLES = 20_000
#: Rows of one call, at most (the B = 1 case runs as many calls per batch / 8).
DEFAULT_BATCH_SIGNATURE_ROWS = 1 << 12

#: The properties, in the order of the exact mode's report.
BATCH_SIGNATURE_PROPERTIES = ("row law", "independence", "padding", "batch invariance",
                              "seeds")

Row = tuple[Fraction, ...]


def _row(*weights: int) -> Row:
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


@dataclass(frozen=True)
class _Request:
    """One request of the block: its draft rows, its target rows, its filler, seeded."""

    q: tuple[Row, ...]
    p: tuple[Row, ...]
    filler: Row | None = None
    seeded: bool = False


def _requests(k: int) -> tuple[_Request, ...]:
    """The block: full, full (equal), one draft x 2 fillers, no draft, seeded."""
    qs = [_row(5, 2, 1), _row(1, 1, 2), _row(2, 3, 3), _row(1, 4, 1)]
    ps = [_row(1, 3, 4), _row(3, 1, 1), _row(1, 1, 1), _row(4, 1, 3), _row(2, 5, 1)]
    q = tuple(qs[j % len(qs)] for j in range(k))
    p = tuple(ps[j % len(ps)] for j in range(k + 1))
    full = _Request(q, p)
    return (full, full,
            _Request(q[:1], p[:2], filler=_row(1, 1, 1)),
            _Request(q[:1], p[:2], filler=_row(1, 0, 0)),
            _Request((), p[:1]),
            _Request(q, p, seeded=True))


def _seq_case(name: str, rows: Sequence[Row]) -> Case:
    """The product law of ``rows`` over their token sequences."""
    seqs = list(itertools.product(*(range(len(r)) for r in rows)))
    law = []
    for s in seqs:
        mass = Fraction(1)
        for r, x in zip(rows, s, strict=True):
            mass *= r[x]
        law.append(mass)
    return Case(name, tuple(law), tuple(law), tuple(",".join(map(str, s)) for s in seqs))


def _cases(block: Sequence[_Request], k: int) -> tuple[Case, ...]:
    full, _, short, _, empty, seeded = block
    return (
        _seq_case(f"row law: {k} drafts, row 0 of a batch of 6", full.p),
        _seq_case("row law: no draft, row 4", empty.p),
        _seq_case(f"row law: seeded row, {k} drafts, row 5", seeded.p),
        _seq_case("independence: first tokens of rows 0 and 1", (full.p[0], full.p[0])),
        _seq_case("padding: 1 draft, uniform filler, row 2", short.p),
        _seq_case("padding: 1 draft, one-hot filler, row 3", short.p),
        _seq_case(f"batch invariance: row 0 alone (B = 1), {k} drafts", full.p),
        _seq_case("seeds: seeded row, again among seeded rows only", seeded.p),
    )


def batch_signature_audit(fn: Callable[..., Any], *, k: int = 2, samples: int | None = None,
                          seed: int = 0, alpha: Fraction | float = DEFAULT_ALPHA,
                          max_seconds: float | None = None, device: str = "cpu",
                          dtype: str | None = None,
                          batch_rows: int = DEFAULT_BATCH_SIGNATURE_ROWS,
                          progress: ProgressCallback | None = None) -> StatisticalReport:
    """Audit the batch kernel ``fn`` (see the module doc) with ``k`` drafts per row.

    Each case gets ``samples`` draws (default :data:`DEFAULT_BATCH_SIGNATURE_SAMPLES`);
    ``seed`` fixes every draft, every generator and torch's global generator;
    ``max_seconds`` bounds the run (:class:`~specexact.errors.Undecided`).
    """
    check_integer(k, "k", min_value=1)
    samples = DEFAULT_BATCH_SIGNATURE_SAMPLES if samples is None else samples
    alpha_f = check_common(samples, seed, alpha, batch_rows)
    backend = audit_backend(fn, array="torch", device=device, dtype=dtype, seed=seed,
                            generators="per-row")
    scipy_stats()  # fail before any draw if scipy is missing
    block = _requests(k)
    units = tuple(Unit(c, None) for c in _cases(block, k))
    mode = (f"batched, torch {backend.dtype} tensors on {backend.device}, batch signature, "
            f"k {k}, per-row generators")
    report = run_batches(units, _block_batch(fn, block, k, backend), samples=samples,
                         seed=seed, alpha=alpha_f, batch_rows=batch_rows, backend=backend,
                         max_seconds=max_seconds, progress=progress, mode=mode)
    return replace(report, mode=f"{mode}; properties: {property_verdicts(report)}; panel")


def property_verdicts(report: StatisticalReport) -> str:
    """Each property with its verdict and its number of cases, in the exact mode's order:
    ``"row law pass (3 cases), independence FAIL (1 case), ..."``."""
    parts = []
    for name in BATCH_SIGNATURE_PROPERTIES:
        mine = [c for c in report.cases if c.case.name.startswith(f"{name}:")]
        verdict = "FAIL" if any(c.rejected for c in mine) else "pass"
        parts.append(f"{name} {verdict} ({len(mine)} case{'s' if len(mine) != 1 else ''})")
    return ", ".join(parts)


class _Caller:
    """Builds the tensors of a batch of requests, calls ``fn``, checks the result."""

    def __init__(self, fn: Callable[..., Any], k: int, backend: Backend) -> None:
        self.fn, self.k, self.backend = fn, k, backend
        np = backend.np
        self.rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            (backend.seed, 5))))
        self.seeds = np.random.SeedSequence((backend.seed, 6)).generate_state(1, np.uint64)
        self.next_seed = int(self.seeds[0]) & ((1 << 62) - 1)

    def drafts(self, req: _Request, n: int) -> Any:
        """``n`` draft rows of ``req``: ids [n, k], -1 past its drafts."""
        np = self.backend.np
        ids = np.full((n, self.k), -1, dtype=np.int64)
        for j, q in enumerate(req.q):
            ids[:, j] = self.rng.choice(len(q), size=n, p=[float(x) for x in q])
        return ids

    def generator(self, seed: int) -> Any:
        torch = self.backend.torch
        gen = torch.Generator(device=self.backend.device)
        gen.manual_seed(seed)
        return gen

    def call(self, reqs: Sequence[_Request], ids: Any, generators: list[Any],
             tally: Tally) -> Any:
        """The result as int64 [B, k + 1], or None (recorded in ``tally`` for every unit)."""
        np = self.backend.np
        k = self.k
        rows = len(reqs)
        q = np.zeros((rows, k, 3))
        p = np.zeros((rows, k + 1, 3))
        for b, req in enumerate(reqs):
            filler = [float(x) for x in (req.filler or (Fraction(1, 3),) * 3)]
            for j in range(k):
                q[b, j] = [float(x) for x in req.q[j]] if j < len(req.q) else filler
            for j in range(k + 1):
                p[b, j] = [float(x) for x in req.p[j]] if j < len(req.p) else filler
        try:
            out = self.fn(self.backend.ids(ids), self.backend.probs(q),
                          self.backend.probs(p), generators)
        except Exception as exc:
            tally.crash = crash_text(exc)
            return None
        try:
            arr = self.backend.to_numpy(out)
            why = None
        except TypeError as exc:
            arr, why = None, str(exc)
        if arr is not None and arr.shape != (rows, k + 1):
            why = f"returned shape {list(arr.shape)} for {rows} rows; expected " \
                  f"[{rows}, {k + 1}]"
        elif arr is not None and (arr.dtype == np.bool_
                                  or not np.issubdtype(arr.dtype, np.integer)):
            why = f"returned {arr.dtype} values, not integer token ids"
        if why is not None:
            for u in range(len(tally.units)):
                tally.add_invalid(u, rows, [why])
            return None
        assert arr is not None
        return arr.astype(np.int64)


def _judge_rows(tokens: Any, req: _Request, unit: int, tally: Tally, rng: Any,
                np: Any, skip: Any = None) -> Any:
    """Count the rows' emitted tokens continued by the target (or mark them invalid),
    leaving out the ``skip`` rows; returns the continued sequences' codes (-1 for an
    invalid row)."""
    width = tokens.shape[1]
    pad = tokens == -1
    length = np.where(pad.any(axis=1), pad.argmax(axis=1), width)
    col = np.arange(width)[None, :]
    after = (col >= length[:, None])
    ok = (length >= 1) & (length <= len(req.p))
    ok &= np.where(after, tokens == -1, (tokens >= 0) & (tokens < 3)).all(axis=1)
    code = np.zeros(len(tokens), dtype=np.int64)
    for j, row in enumerate(req.p):
        fill = rng.choice(3, size=len(tokens), p=[float(x) for x in row])
        x = np.where(j < length, tokens[:, j].clip(0, 2), fill)
        code = code * 3 + x
    code[~ok] = -1
    if skip is not None:
        ok &= ~skip
    bad = np.nonzero(~ok & (code < 0))[0]
    if len(bad):
        tally.add_invalid(unit, len(bad), [_bad_text(tokens[i], req) for i in bad[:3]])
    tally.add_counts(unit, np.bincount(code[ok], minlength=3 ** len(req.p)).tolist())
    return code


def _bad_text(row: Any, req: _Request) -> str:
    cells = row.tolist()
    if cells[0] == -1:
        return f"emitted {cells}: no token"
    return f"emitted {cells} from a row of {len(req.q)} drafts (a token at a padded " \
           "position, after -1, or outside the vocabulary 0..2)"


def _block_batch(fn: Callable[..., Any], block: Sequence[_Request], k: int,
                 backend: Backend) -> Batch:
    np = backend.np
    caller = _Caller(fn, k, backend)
    m = len(block)
    full, _, _, _, _, seeded_req = block

    def batch(unit_of_row: Any, r: int, tally: Tally) -> bool:
        # The mixed batch: r blocks of the six requests.
        reqs = [block[b % m] for b in range(r * m)]
        ids = np.empty((r * m, k), dtype=np.int64)
        for b, req in enumerate(block):
            ids[b::m] = caller.drafts(req, r)
        seeds = [caller.next_seed + i for i in range(r)]
        caller.next_seed += r
        gens = [caller.generator(seeds[b // m]) if reqs[b].seeded else None
                for b in range(r * m)]
        out = caller.call(reqs, ids, gens, tally)
        if out is None:
            return False
        _judge_rows(out[0::m], full, 0, tally, caller.rng, np)
        _judge_rows(out[4::m], block[4], 1, tally, caller.rng, np)
        mixed = _judge_rows(out[5::m], seeded_req, 2, tally, caller.rng, np)
        _first_tokens(out[0::m], out[1::m], 3, tally, np)
        _judge_rows(out[2::m], block[2], 4, tally, caller.rng, np)
        _judge_rows(out[3::m], block[3], 5, tally, caller.rng, np)
        # B = 1: the full row alone, one call per draw.
        for _ in range(r):
            one = caller.call([full], caller.drafts(full, 1), [None], tally)
            if one is None:
                return False
            _judge_rows(one, full, 6, tally, caller.rng, np)
        # Seeds: the seeded rows again, same drafts, generators seeded the same.
        again = caller.call([seeded_req] * r, ids[5::m],
                            [caller.generator(s) for s in seeds], tally)
        if again is None:
            return False
        differ_rows = (again != out[5::m]).any(axis=1) & (mixed >= 0)
        _judge_rows(again, seeded_req, 7, tally, caller.rng, np, skip=differ_rows)
        differ = np.nonzero(differ_rows)[0]
        if len(differ):
            tally.invalid_what[7] = "of a seeded row changed with its neighbours"
            tally.add_invalid(7, len(differ), [
                f"seeded row emitted {out[5::m][i].tolist()} at row {5 + m * i} of a batch of "
                f"{r * m}, {again[i].tolist()} with the same seed and drafts at row {i} "
                f"of a batch of {r} seeded rows" for i in differ[:3]])
        return True

    return batch


def _first_tokens(a: Any, b: Any, unit: int, tally: Tally, np: Any) -> None:
    """The joint counts of two rows' first tokens (3 x 3 cells)."""
    ok = (a[:, 0] >= 0) & (a[:, 0] < 3) & (b[:, 0] >= 0) & (b[:, 0] < 3)
    code = a[ok, 0] * 3 + b[ok, 0]
    tally.add_counts(unit, np.bincount(code, minlength=9).tolist())
    bad = int((~ok).sum())
    if bad:
        tally.add_invalid(unit, bad, ["a first token outside the vocabulary 0..2"])
