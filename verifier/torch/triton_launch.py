"""``kernel[grid](...)`` under exact mode: Triton kernels run as Triton's interpreter runs them.

While exact mode is on, launching a ``@triton.jit`` kernel (also through
``@triton.heuristics`` and a one-config ``@triton.autotune``) runs the kernel's
Python source once per program id, in grid order, as ``TRITON_INTERPRET=1`` does,
with ``triton.language`` bound to the exact ``tl`` of :mod:`.triton_language`:

* a tensor argument becomes a pointer to its storage (an exact tensor's own
  memory, so a store is seen by every view, as on the device);
* an ``int`` argument is an ``int32`` scalar (``int64`` beyond its range), a
  ``float`` a ``float32`` one and a ``bool`` an ``int1`` one, as Triton types them;
  ``tl.constexpr`` parameters and ``None`` stay Python values;
* helpers the kernel calls that are themselves ``@triton.jit`` run the same way.

Nothing here imports Triton: the launch hook is installed only once the code
under audit has imported it, and outside exact sessions it hands launches to Triton.
"""

from __future__ import annotations

import inspect
import itertools
import operator
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from specexact.torch.tensor import ExactTensor, as_exact
from specexact.torch.triton_language import (
    LANGUAGE,
    Block,
    Pointer,
    Program,
    program_var,
)
from specexact.torch.values import session_var, unsupported

__all__ = ["kernel_launches", "launch"]

#: Keyword arguments of a launch that tune the compiled code, not its values.
LAUNCH_OPTIONS = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "stream",
    "launch_cooperative_grid", "launch_pdl", "cluster_dims", "warmup", "debug",
    "sanitize_overflow", "num_buffers_warp_spec", "num_consumer_groups",
    "reg_dec_producer", "reg_inc_consumer", "extern_libs", "device", "device_type",
    "waves_per_eu", "matrix_instr_nonkdim", "kpack", "instruction_sched_variant",
})

_INT32 = (-(2 ** 31), 2 ** 31 - 1)


#: The ``KernelInterface.__getitem__`` Triton had before the hook was installed.
_ORIGINAL: list[Any] = []


@contextmanager
def kernel_launches() -> Iterator[None]:
    """Route ``kernel[grid](...)`` to :func:`launch` during exact executions.

    The first time exact mode runs after the code imported Triton, the launch hook is
    installed on ``KernelInterface`` once for the process; it launches exactly only
    while an exact session is active in the calling thread (a context variable) and
    otherwise hands the launch to Triton unchanged, so concurrent sessions and code
    running outside them never see each other's launches.
    """
    jit = sys.modules.get("triton.runtime.jit")
    interface = getattr(jit, "KernelInterface", None)
    if interface is not None and not _ORIGINAL:
        original = interface.__dict__["__getitem__"]
        _ORIGINAL.append(original)

        def getitem(self: Any, grid: Any) -> Any:
            if session_var.get() is None:
                return original(self, grid)

            def run(*args: Any, **kwargs: Any) -> None:
                launch(self, grid, args, kwargs)
            return run

        getitem.__doc__ = original.__doc__
        interface.__getitem__ = getitem
    yield


def _python_function(kernel: Any) -> tuple[Any, list[Any], dict[str, Any]]:
    """The kernel's Python function, its heuristics and its one autotune config."""
    heuristics: list[Any] = []
    config: dict[str, Any] = {}
    current = kernel
    for _ in range(16):
        if isinstance(current, types.FunctionType):
            return current, heuristics, config
        configs = getattr(current, "configs", None)
        values = getattr(current, "values", None)
        if isinstance(values, dict):
            heuristics.append(values)
        elif configs is not None:
            if len(configs) != 1:
                raise unsupported(
                    f"launching the @triton.autotune kernel {_name(kernel)} with "
                    f"{len(configs)} configs (the one picked depends on timing); give "
                    "it one triton.Config to audit that config")
            config.update(getattr(configs[0], "kwargs", {}))
        current = getattr(current, "fn", None)
        if current is None:
            break
    raise unsupported(f"launching {_name(kernel)}, which is no @triton.jit kernel")


def _name(kernel: Any) -> str:
    """The kernel's name: its Python function's, under any wrapper."""
    current = kernel
    for _ in range(16):
        if isinstance(current, types.FunctionType) or getattr(current, "fn", None) is None:
            break
        current = current.fn
    return str(getattr(current, "__name__", None) or type(kernel).__name__)


