"""The ``decode`` signature: a whole torch generation loop, enumerated exactly.

``fn(input_ids [1, n], draft_model, target_model, max_new_tokens) -> output_ids
[1, n + m]``.  specexact hands exact toy language models as torch callables
that also quack like transformers' models, so loops written for them need no
adapter:

* ``model(input_ids)`` returns logits ``[1, L, V]`` whose row ``i`` is the
  exact log of the model's next-token law after the context up to position
  ``i`` (``log 0 = -inf``); the same tensor answers ``.logits`` and
  ``.past_key_values`` (None when called with ``use_cache=False``, as
  transformers does; ``output="object"`` returns an object with those two
  attributes instead);
* ``model(new_ids, past_key_values=cache)`` reads the context from the cache
  and returns rows for the new ids only.  The cache is a list of one layer's
  ``(key, value)`` pair, tensors ``[1, 1, n, 1]`` holding the context's token
  ids, so a loop that trims it by slicing (``k[:, :, :n]``) or with
  ``crop(n)`` rolls the context back exactly; ``get_seq_length()`` is ``n``;
* ``model.config.vocab_size``, ``model.device``, ``model.dtype``,
  ``model.eval()`` and ``model.to(...)`` answer as a CPU float32 model's would.

The law of the first ``max_new_tokens`` generated tokens is compared with
the target model's own law of continuations of the prompt.  An enumeration
running longer than a few seconds prints its progress to stderr, and one that
is stopped or runs out of budget prints what it had seen.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.distribution import Distribution
from specexact.errors import BudgetExceeded, InvalidArgument
from specexact.exact.engine import enumerate_law
from specexact.exact.guards import real_monotonic
from specexact.exact.random_source import ExactRandom, LazyToken
from specexact.exact.tree import Budget
from specexact.exact.verdict import Comparison, compare_laws
from specexact.steps.decode import target_distribution
from specexact.torch.api import check_semantics, check_uniform, log_rows
from specexact.torch.mode import session
from specexact.torch.tensor import ExactTensor, as_exact, make, read_scalar
from specexact.torch.unwrap import unwrap
from specexact.torch.values import LogR, Semantics, Special, unsupported
from specexact.validation import check_integer

__all__ = ["ExactCache", "ExactLM", "LMConfig", "LMOutput", "check_torch_decode",
           "torch_decode_distribution"]

_CPU = torch.device("cpu")  # made at import: under the exact mode it would be intercepted

#: Seconds before a decode enumeration starts printing progress, and between lines.
PROGRESS_AFTER = 5.0


class ExactCache(list[tuple[ExactTensor, ExactTensor]]):
    """A KV cache whose keys and values are the context's token ids (one layer)."""

    @staticmethod
    def of(tokens: Sequence[int]) -> ExactCache:
        arr = np.empty((1, 1, len(tokens), 1), dtype=object)
        arr[0, 0, :, 0] = list(tokens)
        return ExactCache([(make(arr, torch.int64), make(arr.copy(), torch.int64))])

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return len(cached_tokens(self))

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` positions (a negative one drops that many)."""
        tokens = cached_tokens(self)
        keep = max_length if max_length >= 0 else len(tokens) + max_length
        self[:] = ExactCache.of(tokens[:keep])


def cached_tokens(cache: Any) -> list[int]:
    """The context a cache holds: the ids in its first layer's keys, as the loop left them."""
    try:
        keys = as_exact(cache[0][0])
    except (TypeError, IndexError, KeyError) as error:
        raise unsupported(f"past_key_values={type(cache).__name__} that is not the cache "
                          "the exact model returned (a list of (key, value) pairs)") from error
    if keys.arr.ndim != 4 or keys.arr.shape[0] != 1 or keys.arr.shape[3] != 1:
        raise unsupported(f"a KV cache whose keys have shape {tuple(keys.arr.shape)} (the "
                          "exact model's are [1, 1, n, 1]: trim along dimension 2)")
    return [_token(x) for x in keys.arr[0, 0, :, 0]]


@dataclass(frozen=True)
class LMOutput:
    """What a transformers model returns, reduced to ``.logits`` and the cache."""

    logits: ExactTensor
    past_key_values: ExactCache | None = None

    def __getitem__(self, index: int) -> Any:
        return (self.logits, self.past_key_values)[index]


@dataclass(frozen=True)
class LMConfig:
    """The parts of a transformers config a generation loop reads."""

    vocab_size: int
    is_encoder_decoder: bool = False
    eos_token_id: int | None = None
    pad_token_id: int | None = None


class ExactLM:
    """An exact toy model ``prefix -> row`` as a torch callable ``model(input_ids)``."""

    def __init__(self, model: Callable[[tuple[int, ...]], Sequence[Any]], *,
                 output: str = "tensor", vocab_size: int | None = None,
                 semantics: Semantics = "exact") -> None:
        if output not in ("tensor", "object"):
            msg = f"output={output!r} must be 'tensor' (logits) or 'object' (.logits)"
            raise InvalidArgument(msg)
        self.model = model
        self.output = output
        self.semantics = semantics
        self._vocab_size = vocab_size
        self.device = _CPU
        self.dtype = torch.float32
        self.training = False

    @property
    def config(self) -> LMConfig:
        if self._vocab_size is None:
            msg = "this exact model was built without vocab_size"
            raise AttributeError(msg)
        return LMConfig(self._vocab_size)

    def eval(self) -> ExactLM:
        return self

    def to(self, *args: Any, **kwargs: Any) -> ExactLM:
        return self

    def __call__(self, input_ids: Any = None, *args: Any, past_key_values: Any = None,
                 **kwargs: Any) -> Any:
        if input_ids is None:
            input_ids = args[0] if args else kwargs.get("input_ids")
        ids = as_exact(input_ids)
        if ids.arr.ndim != 2 or ids.arr.shape[0] != 1:
            raise unsupported(f"a model call on input_ids of shape {tuple(ids.arr.shape)} "
                              "(batch size 1 only)")
        before = [] if past_key_values is None else cached_tokens(past_key_values)
        tokens = [*before, *(_token(x) for x in ids.arr[0])]
        rows = [list(self.model(tuple(tokens[: i + 1])))
                for i in range(len(before), len(tokens))]
        if self.semantics == "dtype" and rows:
            # as a float32 model computes them: torch's log of the rows float32 stores
            logits = log_rows(rows, torch.float32)
        else:
            arr = np.empty((1, len(rows), len(rows[0]) if rows else 0), dtype=object)
            for i, row in enumerate(rows):
                arr[0, i, :] = [LogR.of(Fraction(x)) if x > 0
                                else Special(-math.inf, "log(0) of a model row") for x in row]
            logits = make(arr, torch.float32)
        # use_cache=False: transformers' models return no cache (past_key_values=None)
        cache = None if kwargs.get("use_cache") is False else ExactCache.of(tokens)
        if self.output == "object":
            return LMOutput(logits, cache)
        logits.logits = logits  # type: ignore[attr-defined]
        logits.past_key_values = cache  # type: ignore[attr-defined]
        return logits


def _token(x: Any) -> int:
    value = read_scalar(x, "a token fed to a model")
    if isinstance(value, LazyToken):
        return value.value()
    if isinstance(value, Fraction):
        if value.denominator != 1:
            raise unsupported(f"a model fed the non-integer token {value}")
        return int(value)
    return int(value)


class _Progress:
    """Counts the loop's executions; prints a line to stderr every few seconds once slow."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = real_monotonic()
        self.next = self.start + PROGRESS_AFTER
        self.runs = 0
        self.seen: dict[tuple[Any, ...], int] = {}
        #: The stop summary was printed (once per loop).
        self.reported = False

    def record(self, tokens: tuple[Any, ...]) -> None:
        self.runs += 1
        key = tuple(x if isinstance(x, int) else "?" for x in tokens)
        self.seen[key] = self.seen.get(key, 0) + 1
        now = real_monotonic()
        if now >= self.next:
            self.next = now + PROGRESS_AFTER
            print(f"specexact: {self.line(now)}", file=sys.stderr, flush=True)

    def line(self, now: float | None = None) -> str:
        elapsed = (real_monotonic() if now is None else now) - self.start
        return (f"decode loop {self.name}: {self.runs:,} executions in {elapsed:.0f} s, "
                f"{len(self.seen):,} distinct outputs")

    def summary(self) -> str:
        top = sorted(self.seen.items(), key=lambda kv: -kv[1])[:10]
        shown = ", ".join(f"{list(k)} x{n}" for k, n in top)
        more = f" (+{len(self.seen) - len(top)} more)" if len(self.seen) > len(top) else ""
        return (f"{self.line()}; no law is settled until every execution has run; outputs "
                f"reached so far (executions each): {shown}{more}")


def _run(fn: Callable[..., Any], target: Any, draft: Any, prompt: tuple[int, ...],
         max_new_tokens: int, uniform: Any, output: str,
         progress: _Progress | None = None, semantics: Any = None
         ) -> Callable[[ExactRandom], Any]:
    inner = unwrap(fn)
    mode = check_uniform(uniform)
    sem: Semantics = "exact" if semantics is None else check_semantics(semantics, mode)
    vocab = len(list(target(prompt)))

    def run(rng: ExactRandom) -> Any:
        with session(rng, mode, (), sem):
            arr = np.empty((1, len(prompt)), dtype=object)
            arr[0, :] = list(prompt)
            out = inner(make(arr, torch.int64),
                        ExactLM(draft, output=output, vocab_size=vocab, semantics=sem),
                        ExactLM(target, output=output, vocab_size=vocab, semantics=sem),
                        max_new_tokens)
            t = as_exact(out)
            flat = list(t.arr.reshape(-1))
            new = [read_scalar(x, "an emitted token") for x in flat[len(prompt):]]
            emitted = tuple(new[:max_new_tokens])
        if progress is not None:
            progress.record(emitted)
        return emitted

    return run


def decode_step(fn: Callable[..., Any], *, max_new_tokens: int, uniform: Any = "dtype",
                output: str = "tensor", semantics: Any = None
                ) -> Callable[..., tuple[Any, ...]]:
    """The loop ``fn`` as a decoding step: one call generates ``max_new_tokens`` tokens.

    ``semantics="dtype"`` (with ``uniform="dtype"``) runs the loop as a float32
    model's logits feed it: torch's log of each row as float32 stores it, every
    value computed as float32 computes it (the audit's faithful run); by default
    the logits are exact logs and the values exact rationals.

    The step at ``prefix`` hands the loop ``input_ids = [0, *prefix]`` (token 0
    as a one-token prompt) and models that read the ids after the prompt, so
    the audit's models and the loop's agree on every context.
    """
    check_integer(max_new_tokens, "max_new_tokens", min_value=1)
    progress = _Progress(getattr(unwrap(fn), "__name__", "decode"))

    def step(target: Any, draft: Any, prefix: tuple[int, ...], rng: ExactRandom
             ) -> tuple[Any, ...]:
        def after_prompt(model: Any) -> Callable[[tuple[int, ...]], Any]:
            return lambda ids: model(tuple(ids[1:]))

        run = _run(fn, after_prompt(target), after_prompt(draft), (0, *prefix),
                   max_new_tokens, uniform, output, progress, semantics)
        try:
            return tuple(run(rng))
        except (KeyboardInterrupt, BudgetExceeded):
            # the audit was stopped (or ran out of budget) inside the loop: what the
            # loop's executions had reached, once
            if not progress.reported:
                progress.reported = True
                print(f"specexact: stopped: {progress.summary()}", file=sys.stderr,
                      flush=True)
            raise

    step.__name__ = getattr(unwrap(fn), "__name__", "decode")
    return step


def _check_prompt(prompt: Sequence[int], max_new_tokens: int) -> tuple[int, ...]:
    check_integer(max_new_tokens, "max_new_tokens", min_value=1)
    tokens = tuple(prompt)
    if not tokens or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0
                             for t in tokens):
        msg = f"prompt={prompt!r} must be a non-empty sequence of token ids"
        raise InvalidArgument(msg)
    return tokens


def torch_decode_distribution(fn: Callable[..., Any], target: Any, draft: Any, *,
                              max_new_tokens: int, prompt: Sequence[int] = (0,),
                              uniform: Any = "continuous", output: str = "tensor",
                              budget: Budget | None = None) -> Distribution:
    """The exact law of the first ``max_new_tokens`` tokens the loop ``fn`` generates.

    ``target`` and ``draft`` are exact models ``prefix -> row`` (prefixes
    include the prompt).  A loop that emits fewer tokens gives a shorter tuple,
    which the comparison counts as a deviation.
    """
    tokens = _check_prompt(prompt, max_new_tokens)
    progress = _Progress(getattr(unwrap(fn), "__name__", "decode"))
    run = _run(fn, target, draft, tokens, max_new_tokens, uniform, output, progress)
    try:
        return enumerate_law(run, budget=budget, context={"prompt": tokens})
    except (KeyboardInterrupt, BudgetExceeded):
        print(f"specexact: stopped: {progress.summary()}", file=sys.stderr, flush=True)
        raise


def check_torch_decode(fn: Callable[..., Any], target: Any, draft: Any, *,
                       max_new_tokens: int, prompt: Sequence[int] = (0,),
                       uniform: Any = "continuous", output: str = "tensor",
                       budget: Budget | None = None) -> Comparison:
    """Compare the loop's exact law with the target's own continuations of the prompt.

    ``.equal`` is the verdict; ``.difference`` the exact witness per sequence.
    """
    tokens = _check_prompt(prompt, max_new_tokens)
    law = torch_decode_distribution(fn, target, draft, max_new_tokens=max_new_tokens,
                                    prompt=tokens, uniform=uniform, output=output,
                                    budget=budget)
    expected = target_distribution(lambda prefix: target((*tokens, *prefix)),
                                   max_new_tokens, budget=budget)
    vocab = len(list(target(tokens)))
    return compare_laws(expected, law, vocab)
