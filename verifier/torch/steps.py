"""Torch verification code as a decoding step for :mod:`specexact.steps.decode`.

``torch_step(fn, signature=..., gamma=k)`` returns ``step(target, draft,
prefix, rng) -> tuple of tokens``, usable by ``decode_distribution``,
``check_step`` and the audit.  The step draws the k drafts itself, each
from the draft model at the prefix extended by the drafts before it
(``rng.categorical``), reads the models' rows at the right prefixes, hands
them to ``fn`` as exact tensors and returns what ``fn`` emitted.

The rows are the models' exact values (no dtype rounding), so the target
law is the target model's own.  ``check_step`` is exact: with
``uniform="dtype"`` the grid rounding of ``torch.rand`` (order 2**-24) is a
deviation like any other; use ``uniform="continuous"`` to judge structure.

Signatures:

* ``"chain"``: ``fn(draft_token_ids [1, k], draft_probs [1, k, V],
  target_probs [1, k + 1, V]) -> LongTensor [1, k + 1]`` padded with -1
  after the first rejection (the last target row is the bonus row).
  A fourth positional parameter receives ``generators``: one
  ``torch.Generator`` per batch row (one row here), handed in from outside
  the call as an engine hands per-request seeded generators, so each is a
  random stream of its own (vLLM's ``seeded_seqs``).
* ``"hf"``: transformers' ``_speculative_sampling(candidate_input_ids
  [1, n + k], candidate_logits [1, k, V], candidate_length, new_logits
  [1, k + 1, V], is_done_candidate) -> (valid_tokens [1, m], n_matches)``;
  logits are exact logs of the rows (``log 0 = -inf``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import torch

from specexact.distribution import InvalidToken
from specexact.errors import InvalidArgument
from specexact.exact.random_source import ExactRandom
from specexact.torch.api import (
    check_semantics,
    check_uniform,
    dtype_rows,
    emitted,
    log_rows,
    torch_dtype,
)
from specexact.torch.mode import session
from specexact.torch.session import UniformMode
from specexact.torch.tensor import ExactTensor, as_exact, make
from specexact.torch.unwrap import positional_arity, unwrap
from specexact.torch.values import LogR, Semantics, Special
from specexact.validation import check_integer

__all__ = ["SIGNATURES", "torch_step"]

Signature = Literal["chain", "hf"]
SIGNATURES: tuple[str, ...] = ("chain", "hf", "decode")
Step = Callable[[Any, Any, tuple[int, ...], Any], tuple[Any, ...]]


def _tensor(rows: Sequence[Sequence[Any]], dtype: torch.dtype,
            semantics: Semantics = "exact") -> ExactTensor:
    """Probability rows, exact or (dtype semantics) as ``dtype`` stores them."""
    if semantics == "dtype":
        rows = [dtype_rows(row, dtype, "a probability row") for row in rows]
    arr = np.empty((1, len(rows), len(rows[0])), dtype=object)
    for i, row in enumerate(rows):
        arr[0, i, :] = list(row)
    return make(arr, dtype)


def _logits(rows: Sequence[Sequence[Fraction]], dtype: torch.dtype,
            semantics: Semantics = "exact") -> ExactTensor:
    """Log-probability rows: exact logs, or (dtype semantics) torch's log of the rows as
    ``dtype`` stores them."""
    if semantics == "dtype":
        return log_rows(rows, dtype)
    return _tensor([[LogR.of(Fraction(x)) if x > 0 else Special(-math.inf, "log(0) of a row")
                     for x in row] for row in rows], dtype)


def _ids(tokens: Sequence[Any]) -> ExactTensor:
    arr = np.empty((1, len(tokens)), dtype=object)
    arr[0, :] = list(tokens)
    return make(arr, torch.int64)


def _draft_block(draft: Any, prefix: tuple[int, ...], rng: ExactRandom, gamma: int
                 ) -> tuple[list[Any], list[list[Fraction]]]:
    xs: list[Any] = []
    qs: list[list[Fraction]] = []
    for _ in range(gamma):
        q = draft((*prefix, *xs))
        xs.append(rng.categorical(q))
        qs.append(list(q))
    return xs, qs


def _row_tokens(out: Any, what: str) -> list[Any]:
    if not isinstance(out, torch.Tensor):
        return [emitted(x, what) for x in out]
    t = as_exact(out)
    flat = list(t.arr.reshape(-1))
    return [emitted(x, what) for x in flat]


def _chain_tokens(out: Any, gamma: int) -> list[Any]:
    """The row a chain verifier returned: a tensor of shape [1, gamma + 1]."""
    if isinstance(out, torch.Tensor) and tuple(out.shape) != (1, gamma + 1):
        return [InvalidToken.described(
            f"a tensor of shape {list(out.shape)} (--signature chain returns "
            f"[1, gamma + 1] = [1, {gamma + 1}])")]
    return _row_tokens(out, "an emitted token")


def _strip(tokens: list[Any]) -> tuple[Any, ...]:
    """The tokens up to the first -1 padding."""
    out = []
    for x in tokens:
        if isinstance(x, InvalidToken):
            out.append(x)  # not a token: the engine reports it
            continue
        if x == -1:
            break
        out.append(x)
    return tuple(out)


def torch_step(fn: Callable[..., Any], *, signature: str, gamma: int,
               dtype: Any = "float32", uniform: Any = "dtype",
               max_new_tokens: int | None = None, semantics: Any = None) -> Step:
    """A decoding step running the torch verifier ``fn`` exactly (see the module doc).

    ``semantics`` (``chain`` and ``hf``): ``"exact"`` by default, since a step's
    audit compares laws exactly; ``"dtype"`` hands the code the rows as ``dtype``
    stores them (logits as torch's log of those) and computes as the dtype does:
    the faithful variant an audit judges for support violations and crashes.

    ``signature="decode"``: ``fn(input_ids, draft_model, target_model,
    max_new_tokens)`` is a whole generation loop; the step runs it once from
    the prefix and emits its ``max_new_tokens`` tokens (the audit's horizon),
    so its KV-cache and rollback handling is judged too.  ``gamma`` is not used.
    """
    if signature not in SIGNATURES:
        msg = f"signature={signature!r} must be one of {SIGNATURES}"
        raise InvalidArgument(msg)
    if signature == "decode":
        from specexact.torch.decode import decode_step

        if max_new_tokens is None:
            msg = "signature='decode' needs max_new_tokens (the tokens one call emits)"
            raise InvalidArgument(msg)
        return decode_step(fn, max_new_tokens=max_new_tokens, uniform=uniform,
                           semantics=semantics)
    check_integer(gamma, "gamma", min_value=1)
    tdtype = torch_dtype(dtype)
    mode: UniformMode = check_uniform(uniform)
    sem: Semantics = "exact" if semantics is None else check_semantics(semantics, mode)
    inner = unwrap(fn)
    per_row = positional_arity(inner) >= 4

    def chain(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any
              ) -> tuple[Any, ...]:
        generators = [torch.Generator()] if per_row else []
        with session(rng, mode, tuple(generators), sem):
            xs, qs = _draft_block(draft, prefix, rng, gamma)
            ps = [list(target((*prefix, *xs[:i]))) for i in range(gamma + 1)]
            extra = [generators] if per_row else []
            out = inner(_ids(xs), _tensor(qs, tdtype, sem), _tensor(ps, tdtype, sem), *extra)
            return _strip(_chain_tokens(out, gamma))

    def hf(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any) -> tuple[Any, ...]:
        with session(rng, mode, (), sem):
            xs, qs = _draft_block(draft, prefix, rng, gamma)
            ps = [list(target((*prefix, *xs[:i]))) for i in range(gamma + 1)]
            out = inner(_ids([*prefix, *xs]), _logits(qs, tdtype, sem), gamma,
                        _logits(ps, tdtype, sem), False)
            valid = out[0] if isinstance(out, tuple) else out
            return tuple(_row_tokens(valid, "an emitted token"))

    step = chain if signature == "chain" else hf
    step.__name__ = getattr(inner, "__name__", signature)
    return step
