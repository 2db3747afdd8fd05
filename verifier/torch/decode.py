"""The ``decode`` signature: a whole torch generation loop, enumerated exactly.

``fn(input_ids [1, n], draft_model, target_model, max_new_tokens) -> output_ids
[1, n + m]``.  specexact hands exact toy language models as torch callables:
``model(input_ids) -> logits [1, L, V]`` whose row ``i`` is the exact log of
the model's next-token law after ``input_ids[0, :i + 1]`` (``log 0 = -inf``),
or (``output="object"``) the same logits as the ``.logits`` attribute of the
returned object, as transformers' models return them.

The law of the first ``max_new_tokens`` generated tokens is compared with
the target model's own law of continuations of the prompt.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.distribution import Distribution
from specexact.errors import InvalidArgument
from specexact.exact.engine import enumerate_law
from specexact.exact.random_source import ExactRandom, LazyToken
from specexact.exact.tree import Budget
from specexact.exact.verdict import Comparison, compare_laws
from specexact.steps.decode import target_distribution
from specexact.torch.api import check_uniform
from specexact.torch.session import session
from specexact.torch.tensor import ExactTensor, as_exact, make, read_scalar
from specexact.torch.unwrap import unwrap
from specexact.torch.values import LogR, Special, unsupported
from specexact.validation import check_integer

__all__ = ["ExactLM", "LMOutput", "check_torch_decode", "torch_decode_distribution"]


@dataclass(frozen=True)
class LMOutput:
    """What a transformers model returns, reduced to ``.logits``."""

    logits: ExactTensor


class ExactLM:
    """An exact toy model ``prefix -> row`` as a torch callable ``model(input_ids)``."""

    def __init__(self, model: Callable[[tuple[int, ...]], Sequence[Any]], *,
                 output: str = "tensor") -> None:
        if output not in ("tensor", "object"):
            msg = f"output={output!r} must be 'tensor' (logits) or 'object' (.logits)"
            raise InvalidArgument(msg)
        self.model = model
        self.output = output

    def __call__(self, input_ids: Any, *args: Any, **kwargs: Any) -> Any:
        ids = as_exact(input_ids)
        if ids.arr.ndim != 2 or ids.arr.shape[0] != 1:
            raise unsupported(f"a model call on input_ids of shape {tuple(ids.arr.shape)} "
                              "(batch size 1 only)")
        tokens = [_token(x) for x in ids.arr[0]]
        rows = [list(self.model(tuple(tokens[: i + 1]))) for i in range(len(tokens))]
        arr = np.empty((1, len(rows), len(rows[0])), dtype=object)
        for i, row in enumerate(rows):
            arr[0, i, :] = [LogR.of(Fraction(x)) if x > 0
                            else Special(-math.inf, "log(0) of a model row") for x in row]
        logits = make(arr, torch.float32)
        return logits if self.output == "tensor" else LMOutput(logits)


def _token(x: Any) -> int:
    value = read_scalar(x, "a token fed to a model")
    if isinstance(value, LazyToken):
        return value.value()
    if isinstance(value, Fraction):
        if value.denominator != 1:
            raise unsupported(f"a model fed the non-integer token {value}")
        return int(value)
    return int(value)


def _run(fn: Callable[..., Any], target: Any, draft: Any, prompt: tuple[int, ...],
         max_new_tokens: int, uniform: Any, output: str) -> Callable[[ExactRandom], Any]:
    inner = unwrap(fn)
    mode = check_uniform(uniform)

    def run(rng: ExactRandom) -> Any:
        with session(rng, mode):
            arr = np.empty((1, len(prompt)), dtype=object)
            arr[0, :] = list(prompt)
            out = inner(make(arr, torch.int64), ExactLM(draft, output=output),
                        ExactLM(target, output=output), max_new_tokens)
            t = as_exact(out)
            flat = list(t.arr.reshape(-1))
            new = [read_scalar(x, "an emitted token") for x in flat[len(prompt):]]
            return tuple(new[:max_new_tokens])

    return run


def decode_step(fn: Callable[..., Any], *, max_new_tokens: int, uniform: Any = "dtype",
                output: str = "tensor") -> Callable[..., tuple[Any, ...]]:
    """The loop ``fn`` as a decoding step: one call generates ``max_new_tokens`` tokens.

    The step at ``prefix`` hands the loop ``input_ids = [0, *prefix]`` (token 0
    as a one-token prompt) and models that read the ids after the prompt, so
    the audit's models and the loop's agree on every context.
    """
    check_integer(max_new_tokens, "max_new_tokens", min_value=1)

    def step(target: Any, draft: Any, prefix: tuple[int, ...], rng: ExactRandom
             ) -> tuple[Any, ...]:
        def after_prompt(model: Any) -> Callable[[tuple[int, ...]], Any]:
            return lambda ids: model(tuple(ids[1:]))

        run = _run(fn, after_prompt(target), after_prompt(draft), (0, *prefix),
                   max_new_tokens, uniform, output)
        return tuple(run(rng))

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
    return enumerate_law(_run(fn, target, draft, tokens, max_new_tokens, uniform, output),
                         budget=budget, context={"prompt": tokens})


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
