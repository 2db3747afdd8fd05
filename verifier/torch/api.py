"""Exact mode for unmodified torch code: the public entry points.

``fn`` runs under a torch function mode with exact tensors, re-executed once
per path of the engine's choice tree (:func:`specexact.exact.engine.enumerate_law`),
so its whole output law is exact.

Inputs: ``p`` and ``q`` are turned into real ``dtype`` tensors first, and the
sampler receives *the exact values of those tensors*; the target law is those
values normalised (for float32 that is p rounded to float32, renormalised).
``p`` and ``q`` may also be real torch tensors, rows as engines have them (a
float32 softmax, not summing to exactly 1): they are taken as they are.

Semantics (``semantics=``, see :mod:`.realops` and :mod:`.grid`):

* ``"dtype"`` (the default with ``uniform="dtype"``): every value is the number
  the code computes in its dtype, as torch's CPU kernels of this machine round
  it; ``torch.rand`` is its dtype's grid (float32: k / 2**24, 0 included) and
  what the code computes from a draw is evaluated as torch evaluates it.
  Exponential noise from ``exponential_`` and the masses a noise race gives its
  drawn entries are the ideal continuous ones; the race's support is exact.
* ``"exact"`` (the default with ``uniform="continuous"``): exact rationals; float
  rounding of the code's arithmetic is not modelled, only the uniform's grid.
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
from specexact.numbers import ZERO, as_distribution
from specexact.torch.mode import session
from specexact.torch.realops import from_real
from specexact.torch.rows import dtype_rows, stored_value, torch_dtype
from specexact.torch.session import UniformMode, default_semantics
from specexact.torch.tensor import (
    FLOAT_FORMATS,
    GRID_BITS,
    ExactTensor,
    as_exact,
    make,
    read_scalar,
)
from specexact.torch.unwrap import positional_arity, unwrap
from specexact.torch.values import Semantics
from specexact.torch.verdict import TorchVerdict, classify

__all__ = [
    "as_rng_sampler",
    "check_semantics",
    "check_torch_sampler",
    "dtype_rows",
    "exact_inputs",
    "log_rows",
    "softmax_rows",
    "torch_dtype",
    "torch_output_distribution",
]


def check_uniform(uniform: Any) -> UniformMode:
    if uniform not in ("dtype", "continuous"):
        msg = (f"uniform={uniform!r} must be 'dtype' (torch.rand's grid k / 2**K, 0 "
               "included) or 'continuous' (the ideal uniform)")
        raise InvalidArgument(msg)
    return uniform  # type: ignore[no-any-return]


def check_semantics(semantics: Any, uniform: UniformMode) -> Semantics:
    """``semantics`` validated; None is the one that goes with ``uniform``."""
    if semantics is None:
        return default_semantics(uniform)
    if semantics not in ("dtype", "exact"):
        msg = (f"semantics={semantics!r} must be 'dtype' (values as the dtype computes "
               "them, torch's CPU kernels) or 'exact' (exact rationals)")
        raise InvalidArgument(msg)
    return semantics  # type: ignore[no-any-return]


def _row(values: Any, name: str) -> tuple[Fraction, ...]:
    """A row's exact values: a real tensor (an engine's row) as it is, else validated
    probabilities."""
    if isinstance(values, torch.Tensor):
        row = tuple(Fraction(v) for v in values.detach().reshape(-1).double().tolist())
        if any(v < 0 for v in row) or not any(row):
            msg = f"{name}={values!r} must be non-negative with a positive sum"
            raise InvalidArgument(msg)
        return row
    return as_distribution(values, name=name)


def exact_inputs(values: Sequence[Any], dtype: torch.dtype, name: str) -> tuple[Fraction, ...]:
    """The exact values of the ``dtype`` tensor built from the probabilities ``values``."""
    if isinstance(values, torch.Tensor):
        return dtype_rows(_row(values.to(dtype), name), dtype, name)
    return dtype_rows(_row(values, name), dtype, name)


def log_rows(rows: Sequence[Sequence[Any]], dtype: torch.dtype) -> ExactTensor:
    """Logits ``[1, L, V]`` as a ``dtype`` model computes them: torch's log of each
    probability row as ``dtype`` stores it (dtype semantics)."""
    stored_rows = [dtype_rows([Fraction(x) for x in row], dtype, "a probability row")
                   for row in rows]
    with torch._C.DisableTorchFunction():
        real = torch.tensor([[float(x) for x in row] for row in stored_rows],
                            dtype=torch.float64).to(dtype).log().unsqueeze(0)
    return from_real(real, "log of a row")


def softmax_rows(values: Sequence[Any], dtype: Any = "float32",
                 temperature: float = 1.0) -> torch.Tensor:
    """A row as an engine hands it over: ``softmax(log(p) / temperature)`` computed
    in ``dtype`` by torch.  It need not sum to exactly 1; the law it stands for is
    its own normalisation (``p`` itself at temperature 1, up to rounding)."""
    tdtype = torch_dtype(dtype)
    exact = as_distribution(values, name="values")
    with torch._C.DisableTorchFunction():
        logits = torch.tensor([float(x) for x in exact], dtype=torch.float64).log()
        return torch.softmax((logits / temperature).to(tdtype), dim=-1)


def _normalised(values: Sequence[Fraction]) -> tuple[Fraction, ...]:
    total = sum(values, ZERO)
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
               dtype: torch.dtype, uniform: UniformMode, semantics: Semantics = "exact",
               idealised: Idealised | None = None) -> Callable[[ExactRandom], Any]:
    """``run(rng)`` for the engine: one exact execution of ``fn(p, q[, generator])``.

    ``idealised``, when given, collects what the executions idealised."""
    inner = unwrap(fn)
    takes_generator = positional_arity(inner) >= 3
    rows = (_elements(p), _elements(q))

    def run(rng: ExactRandom) -> Any:
        generators = (torch.Generator(),) if takes_generator else ()
        with session(rng, uniform, generators, semantics) as s:
            try:
                # A fresh tensor each execution (the code may write into its inputs).
                args: list[Any] = [make(rows[0].copy(), dtype), make(rows[1].copy(), dtype),
                                   *generators]
                return emitted(_call(inner, args))
            finally:
                if idealised is not None:
                    idealised.add(s.idealised, s.mass_error)

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


def _elements(values: Sequence[Fraction]) -> Any:
    """``values`` as a 1-D object array (copied for each execution's tensor)."""
    import numpy as np
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    return arr


def _vector(values: Sequence[Fraction], dtype: torch.dtype) -> ExactTensor:
    return make(_elements(values), dtype)


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
        pv, qv = _row(p, "p"), _row(q, "q")
    if len(pv) != len(qv):
        msg = f"p and q must have the same length, got {len(pv)} and {len(qv)}"
        raise InvalidArgument(msg)
    return tdtype, mode, pv, qv


def torch_output_distribution(fn: Callable[..., Any], p: Sequence[Any], q: Sequence[Any], *,
                              dtype: Any = "float32", uniform: Any = "dtype",
                              semantics: Any = None,
                              budget: Budget | None = None) -> Distribution:
    """The exact law of the token ``fn(p, q)`` (or ``fn(p, q, generator)``) returns.

    ``fn`` is unmodified torch code taking two 1-D float tensors (and
    optionally a ``torch.Generator``) and returning a token (int or
    one-element integer tensor).  It receives the exact values of ``p`` and
    ``q`` as ``dtype`` tensors, and computes in ``semantics`` (see the module
    docstring).  Raises
    :class:`~specexact.errors.UnsupportedOperation` when an op cannot be
    modelled exactly, and :class:`~specexact.errors.SamplerRaised` when the
    code crashes, reads uninitialised memory or lets a NaN/inf reach a token,
    weight or branch.
    """
    tdtype, mode, pv, qv = _inputs(p, q, dtype, uniform)
    sem = check_semantics(semantics, mode)
    return enumerate_law(single_run(fn, pv, qv, tdtype, mode, sem), budget=budget,
                         context={"p": pv, "q": qv})


class Idealised:
    """What the executions of one run idealised, and the certified bound on the TV
    between its law in the dtype and the law computed (the worst execution's)."""

    def __init__(self) -> None:
        self.what: set[str] = set()
        self.mass_error = ZERO

    def add(self, what: set[str], mass_error: Fraction) -> None:
        self.what |= what
        self.mass_error = max(self.mass_error, mass_error)


def _tokens(law: Distribution) -> Distribution:
    if not any(isinstance(o, tuple) for o in law):
        return law
    return Distribution([(InvalidToken(o) if isinstance(o, tuple) else o, w)
                         for o, w in law.items()])


def _run(fn: Callable[..., Any], pv: tuple[Fraction, ...], qv: tuple[Fraction, ...],
         tdtype: torch.dtype, mode: UniformMode, semantics: Semantics,
         budget: Budget | None, name: str, idealised: Idealised | None = None
         ) -> tuple[Distribution | None, SamplerFailure | None]:
    try:
        law = enumerate_law(single_run(fn, pv, qv, tdtype, mode, semantics, idealised),
                            budget=budget, context={"p": pv, "q": qv, "run": name})
    except SamplerFailure as failure:
        return None, failure
    return _tokens(law), None


def _findings(law: Distribution | None, crash: SamplerFailure | None, run: Any,
              target: tuple[Fraction, ...]) -> list[Finding]:
    if crash is not None:
        first = str(crash).splitlines()[0]
        return [Finding("crash", run, ZERO, f"the sampler raised on valid input: {first}",
                        crash)]
    return law_findings(law, run, target)


_ORDER = ("crash", "invalid", "support", "structural", "rounding-excess")


def _tolerance(v: int, dtype: torch.dtype, semantics: Semantics) -> Fraction:
    """The stated bound on rounding: the grid's, plus in dtype semantics the
    arithmetic's ``4 (V + 2) u`` (``u`` the dtype's unit roundoff)."""
    tol = grid_tolerance(v, GRID_BITS[dtype])
    if semantics == "dtype":
        tol += Fraction(4 * (v + 2), 2 ** FLOAT_FORMATS[dtype][0])
    return tol


def check_torch_sampler(fn: Callable[..., Any], p: Sequence[Any], q: Sequence[Any], *,
                        dtype: Any = "float32", uniform: Any = "dtype",
                        semantics: Any = None, budget: Budget | None = None,
                        tolerance: Fraction | None = None) -> TorchVerdict:
    """Judge unmodified torch code exactly; rounding is not structure.

    Runs ``fn`` twice.  The exact run (exact inputs, exact rationals,
    continuous uniform): any deviation from the target is structural.  The
    dtype run (``uniform="dtype"``; ``semantics``, by default ``"dtype"``): the
    code gets ``p`` and ``q`` as ``dtype`` values (the rows as given when they are
    real tensors) and computes as the dtype does; it fails on mass where p = 0
    (whatever its size), on invalid tokens and crashes, and when its distance to
    its target (its ``p`` row normalised) exceeds the stated tolerance
    (:func:`_tolerance`, or ``tolerance``).  With ``semantics="dtype"`` each
    finding is classified by what the two runs show (see
    :func:`specexact.torch.verdict.classify`): an exact-only deviation is a note.

    The result, a :class:`~specexact.torch.verdict.TorchVerdict`, reads as the
    project's :class:`~specexact.floats.check.FloatVerdict` (``passed``,
    ``severity``, ``findings``, ``format()``) and says which semantics it used.
    """
    tdtype, mode, pv, qv = _inputs(p, q, dtype, uniform, rounded=False)
    sem = check_semantics(semantics, mode)
    target = _normalised(pv)
    # The exact run is the ideal program on the laws the rows stand for: engine rows
    # (not summing to 1) are normalised there, and handed to the dtype run as given.
    idealised = Idealised()
    exact_law, exact_crash = _run(fn, target, _normalised(qv), tdtype, "continuous", "exact",
                                  budget, "exact", idealised)
    exact_findings = _findings(exact_law, exact_crash, "exact", target)
    expected = Distribution.from_probabilities(target)
    if exact_law is not None and exact_law != expected:
        tv = compare_laws(expected, exact_law, len(target)).tv
        exact_findings.append(Finding("structural", "exact", tv,
                                      f"biased with exact inputs: TV(exact run, p) = {tv} "
                                      f"~ {float(tv):.3g}"))
    grid_law = None
    grid_findings: list[Finding] = []
    bits = GRID_BITS[tdtype] if mode == "dtype" else None
    g_tol = ZERO
    rows = (target, _normalised(qv))
    if bits is not None:
        g_tol = _tolerance(len(pv), tdtype, sem) if tolerance is None else Fraction(tolerance)
        if sem == "dtype":
            rows = (dtype_rows(pv, tdtype, "p"), dtype_rows(qv, tdtype, "q"))
        grid_target = _normalised(rows[0])
        grid_law, grid_crash = _run(fn, rows[0], rows[1], tdtype, "dtype", sem, budget,
                                    "grid", idealised)
        grid_findings = _findings(grid_law, grid_crash, "grid", grid_target)
        if grid_law is not None and (exact_law == expected or sem == "dtype"):
            tv = compare_laws(Distribution.from_probabilities(grid_target), grid_law,
                              len(target)).tv
            # A race's split is idealised within a certified TV bound: the excess fails
            # only when certain; otherwise the verdict states the bound (masses line).
            slack = idealised.mass_error
            if tv > g_tol + slack:
                grid_findings.append(Finding(
                    "rounding-excess", "grid", tv,
                    f"{sem}-semantics rounding TV {float(tv):.3g} exceeds the stated "
                    f"tolerance {float(g_tol):.3g}"
                    + (f" by more than the race bound {float(slack):.3g}" if slack else "")))
    kind, kept, notes = classify(exact_findings, grid_findings, grid_law, target,
                                 sem if bits is not None else None)
    kept.sort(key=lambda f: _ORDER.index(f.kind))
    verdict = FloatVerdict(target, _normalised(qv), None, False, bits, None, None, exact_law,
                           grid_law, None, g_tol, ZERO, tuple(kept))
    return TorchVerdict(verdict, sem if bits is not None else "exact", kind, tuple(notes),
                        rows, tdtype, tuple(sorted(idealised.what)), idealised.mass_error)


def as_rng_sampler(fn: Callable[..., Any], *, dtype: Any = "float32",
                   uniform: Any = "continuous", semantics: Any = None
                   ) -> Callable[[Any, Any, ExactRandom], Any]:
    """``fn(p, q[, generator])`` in torch as a sampler ``(p, q, rng) -> token`` of the engine.

    For the existing searches and audits (``specexact.assert_preserves_target``,
    the CLI): ``p`` and ``q`` arrive as exact Fractions.  ``uniform="continuous"``
    (the default here) makes ``torch.rand`` the ideal uniform and computes with
    exact rationals on the rows unrounded, so the exact comparison sees
    structure only; ``uniform="dtype"`` draws it from its dtype's grid (float32:
    k / 2**24, 0 included) and, in ``semantics="dtype"`` (its default), hands
    the rows over rounded to ``dtype`` and computes as the dtype does: the
    faithful variant the audit judges for support violations and crashes.
    """
    inner = unwrap(fn)
    takes_generator = positional_arity(inner) >= 3
    tdtype = torch_dtype(dtype)
    mode = check_uniform(uniform)
    sem = check_semantics(semantics, mode)

    def sampler(p: Any, q: Any, rng: ExactRandom) -> Any:
        generators = (torch.Generator(),) if takes_generator else ()
        prow, qrow = list(p), list(q)
        if sem == "dtype":
            prow = [stored_value(Fraction(x), tdtype) for x in prow]
            qrow = [stored_value(Fraction(x), tdtype) for x in qrow]
        with session(rng, mode, generators, sem):
            args: list[Any] = [_vector(prow, tdtype), _vector(qrow, tdtype), *generators]
            return emitted(_call(inner, args))

    sampler.__name__ = getattr(inner, "__name__", "torch_sampler")
    return sampler
