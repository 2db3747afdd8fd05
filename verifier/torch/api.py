"""Exact mode for unmodified torch code: the public entry points.

``fn`` runs under a torch function mode with exact tensors, re-executed once
per path of the engine's choice tree (:func:`specexact.exact.engine.enumerate_law`),
so its whole output law is exact.

Inputs: ``p`` and ``q`` are turned into real ``dtype`` tensors first, and the
sampler receives *the exact values of those tensors*; the target law is those
values normalised (for float32 that is p rounded to float32, renormalised).
Arithmetic is then exact rational: float rounding of the code's arithmetic is
not modelled, only the uniform's grid (``uniform="dtype"``: ``torch.rand`` in
float32 is k / 2**24 with 0 included; ``"continuous"`` is the ideal uniform).
Exponential and Gumbel noise are ideal continuous draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import torch

from specexact.distribution import Distribution, InvalidToken
from specexact.errors import InvalidArgument, SamplerFailure
from specexact.exact.engine import enumerate_law
from specexact.exact.random_source import ExactRandom, ForeignRandomAPI, LazyToken
from specexact.exact.tree import Budget
from specexact.exact.verdict import compare_laws
from specexact.floats.check import Finding, FloatVerdict, grid_tolerance, law_findings
from specexact.numbers import as_distribution
from specexact.torch.session import UniformMode, session
from specexact.torch.tensor import GRID_BITS, ExactTensor, as_exact, make, read_scalar
from specexact.torch.unwrap import positional_arity, unwrap

__all__ = [
    "as_rng_sampler",
    "check_torch_sampler",
    "exact_inputs",
    "torch_dtype",
    "torch_output_distribution",
]

_ZERO = Fraction(0)


def torch_dtype(dtype: Any) -> torch.dtype:
    """``"float32"`` (or a torch float dtype) as the torch dtype, validated."""
    tdtype = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
    if not isinstance(tdtype, torch.dtype) or tdtype not in GRID_BITS:
        msg = (f"dtype={dtype!r} is not a supported torch float dtype; valid: 'float32', "
               "'float64', 'float16', 'bfloat16'")
        raise InvalidArgument(msg)
    return tdtype


def check_uniform(uniform: Any) -> UniformMode:
    if uniform not in ("dtype", "continuous"):
        msg = (f"uniform={uniform!r} must be 'dtype' (torch.rand's grid k / 2**K, 0 "
               "included) or 'continuous' (the ideal uniform)")
        raise InvalidArgument(msg)
    return uniform  # type: ignore[no-any-return]


def exact_inputs(values: Sequence[Any], dtype: torch.dtype, name: str) -> tuple[Fraction, ...]:
    """The exact values of the ``dtype`` tensor built from the probabilities ``values``."""
    exact = as_distribution(values, name=name)
    real = torch.tensor([float(x) for x in exact], dtype=dtype)
    out = tuple(Fraction(v) for v in real.tolist())
    if not any(out):
        msg = f"{name} rounds to all zeros in {dtype}"
        raise InvalidArgument(msg)
    return out


def _normalised(values: Sequence[Fraction]) -> tuple[Fraction, ...]:
    total = sum(values, _ZERO)
    return tuple(v / total for v in values)


def emitted(value: Any, what: str = "the emitted token") -> Any:
    """A returned token as the engine wants it: an int or a lazy token."""
    if isinstance(value, torch.Tensor):
        t = as_exact(value)
        if t.arr.size != 1:
            return InvalidToken.described(f"a tensor of shape {tuple(t.arr.shape)}")
        if t.dtype.is_floating_point or t.dtype == torch.bool:
            return InvalidToken.described(f"a one-element {t.dtype} tensor")
        value = t.arr.reshape(-1)[0]
    value = read_scalar(value, what)
    if isinstance(value, (int, LazyToken)) and not isinstance(value, bool):
        return value
    return InvalidToken(value)


def single_run(fn: Callable[..., Any], p: Sequence[Fraction], q: Sequence[Fraction],
               dtype: torch.dtype, uniform: UniformMode) -> Callable[[ExactRandom], Any]:
    """``run(rng)`` for the engine: one exact execution of ``fn(p, q[, generator])``."""
    inner = unwrap(fn)
    takes_generator = positional_arity(inner) >= 3

    def run(rng: ExactRandom) -> Any:
        generators = (torch.Generator(),) if takes_generator else ()
        with session(rng, uniform, generators):
            args: list[Any] = [_vector(p, dtype), _vector(q, dtype), *generators]
            return emitted(_call(inner, args))

    return run


#: The rng protocol's methods: a torch.Generator lacking one was handed to rng code.
_RNG_METHODS = frozenset({"random", "categorical", "bernoulli"})


def _call(inner: Callable[..., Any], args: list[Any]) -> Any:
    """``inner(*args)``; rng-protocol code handed a torch.Generator is no verdict, not a crash."""
    try:
        return inner(*args)
    except AttributeError as error:
        if isinstance(getattr(error, "obj", None), torch.Generator) and \
                getattr(error, "name", None) in _RNG_METHODS:
            msg = (f"the code called generator.{error.name}(), which is specexact's rng "
                   "protocol (fn(p, q, rng)), on the torch.Generator torch mode hands it; "
                   "audit it without --torch")
            raise ForeignRandomAPI(msg) from error
        raise


def _vector(values: Sequence[Fraction], dtype: torch.dtype) -> ExactTensor:
    import numpy as np
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    return make(arr, dtype)


def _inputs(p: Sequence[Any], q: Sequence[Any], dtype: Any, uniform: Any, *,
            rounded: bool = True
            ) -> tuple[torch.dtype, UniformMode, tuple[Fraction, ...], tuple[Fraction, ...]]:
    """The validated options and p and q: as ``dtype`` tensors hold them (``rounded``),
    or exactly."""
    tdtype = torch_dtype(dtype)
    mode = check_uniform(uniform)
    if rounded:
        pv = exact_inputs(p, tdtype, "p")
        qv = exact_inputs(q, tdtype, "q")
    else:
        pv, qv = as_distribution(p, name="p"), as_distribution(q, name="q")
    if len(pv) != len(qv):
        msg = f"p and q must have the same length, got {len(pv)} and {len(qv)}"
        raise InvalidArgument(msg)
    return tdtype, mode, pv, qv


def torch_output_distribution(fn: Callable[..., Any], p: Sequence[Any], q: Sequence[Any], *,
                              dtype: Any = "float32", uniform: Any = "dtype",
                              budget: Budget | None = None) -> Distribution:
    """The exact law of the token ``fn(p, q)`` (or ``fn(p, q, generator)``) returns.

    ``fn`` is unmodified torch code taking two 1-D float tensors (and
    optionally a ``torch.Generator``) and returning a token (int or
    one-element integer tensor).  It receives the exact values of ``p`` and
    ``q`` as ``dtype`` tensors (see the module docstring).  Raises
    :class:`~specexact.errors.UnsupportedOperation` when an op cannot be
    modelled exactly, and :class:`~specexact.errors.SamplerRaised` when the
    code crashes, reads uninitialised memory or lets a NaN/inf reach a token,
    weight or branch.
    """
    tdtype, mode, pv, qv = _inputs(p, q, dtype, uniform)
    return enumerate_law(single_run(fn, pv, qv, tdtype, mode), budget=budget,
                         context={"p": pv, "q": qv})


def _tokens(law: Distribution) -> Distribution:
    if not any(isinstance(o, tuple) for o in law):
        return law
    return Distribution([(InvalidToken(o) if isinstance(o, tuple) else o, w)
                         for o, w in law.items()])


def _run(fn: Callable[..., Any], pv: tuple[Fraction, ...], qv: tuple[Fraction, ...],
         tdtype: torch.dtype, mode: UniformMode, budget: Budget | None, name: str
         ) -> tuple[Distribution | None, SamplerFailure | None]:
    try:
        law = enumerate_law(single_run(fn, pv, qv, tdtype, mode), budget=budget,
                            context={"p": pv, "q": qv, "run": name})
    except SamplerFailure as failure:
        return None, failure
    return _tokens(law), None


def _findings(law: Distribution | None, crash: SamplerFailure | None, run: Any,
              target: tuple[Fraction, ...]) -> list[Finding]:
    if crash is not None:
        first = str(crash).splitlines()[0]
        return [Finding("crash", run, _ZERO, f"the sampler raised on valid input: {first}",
                        crash)]
    return law_findings(law, run, target)


_ORDER = ("crash", "invalid", "support", "structural", "rounding-excess")


def check_torch_sampler(fn: Callable[..., Any], p: Sequence[Any], q: Sequence[Any], *,
                        dtype: Any = "float32", uniform: Any = "dtype",
                        budget: Budget | None = None,
                        tolerance: Fraction | None = None) -> FloatVerdict:
    """Judge unmodified torch code exactly; grid rounding of ``torch.rand`` is not structure.

    Runs ``fn`` twice (once with ``uniform="continuous"``): any deviation of
    that run from the target is structural and fails; the dtype-grid run
    fails on mass where p = 0 (a support violation, whatever its size), on
    invalid tokens, and when its distance to the target exceeds the grid
    tolerance ``(V + 1) 2**-K`` of :func:`specexact.floats.check.grid_tolerance`
    (or ``tolerance``).  The result is the project's
    :class:`~specexact.floats.check.FloatVerdict`: ``passed``, ``severity``,
    ``findings``, ``format()``.

    The code receives the exact values of ``p`` and ``q`` in ``dtype``
    tensors, as the audit hands them over: rounding them first would leave
    rows that no longer sum to 1 (1/3 in float32), and every rule, the
    textbook one included, would then look biased by the rounding of its
    inputs.  ``p`` in the verdict is the target.
    """
    tdtype, mode, pv, qv = _inputs(p, q, dtype, uniform, rounded=False)
    target = _normalised(pv)
    exact_law, exact_crash = _run(fn, pv, qv, tdtype, "continuous", budget, "exact")
    findings = _findings(exact_law, exact_crash, "exact", target)
    grid_law = None
    bits = GRID_BITS[tdtype] if mode == "dtype" else None
    g_tol = _ZERO
    if bits is not None:
        g_tol = grid_tolerance(len(pv), bits) if tolerance is None else Fraction(tolerance)
        grid_law, grid_crash = _run(fn, pv, qv, tdtype, "dtype", budget, "grid")
        findings += _findings(grid_law, grid_crash, "grid", target)
    expected = Distribution.from_probabilities(target)
    if exact_law is not None and exact_law != expected:
        tv = compare_laws(expected, exact_law, len(target)).tv
        findings.append(Finding("structural", "exact", tv,
                                f"biased with exact inputs: TV(exact run, p) = {tv} "
                                f"~ {float(tv):.3g}"))
    if grid_law is not None and exact_law == expected:
        tv = compare_laws(expected, grid_law, len(target)).tv
        if tv > g_tol:
            findings.append(Finding("rounding-excess", "grid", tv,
                                    f"grid rounding TV {float(tv):.3g} exceeds the stated "
                                    f"tolerance {float(g_tol):.3g}"))
    findings.sort(key=lambda f: _ORDER.index(f.kind))
    return FloatVerdict(target, _normalised(qv), None, False, bits, None, None, exact_law,
                        grid_law, None, g_tol, _ZERO, tuple(findings))




def as_rng_sampler(fn: Callable[..., Any], *, dtype: Any = "float32",
                   uniform: Any = "continuous") -> Callable[[Any, Any, ExactRandom], Any]:
    """``fn(p, q[, generator])`` in torch as a sampler ``(p, q, rng) -> token`` of the engine.

    For the existing searches and audits (``specexact.assert_preserves_target``,
    the CLI): ``p`` and ``q`` arrive as exact Fractions and are handed over
    unrounded as ``dtype`` tensors.  ``uniform="continuous"`` (the default
    here) makes ``torch.rand`` the ideal uniform, so the exact comparison sees
    structure only; ``uniform="dtype"`` draws it from its dtype's grid (float32:
    k / 2**24, 0 included), the faithful variant the audit judges for support
    violations and crashes.
    """
    inner = unwrap(fn)
    takes_generator = positional_arity(inner) >= 3
    tdtype = torch_dtype(dtype)
    mode = check_uniform(uniform)

    def sampler(p: Any, q: Any, rng: ExactRandom) -> Any:
        generators = (torch.Generator(),) if takes_generator else ()
        with session(rng, mode, generators):
            args: list[Any] = [_vector(list(p), tdtype), _vector(list(q), tdtype),
                               *generators]
            return emitted(_call(inner, args))

    sampler.__name__ = getattr(inner, "__name__", "torch_sampler")
    return sampler
