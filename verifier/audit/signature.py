"""Reading what a function is from its signature and code: its kind, a short name."""

from __future__ import annotations

import dis
import functools
import inspect
from collections.abc import Callable
from typing import Any

from specexact.audit.kinds import Kind

__all__ = ["describe_arity_problem", "describe_callable", "detect_kind"]

_STEP_NAMES = frozenset({"target", "draft", "prefix", "target_model", "draft_model"})
_SAMPLER_NAMES = frozenset({"p", "q"})


def _binds(signature: inspect.Signature, count: int) -> bool:
    # A step may take the processors (specexact.ProcessorPipeline) as a fifth argument.
    extra = {"processors": None} if count == 4 and "processors" in signature.parameters \
        else {}
    try:
        signature.bind(*range(count), **extra)
    except TypeError:
        return False
    return True


def detect_kind(fn: Callable[..., Any]) -> str | None:
    """Guess 'sampler', 'step' or 'cross-vocab' from ``fn``; None when it cannot tell.

    A sampler takes ``(p, q, rng)``, a step ``(target, draft, prefix, rng)``;
    extra parameters with defaults (a draft length, a tree width) are ignored.
    The number of arguments decides first, so a sampler written as
    ``(target, draft, rng)`` is a sampler; names decide only when both fit.
    A step whose code reads an attribute ``.vocab`` (``target.vocab``) is a
    cross-vocabulary step: same-vocabulary models have no vocabulary to read.
    """
    kind = _kind_from_signature(fn)
    if kind == "step" and _reads_vocab(fn):
        return "cross-vocab"
    return kind


#: Code objects :func:`_reads_vocab` looks through at most (helpers of helpers...).
_MAX_CODE_OBJECTS = 500


def _reads_vocab(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s code reads an attribute named ``vocab``: its nested functions and
    comprehensions included, and the Python functions it calls by a global name or
    through a closure (a rule written as ``def tli(...): return _tli(...)``)."""
    stack: list[tuple[Any, dict[str, Any]]] = []
    seen: set[int] = set()
    pushed: set[int] = set()

    def push(value: Any, *, root: bool = False) -> None:
        function = _python_function(value, library=root)
        if function is None or id(function) in pushed or len(pushed) > _MAX_CODE_OBJECTS:
            return
        pushed.add(id(function))
        stack.append((function.__code__, function.__globals__))
        for cell in function.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            push(contents)

    push(fn, root=True)
    while stack and len(seen) < _MAX_CODE_OBJECTS:
        current, scope = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for instruction in dis.get_instructions(current):
            if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") \
                    and instruction.argval == "vocab":
                return True
            if instruction.opname == "LOAD_GLOBAL":
                push(scope.get(str(instruction.argval)))
        stack.extend((c, scope) for c in current.co_consts if inspect.iscode(c))
    return False


#: Libraries whose functions a step may call but that say nothing about its kind.
_LIBRARIES = ("torch", "numpy", "scipy", "sympy", "hypothesis", "triton", "transformers",
              "tokenizers", "specexact.")


def _python_function(value: Any, *, library: bool = False) -> Any:
    """``value`` as a plain Python function of the user's (partials and wrappers
    unwrapped), or None: builtins, and unless ``library`` the functions of known
    libraries, are not read."""
    while isinstance(value, functools.partial):
        value = value.func
    if not inspect.isfunction(value):
        return None
    value = inspect.unwrap(value)
    if not inspect.isfunction(value):
        return None
    module = getattr(value, "__module__", None) or ""
    if not library and module.startswith(_LIBRARIES) \
            and not module.startswith("specexact.counterexamples"):
        return None
    return value


def _kind_from_signature(fn: Callable[..., Any]) -> str | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    three, four = _binds(signature, 3), _binds(signature, 4)
    if three != four:
        return "sampler" if three else "step"
    if not three:
        return None
    positional = [param for param in signature.parameters.values()
                  if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)]
    names = {param.name for param in positional}
    if "prefix" in names:
        return "step"
    if names >= _SAMPLER_NAMES:
        return "sampler"
    required = [param for param in positional if param.default is param.empty]
    if len(required) == 3:  # (target, draft, rng, temperature=1.0) is a sampler
        return "sampler"
    if names & _STEP_NAMES:
        return "step"
    return None


def describe_callable(fn: Callable[..., Any]) -> str:
    """A short name for reports: ``chain``, or ``chain(gamma=2)`` for a partial."""
    if isinstance(fn, functools.partial):
        bound = [repr(a) for a in fn.args] + [f"{k}={v!r}" for k, v in fn.keywords.items()]
        return f"{describe_callable(fn.func)}({', '.join(bound)})"
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


def describe_arity_problem(fn: Callable[..., Any], kind: Kind) -> str | None:
    """A message when ``fn`` cannot be called with the kind's arguments (or is a generator
    or ``async`` function, which returns no token when called), else None."""
    plain = inspect.unwrap(fn.func if isinstance(fn, functools.partial) else fn)
    for test, what in ((inspect.isgeneratorfunction, "a generator function (it yields)"),
                       (inspect.isasyncgenfunction, "an async generator function"),
                       (inspect.iscoroutinefunction, "an async function (async def)")):
        if test(plain):
            return (f"a {kind.reported} is a plain function fn({', '.join(kind.arguments)}) "
                    f"that returns its result, but {describe_callable(fn)} is {what}; call "
                    "the generator or await the coroutine inside a plain function")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    args = kind.arguments
    extra = {"processors": None} if "processors" in kind.options \
        and "processors" in signature.parameters else {}
    try:
        signature.bind(*args, **extra)
    except TypeError as exc:
        return (f"a {kind.reported} is called as fn({', '.join(args)}), but this function's "
                f"signature is {signature}: {exc}")
    return None
