"""A batch of requests as engines verify it, run exactly.

``fn(draft_token_ids [B, k], draft_probs [B, k, V], target_probs [B, k + 1, V],
generators) -> LongTensor [B, k + 1]`` is vLLM's rejection-sampler convention:
a row that drafted ``n < k`` tokens has ``-1`` in its last ``k - n`` draft ids,
``generators`` holds one entry per row (a ``torch.Generator`` handed in from
outside the call, or ``None``: the request uses torch's global generator), and
each returned row holds the emitted tokens followed by ``-1``.

A :class:`BatchRow` is one request: its ``n`` drafts' rows ``q``, its
``n + 1`` target rows ``p``, the rows that fill its padded positions (what the
kernel must never read as tokens) and whether it is seeded.  One execution
(:func:`batch_program`) draws each row's drafts from its own ``q`` (the lazy
``rng.categorical`` of the engine), builds the tensors and calls ``fn``; the
enumeration of it is the exact joint law of the batch's emitted rows.

Seeds are decided on a coupled execution (:func:`seeded_program`): the kernel
is called once per context, the seeded row's inputs and drafts the same in each
and its generator set back to the same state before each call, so that every
call draws the same lazy numbers from it (a stream owned by that row); the
other rows and torch's global generator draw afresh.  A kernel that honours
seeds returns the same tokens for the row in every context, and leaves its
generator at the same position, on every path.

The target of a row (:func:`stream_law`) is the law of the ``n + 1`` tokens a
lossless verifier's output continued by the target itself would hold: for rows
that do not depend on the prefix, the product of the row's target rows.  It is
exact for every lossless rule, block verification included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product
from typing import Any

import numpy as np
import torch

from specexact.distribution import Distribution, InvalidToken
from specexact.exact.random_source import ExactRandom, LazyToken
from specexact.numbers import ONE, ZERO
from specexact.torch.api import dtype_rows, emitted, torch_dtype
from specexact.torch.mode import session
from specexact.torch.session import UniformMode
from specexact.torch.tensor import as_exact, make
from specexact.torch.unwrap import unwrap
from specexact.torch.values import Semantics

__all__ = [
    "BatchKernel",
    "BatchRow",
    "batch_program",
    "row_outcome",
    "seeded_program",
    "stream_law",
]

Row = tuple[Fraction, ...]
#: One row's emitted tokens, or an InvalidToken saying what was wrong with them.
Outcome = Any


@dataclass(frozen=True)
class BatchRow:
    """One request of a batch: ``len(q)`` drafts (at most ``k``), ``len(q) + 1`` target
    rows, and what fills its ``k - len(q)`` padded positions."""

    #: The draft rows of its drafted positions.
    q: tuple[Row, ...]
    #: Its target rows: one per draft and the bonus row.
    p: tuple[Row, ...]
    #: A row handed at the padded positions of draft_probs and target_probs (a
    #: kernel must not read it; the padding check varies it).
    filler: Row | None = None
    #: Handed a torch.Generator of its own (seeded from outside the call), else None.
    seeded: bool = False
    #: A label for reports ("one-hot target", ...).
    label: str = field(default="", compare=False)

    @property
    def drafts(self) -> int:
        return len(self.q)

    @property
    def vocab(self) -> int:
        return len(self.p[0])

    def with_(self, **changes: Any) -> BatchRow:
        from dataclasses import replace

        return replace(self, **changes)


@dataclass(frozen=True)
class BatchKernel:
    """A batch kernel with how it is run: ``k`` drafts per row, its dtype, and whether
    every case is run again faithfully (``torch.rand`` on the dtype's grid, values in
    ``semantics``)."""

    fn: Callable[..., Any]
    k: int = 2
    dtype: str = "float32"
    faithful: bool = True
    semantics: str = "dtype"

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def _array(rows: Sequence[Sequence[Sequence[Fraction]]], dtype: torch.dtype,
           semantics: Semantics) -> np.ndarray[Any, Any]:
    """The ``[B, n, V]`` object array of probability rows, rounded to ``dtype`` in dtype
    semantics."""
    if semantics == "dtype":
        rows = [[dtype_rows(r, dtype, "a probability row") for r in block] for block in rows]
    arr = np.empty((len(rows), len(rows[0]), len(rows[0][0])), dtype=object)
    for b, block in enumerate(rows):
        for i, r in enumerate(block):
            arr[b, i, :] = list(r)
    return arr


def _padded(row: BatchRow, k: int) -> tuple[list[Row], list[Row]]:
    """The row's draft rows (k) and target rows (k + 1), padded with its filler."""
    v = row.vocab
    filler = row.filler if row.filler is not None else tuple([Fraction(1, v)] * v)
    qs = list(row.q) + [filler] * (k - row.drafts)
    ps = list(row.p) + [filler] * (k - row.drafts)
    return qs, ps


