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

A :class:`Convention` says how the kernel is called and how its rows are read.
Besides the batch signature above, a batched ``chain`` function (the same
tensors; every row drafts ``k`` tokens; a fourth positional parameter, when
it has one, receives the generators) and a batched ``hf`` function
(transformers' ``_speculative_sampling`` shape: ``candidate_input_ids [B, 1 +
k]`` (a one-token prompt, then the drafts), ``candidate_logits [B, k, V]``,
``candidate_length = k``, ``new_logits [B, k + 1, V]``, ``is_done_candidate =
False`` -> ``(valid_tokens [B, m], n_matches)``, row ``b``'s tokens
``valid_tokens[b, :n_matches[b] + 1]``) are judged on the same properties,
those their shape allows.

The target of a row (:func:`stream_law`) is the law of the ``n + 1`` tokens a
lossless verifier's output continued by the target itself would hold: for rows
that do not depend on the prefix, the product of the row's target rows.  It is
exact for every lossless rule, block verification included.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product
from typing import Any

import numpy as np
import torch

from specexact.distribution import Distribution, InvalidToken
from specexact.errors import InvalidArgument
from specexact.exact.random_source import ExactRandom, LazyToken
from specexact.numbers import ONE, ZERO
from specexact.torch.api import dtype_rows, emitted, log_rows, torch_dtype
from specexact.torch.mode import session
from specexact.torch.session import UniformMode
from specexact.torch.tensor import as_exact, make
from specexact.torch.unwrap import positional_arity, unwrap
from specexact.torch.values import LogR, Semantics, Special

__all__ = [
    "CONVENTIONS",
    "BatchKernel",
    "BatchRow",
    "Convention",
    "batch_program",
    "convention",
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
class Convention:
    """How a batched kernel is called and how its returned rows are read: the batch
    signature, or a batched chain or hf function (see the module doc)."""

    name: str
    #: Rows may draft fewer than ``k`` tokens (``-1`` at the end of their draft ids); else
    #: every row drafts ``k`` and the padding property does not apply.
    padded: bool
    #: Whether the per-row generators are handed in: ``"always"``, ``"room"`` (when the
    #: function takes a fourth positional argument) or ``"never"`` (seeds do not apply).
    generators: str
    #: ``fn(ids, qs, ps, generators, k)`` with the batch's tensors.
    call: Callable[..., Any]
    #: ``read(out, batch, k)``: each row's ``k + 1`` cells, ``-1`` after its last token,
    #: or an InvalidToken naming what is wrong with the returned value.
    read: Callable[[Any, int, int], Any]
    #: The inputs are logits (natural logs of the rows), not probabilities.
    logits: bool = False

    def takes_generators(self, fn: Callable[..., Any]) -> bool:
        """Whether ``fn`` is handed the per-row generators."""
        if self.generators == "room":
            return positional_arity(unwrap(fn)) >= 4
        return self.generators == "always"


def _call_tokens(fn: Callable[..., Any], ids: Any, qs: Any, ps: Any,
                 generators: list[torch.Generator | None] | None, k: int) -> Any:
    extra = () if generators is None else (generators,)
    return fn(ids, qs, ps, *extra)


def _call_hf(fn: Callable[..., Any], ids: Any, qs: Any, ps: Any,
             generators: list[torch.Generator | None] | None, k: int) -> Any:
    return fn(ids, qs, k, ps, False)


def _read_tokens(out: Any, batch: int, k: int) -> Any:
    """The ``[B, k + 1]`` tensor's rows."""
    if not isinstance(out, torch.Tensor):
        return InvalidToken.described(f"a {type(out).__name__} (the batch returns a "
                                      "LongTensor [B, k + 1])")
    if tuple(out.shape) != (batch, k + 1):
        return InvalidToken.described(f"a tensor of shape {list(out.shape)} (expected "
                                      f"[B, k + 1] = [{batch}, {k + 1}])")
    arr = as_exact(out).arr
    return [list(arr[b].reshape(-1)) for b in range(batch)]


def _read_hf(out: Any, batch: int, k: int) -> Any:
    """``(valid_tokens [B, m], n_matches)``: row ``b`` holds ``valid_tokens[b, :n + 1]``
    with ``n = n_matches[b]`` (a single count stands for every row)."""
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], torch.Tensor)):
        return InvalidToken.described(f"a {type(out).__name__} (a batched hf function "
                                      "returns (valid_tokens [B, m], n_matches [B]))")
    valid, matches = out
    if valid.dim() != 2 or valid.shape[0] != batch:
        return InvalidToken.described(f"valid_tokens of shape {list(valid.shape)} "
                                      f"(expected [B, m] with B = {batch})")
    if isinstance(matches, torch.Tensor):
        counts = list(as_exact(matches).arr.reshape(-1))
    else:
        counts = [matches]
    if len(counts) == 1:
        counts = counts * batch
    if len(counts) != batch:
        return InvalidToken.described(f"{len(counts)} n_matches for a batch of {batch}")
    arr = as_exact(valid).arr
    cells = []
    for b, cell in enumerate(counts):
        n = emitted(cell, "n_matches")
        if isinstance(n, LazyToken):
            n = n.value()
        if not isinstance(n, int):
            return InvalidToken.described(f"n_matches[{b}] is {n}, not a count")
        if not 0 <= n <= k:
            return InvalidToken.described(f"n_matches[{b}] = {n}, outside 0..{k} (the "
                                          f"row's drafts)")
        if n + 1 > arr.shape[1]:
            return InvalidToken.described(f"n_matches[{b}] = {n}, but valid_tokens has "
                                          f"{arr.shape[1]} columns")
        cells.append([*arr[b, :n + 1], *([-1] * (k - n))])
    return cells