def _is_constexpr(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return getattr(annotation, "__name__", None) == "constexpr"


def _grid(grid: Any, meta: dict[str, Any]) -> tuple[int, int, int]:
    g = grid(meta) if callable(grid) else grid
    if not isinstance(g, (tuple, list)):
        g = (g,)
    dims = [operator.index(d) for d in g]
    if not 1 <= len(dims) <= 3 or any(d < 0 for d in dims):
        raise ValueError(f"a Triton grid has 1 to 3 non-negative sizes, got {tuple(dims)}")
    dims += [1] * (3 - len(dims))
    return dims[0], dims[1], dims[2]


def _root(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _start(arr: np.ndarray[Any, Any], root: np.ndarray[Any, Any]) -> int:
    here = int(arr.__array_interface__["data"][0])
    there = int(root.__array_interface__["data"][0])
    return (here - there) // root.itemsize


def pointer(t: torch.Tensor, name: str) -> Pointer:
    """A kernel's pointer argument: the storage of ``t`` from its first element."""
    exact = isinstance(t, ExactTensor)
    arr = as_exact(t).arr
    root = _root(arr)
    if not root.flags["C_CONTIGUOUS"]:
        raise unsupported(f"passing {name} to a Triton kernel: its storage is not laid "
                          "out contiguously (call .contiguous() first)")
    return Pointer(root.reshape(-1), _start(arr, root), t.dtype, name, 0, exact)


def _argument(value: Any, name: str, constexpr: bool) -> Any:
    if constexpr or value is None:
        return getattr(value, "value", value) if type(value).__name__ == "constexpr" \
            else value
    if type(value).__name__ == "constexpr":
        return value.value
    if isinstance(value, torch.Tensor):
        return pointer(value, f"the argument {name}")
    if isinstance(value, bool):
        return Block(torch.tensor(value, dtype=torch.bool))
    if isinstance(value, int):
        dtype = torch.int32 if _INT32[0] <= value <= _INT32[1] else torch.int64
        return Block(torch.tensor(value, dtype=dtype))
    if isinstance(value, float):
        return Block(torch.tensor(value, dtype=torch.float32))
    if isinstance(value, (str, type(None))):
        return value
    raise unsupported(f"the Triton kernel argument {name} of type "
                      f"{type(value).__name__} (tensors, numbers, None and constexprs are "
                      "modelled)")


def _substituted(fn: types.FunctionType) -> types.FunctionType:
    """``fn`` with ``triton.language`` (under any name) bound to the exact ``tl`` and
    the ``@triton.jit`` helpers it calls run as their Python source."""
    names: dict[str, Any] = {}
    for key, value in fn.__globals__.items():
        replaced = _replacement(value)
        if replaced is not value:
            names[key] = replaced
    glob = {**fn.__globals__, **names} if names else fn.__globals__
    clone = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__,
                               fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    return clone


def _replacement(value: Any) -> Any:
    if isinstance(value, types.ModuleType):
        return LANGUAGE if value.__name__.startswith("triton.language") else value
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    if module.startswith("triton.runtime") and hasattr(value, "fn"):
        return _helper(value)
    if module.startswith("triton.language") and kind.__name__ == "constexpr":
        return value.value
    if isinstance(value, types.FunctionType) and \
            (value.__module__ or "").startswith("triton.language"):
        return getattr(LANGUAGE, value.__name__)
    return value


def _helper(jitted: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        fn, _, _ = _python_function(jitted)
        return _substituted(fn)(*args, **kwargs)
    call.__name__ = _name(jitted)
    return call


def launch(kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Run ``kernel[grid](*args, **kwargs)`` once per program id, exactly."""
    fn, heuristics, config = _python_function(kernel)
    signature = inspect.signature(fn)
    params = signature.parameters
    given = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS or k in params}
    bound = signature.bind_partial(*args, **given)
    for key, value in config.items():
        bound.arguments.setdefault(key, value)
    for values in heuristics:
        for key, rule in values.items():
            bound.arguments[key] = rule(dict(bound.arguments))
    missing = [p for p in params if p not in bound.arguments
               and params[p].default is inspect.Parameter.empty]
    if missing:
        raise TypeError(f"{fn.__name__}[grid](...) misses the arguments {missing}")
    bound.apply_defaults()
    meta = dict(bound.arguments)
    size = _grid(grid, meta)
    call = {name: _argument(value, name, _is_constexpr(params[name].annotation))
            for name, value in bound.arguments.items()}
    body = _substituted(fn)
    for ids in itertools.product(range(size[0]), range(size[1]), range(size[2])):
        token = program_var.set(Program(ids, size))
        try:
            body(**call)
        finally:
            program_var.reset(token)