def _draw_drafts(rows: Sequence[BatchRow], rng: ExactRandom) -> list[list[Any]]:
    return [[rng.categorical(list(q)) for q in row.q] for row in rows]


def _inputs(rows: Sequence[BatchRow], k: int, dtype: torch.dtype,
            semantics: Semantics) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The batch's ``draft_probs`` and ``target_probs`` as object arrays: they depend on
    the rows alone, so a program builds them once and every execution gets a copy."""
    qs, ps = [], []
    for row in rows:
        q, p = _padded(row, k)
        qs.append(q)
        ps.append(p)
    return _array(qs, dtype, semantics), _array(ps, dtype, semantics)


def _call(fn: Callable[..., Any], inputs: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
          drafts: Sequence[list[Any]], generators: list[torch.Generator | None], k: int,
          dtype: torch.dtype) -> Any:
    ids = np.empty((len(drafts), k), dtype=object)
    for b, xs in enumerate(drafts):
        ids[b, :] = [*xs, *([-1] * (k - len(xs)))]
    qs, ps = inputs
    return fn(make(ids, torch.int64), make(qs.copy(), dtype), make(ps.copy(), dtype),
              generators)


def row_outcome(out: Any, b: int, k: int, row: BatchRow) -> Outcome:
    """Row ``b`` of the returned ``[B, k + 1]`` tensor as the tuple of emitted tokens, or
    an InvalidToken naming what the row breaks (a token after ``-1``, more tokens than
    the row's drafts allow, an id outside the vocabulary, none at all)."""
    cells = list(as_exact(out).arr[b].reshape(-1))
    tokens: list[Any] = []
    ended = False
    for j, cell in enumerate(cells):
        x = emitted(cell, "an emitted token")
        if isinstance(x, InvalidToken):
            return x
        if isinstance(x, LazyToken):
            x = x.value()
        if x == -1:
            ended = True
            continue
        if ended:
            return InvalidToken.described(f"token {x} at position {j}, after a -1")
        if not 0 <= x < row.vocab:
            return InvalidToken.described(f"id {x} at position {j}, outside the "
                                          f"vocabulary 0..{row.vocab - 1}")
        tokens.append(x)
    if not tokens:
        return InvalidToken.described("no token (a row emits at least one)")
    if len(tokens) > row.drafts + 1:
        return InvalidToken.described(
            f"{len(tokens)} tokens from a row of {row.drafts} drafts: a padded position "
            "emitted a token")
    return tuple(tokens)


def _checked_shape(out: Any, batch: int, k: int) -> InvalidToken | None:
    if not isinstance(out, torch.Tensor):
        return InvalidToken.described(f"a {type(out).__name__} (the batch signature "
                                      "returns a LongTensor [B, k + 1])")
    if tuple(out.shape) != (batch, k + 1):
        return InvalidToken.described(f"a tensor of shape {list(out.shape)} (expected "
                                      f"[B, k + 1] = [{batch}, {k + 1}])")
    return None


def batch_program(fn: Callable[..., Any], rows: Sequence[BatchRow], k: int, *,
                  dtype: Any = "float32", uniform: UniformMode = "continuous",
                  semantics: Semantics = "exact") -> Callable[[ExactRandom], Any]:
    """``run(rng)``: one execution of the batch; returns the tuple of row outcomes (see
    :func:`row_outcome`).  Its enumeration is the batch's exact joint law."""
    inner = unwrap(fn)
    tdtype = torch_dtype(dtype)
    inputs = _inputs(rows, k, tdtype, semantics)

    def run(rng: ExactRandom) -> Any:
        generators: list[torch.Generator | None] = [
            _outside_generator(b) if row.seeded else None for b, row in enumerate(rows)]
        provided = tuple(g for g in generators if g is not None)
        with session(rng, uniform, provided, semantics):
            drafts = _draw_drafts(rows, rng)
            out = _call(inner, inputs, drafts, generators, k, tdtype)
            bad = _checked_shape(out, len(rows), k)
            if bad is not None:
                return tuple(bad for _ in rows)
            return tuple(row_outcome(out, b, k, row) for b, row in enumerate(rows))

    run.__name__ = getattr(inner, "__name__", "batch")
    return run


def _outside_generator(index: int) -> torch.Generator:
    """A generator as an engine hands a seeded request's: seeded before the call."""
    gen = torch.Generator()
    gen.manual_seed(1_000 + index)
    return gen


def seeded_program(fn: Callable[..., Any], contexts: Sequence[tuple[Sequence[BatchRow], int]],
                   k: int, *, dtype: Any = "float32", uniform: UniformMode = "continuous",
                   semantics: Semantics = "exact") -> Callable[[ExactRandom], Any]:
    """``run(rng)`` for the seeds check: the seeded row (the same :class:`BatchRow`,
    seeded, in every context; ``contexts`` are ``(rows, its index)``) is run once per
    context within one execution, with the same drafts and its generator set back to
    the same state before each call.  Returns, per context, the row's outcome and the
    number of draws its generator's stream advanced by during the call."""
    inner = unwrap(fn)
    tdtype = torch_dtype(dtype)
    own = torch.Generator()
    own.manual_seed(7)
    inputs = [_inputs(rows, k, tdtype, semantics) for rows, _ in contexts]

    def run(rng: ExactRandom) -> Any:
        others = [[_outside_generator(b) if row.seeded and b != at else None
                   for b, row in enumerate(rows)] for rows, at in contexts]
        provided = (own, *(g for gens in others for g in gens if g is not None))
        results = []
        with session(rng, uniform, provided, semantics) as s:
            start = own.get_state()
            mine = None
            for (rows, at), gens, given in zip(contexts, others, inputs, strict=True):
                drafts = _draw_drafts(rows, rng)
                if mine is None:
                    mine = drafts[at]
                drafts[at] = mine
                gens[at] = own
                own.set_state(start)
                out = _call(inner, given, drafts, list(gens), k, tdtype)
                bad = _checked_shape(out, len(rows), k)
                outcome = bad if bad is not None else row_outcome(out, at, k, rows[at])
                results.append((outcome, s.position(own)))
        return tuple(results)

    run.__name__ = getattr(inner, "__name__", "batch")
    return run


def stream_law(row: BatchRow, law: Distribution) -> Distribution:
    """The law of the row's ``n + 1`` tokens: its emitted tokens (``law``), continued
    by the target's own rows after them.  Equal to the product of its target rows
    exactly when the row's verification is lossless; invalid outcomes stay as they are."""
    out: dict[Any, Fraction] = {}
    size = row.drafts + 1
    for outcome, weight in law.items():
        if not isinstance(outcome, tuple) or len(outcome) > size:
            out[outcome] = out.get(outcome, ZERO) + weight
            continue
        rest = row.p[len(outcome):]
        for tail in product(*(range(len(r)) for r in rest)):
            w = weight
            for r, x in zip(rest, tail, strict=True):
                w *= r[x] / sum(r, ZERO)
            if w:
                key = outcome + tail
                out[key] = out.get(key, ZERO) + w
    return Distribution(list(out.items()))


def target_law(row: BatchRow) -> Distribution:
    """The product of the row's target rows (each normalised)."""
    weights: dict[Any, Fraction] = {}
    for seq in product(*(range(len(r)) for r in row.p)):
        w = ONE
        for r, x in zip(row.p, seq, strict=True):
            w *= r[x] / sum(r, ZERO)
        if w:
            weights[tuple(seq)] = w
    return Distribution(list(weights.items()))
