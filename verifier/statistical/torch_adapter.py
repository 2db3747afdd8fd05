"""Audit torch samplers statistically: ``fn(p, q, generator)`` with CPU tensors.

Importing this module does not import torch; :func:`torch_sampler` does, and
raises :class:`~specexact.errors.MissingDependency` when torch is absent.

>>> from specexact.statistical.audit import statistical_audit
>>> statistical_audit(torch_sampler(my_torch_fn), seed=0)   # doctest: +SKIP
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from specexact.errors import InvalidArgument
from specexact.floats.scalars import torch_module

__all__ = ["torch_sampler"]


def torch_sampler(fn: Callable[..., Any], *, dtype: str = "float32"
                  ) -> Callable[[Any, Any, Any], Any]:
    """Wrap ``fn(p, q, generator)`` (or ``fn(p, q)``, drawing from torch's global
    generator) into the numpy protocol of the statistical audit.

    Each call receives p and q as CPU tensors of ``dtype`` (``"float32"``,
    ``"float64"``, ``"float16"`` or ``"bfloat16"``) and a ``torch.Generator``
    seeded once per numpy Generator, so a seeded audit is reproducible.  A
    one-element integer tensor result becomes an int; anything else is handed
    back untouched for the audit to reject.
    """
    torch = torch_module("the torch adapter")
    if not callable(fn):
        msg = f"fn={fn!r} is not callable"
        raise InvalidArgument(msg)
    tdtype = getattr(torch, dtype, None) if isinstance(dtype, str) else None
    if tdtype is None or not isinstance(tdtype, torch.dtype) or not tdtype.is_floating_point:
        msg = (f"dtype={dtype!r} is not a torch floating dtype; valid: 'float32', "
               "'float64', 'float16', 'bfloat16'")
        raise InvalidArgument(msg)
    state: dict[str, Any] = {"rng": None, "generator": None}
    from specexact.statistical.batched import takes_generator

    # fn(p, q) draws from torch's global generator: called without one (the CLI
    # seeds the global generator from --seed).
    with_generator = takes_generator(fn, 3)

    def adapted(p: Any, q: Any, rng: Any) -> Any:
        if state["rng"] is not rng:
            # One torch stream per numpy stream: cheap, and reproducible.
            generator = torch.Generator(device="cpu")
            generator.manual_seed(int(rng.integers(0, 2**63 - 1)))
            state["rng"], state["generator"] = rng, generator
        pt, qt = torch.as_tensor(p, dtype=tdtype), torch.as_tensor(q, dtype=tdtype)
        out = fn(pt, qt, state["generator"]) if with_generator else fn(pt, qt)
        if isinstance(out, torch.Tensor) and out.numel() == 1 \
                and not out.dtype.is_floating_point and out.dtype != torch.bool:
            return operator.index(out.item())
        return out

    adapted.__name__ = getattr(fn, "__name__", "torch_sampler")
    return adapted