#: The calling conventions a batch is judged in, by the signature's name.
CONVENTIONS: dict[str, Convention] = {c.name: c for c in (
    Convention("batch", padded=True, generators="always", call=_call_tokens,
               read=_read_tokens),
    Convention("chain", padded=False, generators="room", call=_call_tokens,
               read=_read_tokens),
    Convention("hf", padded=False, generators="never", call=_call_hf, read=_read_hf,
               logits=True),
)}


def convention(name: str) -> Convention:
    """The convention named ``name`` (``batch``, ``chain`` or ``hf``)."""
    try:
        return CONVENTIONS[name]
    except KeyError:
        msg = (f"convention={name!r} is not a batched calling convention; use one of "
               f"{', '.join(CONVENTIONS)}")
        raise InvalidArgument(msg) from None


@dataclass(frozen=True)
class BatchKernel:
    """A batch kernel with how it is run: ``k`` drafts per row, its dtype, whether
    every case is run again faithfully (``torch.rand`` on the dtype's grid, values in
    ``semantics``), and its calling convention (``batch``, ``chain`` or ``hf``)."""

    fn: Callable[..., Any]
    k: int = 2
    dtype: str = "float32"
    faithful: bool = True
    semantics: str = "dtype"
    convention: str = "batch"

    def __post_init__(self) -> None:
        convention(self.convention)

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def _block(rows: Sequence[Sequence[Fraction]], dtype: torch.dtype, semantics: Semantics,
           logits: bool) -> list[list[Any]]:
    """One request's rows as the kernel receives them: probabilities (rounded to
    ``dtype`` in dtype semantics) or their logs (exact logs; torch's log of the stored
    rows in dtype semantics)."""
    if logits:
        if semantics == "dtype":
            return [list(r) for r in log_rows(rows, dtype).arr[0]]
        return [[LogR.of(Fraction(x)) if x > 0 else Special(-math.inf, "log(0) of a row")
                 for x in r] for r in rows]
    if semantics == "dtype":
        return [list(dtype_rows(r, dtype, "a probability row")) for r in rows]
    return [list(r) for r in rows]


def _array(rows: Sequence[Sequence[Sequence[Fraction]]], dtype: torch.dtype,
           semantics: Semantics, logits: bool = False) -> np.ndarray[Any, Any]:
    """The ``[B, n, V]`` object array of the batch's rows (see :func:`_block`)."""
    blocks = [_block(block, dtype, semantics, logits) for block in rows]
    arr = np.empty((len(blocks), len(blocks[0]), len(blocks[0][0])), dtype=object)
    for b, block in enumerate(blocks):
        for i, r in enumerate(block):
            arr[b, i, :] = r
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


