"""The torch function mode that routes every torch call to the exact op table, and the
session that installs it for one execution.

The mode sits above the op table; the session's state (:mod:`.session`) sits below
it, and the ops reach the execution in progress through
:data:`~specexact.torch.values.session_var`, set here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from specexact.errors import SpecexactError, describe_exception
from specexact.exact.random_source import ExactRandom
from specexact.torch.ops_elementwise import where
from specexact.torch.ops_pyrandom import module_draws
from specexact.torch.ops_shape import t_, write_into
from specexact.torch.optable import INPLACE_BASES, OPS, PASSTHROUGH, PROPERTIES, SPELLINGS
from specexact.torch.session import Session, UniformMode
from specexact.torch.tensor import FRACTION_OPERATORS, ExactTensor, as_exact
from specexact.torch.triton_launch import kernel_launches
from specexact.torch.unwrap import scripted_as_python
from specexact.torch.values import (
    Semantics,
    rng_var,
    semantics_var,
    session_var,
    unsupported,
)

__all__ = ["ExactMode", "session"]

_AUGMENTED = {
    "__iadd__": "add", "__isub__": "sub", "__imul__": "mul", "__itruediv__": "div",
    "__idiv__": "div", "__ifloordiv__": "floor_divide", "__imod__": "remainder",
    "__ipow__": "pow", "__iand__": "bitwise_and", "__ior__": "bitwise_or",
    "__ixor__": "bitwise_xor",
}


def _op_name(func: Any) -> str:
    qual = str(getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func)))
    module = getattr(func, "__module__", None)
    return f"{module}.{qual}" if module and "Tensor" not in qual else qual


class ExactMode(TorchFunctionMode):
    """Every torch function and Tensor method, on exact tensors."""

    #: When a set, every op name dispatched is added to it (the op-table tests use it).
    record: set[str] | None = None

    def __enter__(self) -> ExactMode:
        # Scripted helpers run as their Python source, module-level draws of
        # Python's random and numpy.random are lazy, and Triton kernels launch
        # exactly, while the mode is on.
        self._patches = ExitStack()
        self._patches.enter_context(scripted_as_python())
        self._patches.enter_context(module_draws())
        self._patches.enter_context(kernel_launches())
        try:
            super().__enter__()  # type: ignore[no-untyped-call]
        except BaseException:
            self._patches.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)  # type: ignore[no-untyped-call]
        finally:
            self._patches.close()

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if kwargs.get("out") is not None:
            raise unsupported(f"{_op_name(func)} with out=")
        kwargs.pop("out", None)
        name = getattr(func, "__name__", None)
        if name == "__get__":
            return _property(func, args)
        if name == "__set__":
            raise unsupported(f"setting Tensor.{func.__self__.__name__}")
        if func is torch.Tensor.where:
            self_, condition, other = args[0], args[1], args[2] if len(args) > 2 \
                else kwargs["other"]
            return where(condition, self_, other)
        if name == "__hash__":
            return object.__hash__(args[0])
        if name is None:
            raise unsupported(f"the torch operation {func!r}")
        if ExactMode.record is not None:
            ExactMode.record.add(name)
        if name in PASSTHROUGH and name != "result_type":
            return func(*args, **kwargs)
        impl = OPS.get(name)
        if impl is not None:
            return _call(impl, name, args, kwargs)
        base = _AUGMENTED.get(name)
        if base is None and name.endswith("_") and name[:-1] in INPLACE_BASES:
            base = name[:-1]
        if base is not None and base in OPS:
            target = args[0]
            if not isinstance(target, ExactTensor):
                raise unsupported(f"{name} on a tensor made outside exact mode")
            result = _call(OPS[base], base, args, kwargs)
            return write_into(target, result)
        spelling = SPELLINGS.get(name)
        hint = f"; write it as {spelling}" if spelling else ""
        raise unsupported(f"the torch operation {_op_name(func)} (not in the exact op "
                          f"table of specexact.torch.optable{hint})")


#: Errors an exact implementation may raise only by its own failure (or a call form
#: it does not support): reported as "no verdict", never as a crash of the code.
_TOOL_ERRORS = (TypeError, ValueError, AttributeError, KeyError, AssertionError, NameError,
                ZeroDivisionError)


def _call(impl: Any, name: str, args: Any, kwargs: dict[str, Any]) -> Any:
    try:
        return impl(*args, **kwargs)
    except SpecexactError:
        raise
    except _TOOL_ERRORS as error:
        if error.__traceback__ is not None and error.__traceback__.tb_next is None:
            raise unsupported(f"torch.{name} called as ({_shape_of_call(args, kwargs)}): "
                              f"{error}") from error
        # A shape mismatch torch would report as RuntimeError, or a failure of the
        # exact implementation: either way no verdict rather than a wrong one.
        raise unsupported(f"torch.{name} on these arguments (the exact implementation "
                          f"raised {describe_exception(error)})") from error


def _shape_of_call(args: Any, kwargs: dict[str, Any]) -> str:
    parts = [type(a).__name__ for a in args] + [f"{k}=" for k in kwargs]
    return ", ".join(parts)


def _property(func: Any, args: Any) -> Any:
    prop = func.__self__.__name__
    self_ = args[0]
    if prop in PROPERTIES:
        return func(*args)
    if prop in ("T", "mT"):
        return t_(self_)
    if prop == "data":
        return as_exact(self_)
    if prop == "grad":
        return None
    raise unsupported(f"the Tensor attribute {prop}")


@contextmanager
def session(rng: ExactRandom, uniform: UniformMode,
            provided: tuple[torch.Generator, ...] = (),
            semantics: Semantics | None = None) -> Iterator[Session]:
    """Install the exact mode for one execution (nested sessions are not allowed).

    ``provided`` are the generators handed to the code (their streams are random).
    ``semantics`` is ``"exact"`` unless given: callers that hand the code dtype
    values (see :mod:`.api`) ask for ``"dtype"``.
    """
    chosen: Semantics = "exact" if semantics is None else semantics
    s = Session(rng, uniform, provided, chosen)
    token = rng_var.set(rng)
    sem_token = semantics_var.set(chosen)
    session_token = session_var.set(s)
    try:
        with ExactMode():
            yield s
    finally:
        session_var.reset(session_token)
        semantics_var.reset(sem_token)
        rng_var.reset(token)
        s.restore()


def _fraction_operator(name: str) -> Any:
    def operator(self: Any, other: Any) -> Any:
        # As the mode runs an implementation: with torch's function overrides off.
        with torch._C.DisableTorchFunction():
            return _call(OPS[name], name, (self, other), {})
    return operator


FRACTION_OPERATORS.update(
    (name, _fraction_operator(name))
    for name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__add__",
                 "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                 "__rtruediv__"))
