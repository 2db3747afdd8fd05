"""The supported-op table: every torch function or Tensor method exact mode runs.

``OPS`` maps a name (as ``func.__name__`` spells it: ``add``, ``__getitem__``,
``softmax``...) to its exact implementation; ``add_``-style in-place variants
of any entry are derived.  ``PROPERTIES`` lists the Tensor attributes served
from the real metadata.  Anything else raises
:class:`~specexact.errors.UnsupportedOperation` naming the op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specexact.torch.ops_elementwise import BINARY, UNARY
from specexact.torch.ops_factory import FACTORY
from specexact.torch.ops_layout import LAYOUT, LAYOUT_PROPERTIES
from specexact.torch.ops_random import RANDOM, REFUSED
from specexact.torch.ops_reduce import REDUCE
from specexact.torch.ops_shape import SHAPE

__all__ = ["INPLACE_BASES", "INPLACE_ONLY", "OPS", "PASSTHROUGH", "PROPERTIES", "SPELLINGS",
           "supported_ops"]

OPS: dict[str, Callable[..., Any]] = {**UNARY, **BINARY, **REDUCE, **SHAPE, **FACTORY,
                                      **RANDOM, **LAYOUT}

#: Ops whose ``op_`` in-place form is ``op`` then a write into ``self`` (in its dtype).
INPLACE_BASES: frozenset[str] = frozenset(
    n for n in (*UNARY, *BINARY) if n.isidentifier() and not n.startswith("_")
    and n not in ("where",)) | {"index_put", "scatter"}

#: In-place ops that are not ``op`` + write-back.
INPLACE_ONLY: frozenset[str] = frozenset(
    {"uniform_", "exponential_", "copy_", "fill_", "zero_", "index_put_", "scatter_",
     "requires_grad_"})

#: Tensor attributes answered from the wrapper's real metadata.
PROPERTIES: frozenset[str] = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "layout", "requires_grad",
     "is_leaf", "is_sparse", "is_quantized", "is_meta", "names", "itemsize",
     *LAYOUT_PROPERTIES})

#: A supported way to write what an op outside the table computes, by the op's name
#: (``func.__name__``): the unsupported-op message quotes it.
SPELLINGS: dict[str, str] = {
    "absolute": "torch.abs(x)",
    "count_nonzero": "(x != 0).sum()",
    "masked_select": "x[mask]",
    "nan_to_num": "torch.where(torch.isnan(x), 0.0, x)",
    "log1p": "torch.log(1 + x)",
    "expm1": "torch.exp(x) - 1",
    "exp2": "2 ** x",
    "sigmoid": "1 / (1 + torch.exp(-x))",
    "special_entr": "-(p * torch.log(p))",
    "xlogy": "torch.where(x == 0, 0.0, x * torch.log(y))",
    "chunk": "torch.split(x, size, dim)",
    "roll": "torch.cat((x[-k:], x[:-k]))",
    "tril": "x.masked_fill(torch.arange(n)[None, :] > torch.arange(n)[:, None], 0)",
    "triu": "x.masked_fill(torch.arange(n)[None, :] < torch.arange(n)[:, None], 0)",
    "index_fill": "x[..., index] = value",
    "numpy": "x.tolist() (exact values), or torch ops on the tensor itself",
}


#: Functions that only read metadata or set flags: run as torch runs them.
PASSTHROUGH: frozenset[str] = frozenset(
    {"device", "get_default_dtype", "is_tensor", "is_floating_point", "is_complex",
     "is_grad_enabled", "set_grad_enabled", "_set_grad_enabled", "is_inference",
     "promote_types", "can_cast", "element_size", "get_device",
     # torch.profiler.record_function (a decorator engines put on samplers): it only
     # marks a profiler range, with a name and no tensor
     "_record_function_enter", "_record_function_enter_new",
     "_record_function_exit", "_record_function_exit._RecordFunction"})


def supported_ops() -> list[str]:
    """Sorted names of the ops and attributes exact mode runs (the README's table)."""
    return sorted({*(n for n in OPS if not n.startswith("_") and n not in REFUSED),
                   *(f"{n}_" for n in INPLACE_BASES),
                   *PROPERTIES, *(n for n in PASSTHROUGH if not n.startswith("_")), "T",
                   "finfo"})