def _inputs(rows: Sequence[BatchRow], k: int, dtype: torch.dtype, semantics: Semantics,
            how: Convention) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The batch's ``draft_probs`` and ``target_probs`` (or logits) as object arrays:
    they depend on the rows alone, so a program builds them once and every execution
    gets a copy."""
    if not how.padded and any(row.drafts != k for row in rows):
        msg = f"the {how.name} convention has no padded rows: every row drafts k = {k}"
        raise InvalidArgument(msg)
    qs, ps = [], []
    for row in rows:
        q, p = _padded(row, k)
        qs.append(q)
        ps.append(p)
    return (_array(qs, dtype, semantics, how.logits), _array(ps, dtype, semantics, how.logits))


def _call(fn: Callable[..., Any], how: Convention,
          inputs: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
          drafts: Sequence[list[Any]], generators: list[torch.Generator | None] | None,
          k: int, dtype: torch.dtype) -> Any:
    """Call the kernel on one batch; returns each row's cells or an InvalidToken."""
    prompt = [0] if how.logits else []
    ids = np.empty((len(drafts), len(prompt) + k), dtype=object)
    for b, xs in enumerate(drafts):
        ids[b, :] = [*prompt, *xs, *([-1] * (k - len(xs)))]
    qs, ps = inputs
    out = how.call(fn, make(ids, torch.int64), make(qs.copy(), dtype), make(ps.copy(), dtype),
                   generators, k)
    return how.read(out, len(drafts), k)


def row_outcome(cells: Any, b: int, k: int, row: BatchRow) -> Outcome:
    """Row ``b`` of what the kernel returned (its cells, ``-1`` after the last token,
    as the convention reads them) as the tuple of emitted tokens, or an InvalidToken
    naming what the row breaks (a token after ``-1``, more tokens than the row's
    drafts allow, an id outside the vocabulary, none at all)."""
    if isinstance(cells, InvalidToken):
        return cells
    tokens: list[Any] = []
    ended = False
    for j, cell in enumerate(cells[b]):
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


def batch_program(fn: Callable[..., Any], rows: Sequence[BatchRow], k: int, *,
                  dtype: Any = "float32", uniform: UniformMode = "continuous",
                  semantics: Semantics = "exact", calling: str = "batch"
                  ) -> Callable[[ExactRandom], Any]:
    """``run(rng)``: one execution of the batch; returns the tuple of row outcomes (see
    :func:`row_outcome`).  Its enumeration is the batch's exact joint law.  ``calling``
    names the :class:`Convention` (``batch``, ``chain`` or ``hf``)."""
    inner = unwrap(fn)
    how = convention(calling)
    tdtype = torch_dtype(dtype)
    inputs = _inputs(rows, k, tdtype, semantics, how)
    handed = how.takes_generators(inner)

    def run(rng: ExactRandom) -> Any:
        generators: list[torch.Generator | None] = [
            _outside_generator(b) if row.seeded else None for b, row in enumerate(rows)]
        provided = tuple(g for g in generators if g is not None)
        with session(rng, uniform, provided, semantics):
            drafts = _draw_drafts(rows, rng)
            cells = _call(inner, how, inputs, drafts, generators if handed else None, k,
                          tdtype)
            return tuple(row_outcome(cells, b, k, row) for b, row in enumerate(rows))

    run.__name__ = getattr(inner, "__name__", "batch")
    return run


def _outside_generator(index: int) -> torch.Generator:
    """A generator as an engine hands a seeded request's: seeded before the call."""
    gen = torch.Generator()
    gen.manual_seed(1_000 + index)
    return gen


def seeded_program(fn: Callable[..., Any], contexts: Sequence[tuple[Sequence[BatchRow], int]],
                   k: int, *, dtype: Any = "float32", uniform: UniformMode = "continuous",
                   semantics: Semantics = "exact", calling: str = "batch"
                   ) -> Callable[[ExactRandom], Any]:
    """``run(rng)`` for the seeds check: the seeded row (the same :class:`BatchRow`,
    seeded, in every context; ``contexts`` are ``(rows, its index)``) is run once per
    context within one execution, with the same drafts and its generator set back to
    the same state before each call.  Returns, per context, the row's outcome and the
    number of draws its generator's stream advanced by during the call."""
    inner = unwrap(fn)
    how = convention(calling)
    if not how.takes_generators(inner):
        msg = f"the {how.name} function is handed no generators: seeds do not apply"
        raise InvalidArgument(msg)
    tdtype = torch_dtype(dtype)
    own = torch.Generator()
    own.manual_seed(7)
    inputs = [_inputs(rows, k, tdtype, semantics, how) for rows, _ in contexts]

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
                cells = _call(inner, how, given, drafts, list(gens), k, tdtype)
                results.append((row_outcome(cells, at, k, rows[at]), s.position(own)))
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
