"""Exact mode for unmodified torch code.

Importing this package does not import torch; each entry point imports it
when called (and raises :class:`~specexact.errors.MissingDependency` without it).

>>> from specexact.torch import check_torch_sampler   # doctest: +SKIP
>>> check_torch_sampler(my_torch_fn, ["1/2", "1/2"], ["1/4", "3/4"]).passed  # doctest: +SKIP

By default (``uniform="dtype"``) values are what the code computes in its dtype,
as torch's CPU kernels round them (``semantics="dtype"``); ``semantics="exact"``
computes with exact rationals.  Every verdict says which it used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specexact.exact.tree import Budget
from specexact.floats.scalars import torch_module
from specexact.torch.detect import TORCH_RANDOMNESS_MESSAGE, torch_randomness_reason

__all__ = [
    "TORCH_RANDOMNESS_MESSAGE",
    "assert_torch_preserves_target",
    "check_torch_decode",
    "check_torch_sampler",
    "numpy_output_distribution",
    "softmax_rows",
    "torch_decode_distribution",
    "torch_output_distribution",
    "torch_randomness_reason",
    "torch_rng_sampler",
    "torch_step",
]


def _need_torch() -> None:
    torch_module("torch exact mode")


def torch_output_distribution(fn: Callable[..., Any], p: Sequence[Any], q: Sequence[Any],
                              *, dtype: Any = "float32", uniform: Any = "dtype",
                              semantics: Any = None, budget: Budget | None = None) -> Any:
    """The exact law (a ``Distribution``) of the token torch code ``fn(p, q)`` returns.

    See :func:`specexact.torch.api.torch_output_distribution`.
    """
    _need_torch()
    from specexact.torch import api
    return api.torch_output_distribution(fn, p, q, dtype=dtype, uniform=uniform,
                                         semantics=semantics, budget=budget)


def check_torch_sampler(fn: Callable[..., Any], p: Sequence[Any], q: Sequence[Any], *,
                        dtype: Any = "float32", uniform: Any = "dtype",
                        semantics: Any = None, budget: Budget | None = None,
                        tolerance: Any = None) -> Any:
    """Exact verdict (a ``TorchVerdict``) on torch code ``fn(p, q[, generator])``.

    See :func:`specexact.torch.api.check_torch_sampler`.
    """
    _need_torch()
    from specexact.torch import api
    return api.check_torch_sampler(fn, p, q, dtype=dtype, uniform=uniform,
                                   semantics=semantics, budget=budget, tolerance=tolerance)


def torch_step(fn: Callable[..., Any], *, signature: str, gamma: int,
               dtype: Any = "float32", uniform: Any = "dtype",
               max_new_tokens: int | None = None, semantics: Any = None) -> Any:
    """A decoding step running torch verification code (``"chain"``, ``"hf"`` or
    ``"decode"``, a whole generation loop emitting ``max_new_tokens`` at once).

    See :mod:`specexact.torch.steps`.
    """
    _need_torch()
    from specexact.torch import steps
    return steps.torch_step(fn, signature=signature, gamma=gamma, dtype=dtype,
                            uniform=uniform, max_new_tokens=max_new_tokens,
                            semantics=semantics)


def torch_rng_sampler(fn: Callable[..., Any], *, dtype: Any = "float32",
                      uniform: Any = "continuous", semantics: Any = None) -> Any:
    """Torch code ``fn(p, q[, generator])`` as an engine sampler ``(p, q, rng) -> token``."""
    _need_torch()
    from specexact.torch import api
    return api.as_rng_sampler(fn, dtype=dtype, uniform=uniform, semantics=semantics)


def assert_torch_preserves_target(fn: Callable[..., Any], *, signature: str = "single",
                                  **options: Any) -> int:
    """``AssertionError`` with the exact witness unless torch code ``fn`` preserves p.

    See :func:`specexact.torch.assertion.assert_torch_preserves_target`.
    """
    _need_torch()
    from specexact.torch import assertion
    return assertion.assert_torch_preserves_target(fn, signature=signature, **options)


def torch_decode_distribution(fn: Callable[..., Any], target: Any, draft: Any, *,
                              max_new_tokens: int, **options: Any) -> Any:
    """Exact law of a whole torch generation loop ``fn(input_ids, draft, target, n)``.

    See :mod:`specexact.torch.decode`.
    """
    _need_torch()
    from specexact.torch import decode
    return decode.torch_decode_distribution(fn, target, draft,
                                            max_new_tokens=max_new_tokens, **options)


def check_torch_decode(fn: Callable[..., Any], target: Any, draft: Any, *,
                       max_new_tokens: int, **options: Any) -> Any:
    """Compare a torch generation loop's exact law with the target's (a ``Comparison``)."""
    _need_torch()
    from specexact.torch import decode
    return decode.check_torch_decode(fn, target, draft, max_new_tokens=max_new_tokens,
                                     **options)


def softmax_rows(values: Sequence[Any], dtype: Any = "float32",
                 temperature: float = 1.0) -> Any:
    """A row as an engine hands it over: the float ``softmax(log(p) / temperature)``.

    See :func:`specexact.torch.api.softmax_rows`.
    """
    _need_torch()
    from specexact.torch import api
    return api.softmax_rows(values, dtype, temperature)


def numpy_output_distribution(fn: Callable[[Any, Any, Any], Any], p: Sequence[Any],
                              q: Sequence[Any], **options: Any) -> Any:
    """Exact law of numpy code ``fn(p, q, rng)`` drawing from a ``numpy.random.Generator``.

    See :mod:`specexact.torch.numpy_generator` (numpy only, no torch needed).
    """
    from specexact.torch import numpy_generator
    return numpy_generator.numpy_output_distribution(fn, p, q, **options)
