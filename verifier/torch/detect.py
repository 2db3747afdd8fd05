"""Tell whether code draws from torch's generators (so only ``--torch`` mode can judge it).

Importing this module does not import torch; the checks import it only if
the function's module already did.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TORCH_RANDOMNESS_MESSAGE", "torch_randomness_reason"]

TORCH_RANDOMNESS_MESSAGE = "this function draws from torch's generator; use --torch"


def _generator_params(fn: Callable[..., Any]) -> tuple[bool, bool]:
    """(a parameter is annotated torch.Generator, a parameter is named generator/gen)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False, False
    annotated = named = False
    for param in params:
        named = named or param.name in ("generator", "gen")
        text = str(param.annotation if isinstance(param.annotation, str)
                   else getattr(param.annotation, "__qualname__", ""))
        if "Generator" in text and "numpy" not in text and "np." not in text:
            annotated = True
    return annotated, named


def torch_randomness_reason(fn: Callable[..., Any], p: Sequence[Any] = (0.5, 0.5),
                            q: Sequence[Any] = (0.25, 0.75)) -> str | None:
    """:data:`TORCH_RANDOMNESS_MESSAGE` if ``fn`` uses torch's randomness, else None.

    ``fn`` uses it when a parameter is annotated ``torch.Generator``, or (in a
    module that imports torch) named ``generator``/``gen``, or when
    calling ``fn(p, q)`` on float32 tensors (real torch, one call) advances
    torch's global generator; the generator's state is restored afterwards.
    Exceptions of that call are swallowed: only the generator is observed.
    """
    from specexact.torch.unwrap import unwrap

    inner = unwrap(fn)
    annotated, named = _generator_params(inner)
    if annotated:
        return TORCH_RANDOMNESS_MESSAGE
    torch = sys.modules.get("torch")
    module = sys.modules.get(getattr(inner, "__module__", "") or "")
    if torch is None or (module is not None and "torch" not in vars(module)):
        return None  # code that never imported torch cannot draw from it
    if named:
        return TORCH_RANDOMNESS_MESSAGE
    before = torch.random.get_rng_state()
    try:
        inner(torch.tensor([float(x) for x in p]), torch.tensor([float(x) for x in q]))
    except Exception:  # only the generator's state matters here
        pass
    finally:
        after = torch.random.get_rng_state()
        torch.random.set_rng_state(before)
    return None if torch.equal(before, after) else TORCH_RANDOMNESS_MESSAGE
