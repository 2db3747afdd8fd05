"""Exact mode for unmodified numpy code: ``fn(p, q, rng)`` with a ``numpy.random.Generator``.

The sampler receives p and q as numpy arrays of ``fmt`` (their real float
values; the target law is those values normalised) and, in place of the
Generator, :class:`ExactGenerator`, whose draws are the engine's lazy values:
``random``/``uniform`` are lazy uniforms on numpy's 53-bit grid (k / 2**53,
0 included; ``uniform="continuous"`` for the ideal uniform; ``uniform(low,
high)`` is the exact affine image, its float rounding is not modelled),
``integers`` and ``choice`` without ``p`` lazy uniform tokens, ``choice`` with
``p`` numpy's own inverse CDF (float64 cumsum, normalised, ``searchsorted``
right) on one uniform.  Float arithmetic of the code is numpy's own (each
float is then taken exactly).  Draws that are not a rational law
(``normal``, ``exponential``, ``gumbel``, ...) raise
:class:`~specexact.errors.UnsupportedOperation`.  Importing this module does
not import numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from specexact.distribution import Distribution
from specexact.errors import InvalidArgument, MissingDependency
from specexact.exact.engine import enumerate_law
from specexact.exact.random_source import ExactRandom
from specexact.exact.tree import Budget
from specexact.numbers import as_distribution, to_fraction

__all__ = ["ExactGenerator", "numpy_output_distribution", "numpy_rng_sampler"]

_BITS = 53  # numpy's Generator.random() in float64: k / 2**53


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise MissingDependency.of("numpy", "numpy exact mode") from None
    return numpy


def _count(size: Any) -> tuple[int, tuple[int, ...] | None]:
    if size is None:
        return 1, None
    shape = (size,) if isinstance(size, int) else tuple(size)
    n = 1
    for s in shape:
        n *= int(s)
    return n, shape


class ExactGenerator:
    """The ``numpy.random.Generator`` methods a sampler uses, drawing lazily from ``rng``."""

    def __init__(self, rng: ExactRandom) -> None:
        self._rng = rng
        self._np = _numpy()

    def _shape(self, values: list[Any], shape: tuple[int, ...] | None) -> Any:
        if shape is None:
            return values[0]
        arr = self._np.empty(len(values), dtype=object)
        arr[:] = values
        return arr.reshape(shape)

    def random(self, size: Any = None, dtype: Any = None, out: Any = None) -> Any:
        if dtype not in (None, "float64", self._np.float64) or out is not None:
            raise self._rng.unsupported(f"Generator.random(dtype={dtype!r}, out=...): only "
                                        "float64 draws are modelled")
        n, shape = _count(size)
        return self._shape([self._rng.random() for _ in range(n)], shape)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None) -> Any:
        lo = to_fraction(low, name="low")
        width = to_fraction(high, name="high") - lo
        n, shape = _count(size)
        return self._shape([self._rng.random() * width + lo for _ in range(n)], shape)

    def integers(self, low: Any, high: Any = None, size: Any = None, dtype: Any = None,
                 endpoint: bool = False) -> Any:
        lo, hi = (0, int(low)) if high is None else (int(low), int(high))
        if endpoint:
            hi += 1
        if hi <= lo:
            msg = f"integers: high={hi} must be greater than low={lo}"
            raise ValueError(msg)
        n, shape = _count(size)
        weights = [Fraction(1)] * (hi - lo)
        draws = [self._rng.categorical(weights) for _ in range(n)]
        return self._shape(draws if lo == 0 else [d.value() + lo for d in draws], shape)

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None,
               axis: int = 0, shuffle: bool = True) -> Any:
        """numpy's algorithm: with ``p``, ``cdf = cumsum(p) / cdf[-1]`` in float64 and
        ``searchsorted(cdf, random(), side="right")``; without, ``integers(0, n)``."""
        np = self._np
        scalar_a = isinstance(a, int) or (hasattr(a, "ndim") and a.ndim == 0)
        population = None if scalar_a else list(a)
        k = int(a) if scalar_a else len(population or [])
        n, shape = _count(size)
        if not replace and n > 1:
            raise self._rng.unsupported(
                "numpy exact mode cannot model Generator.choice(replace=False) of more "
                "than one item (numpy's rejection loop is not modelled)")
        if p is None:
            picks: list[Any] = [self._rng.categorical([Fraction(1)] * k) for _ in range(n)]
        else:
            weights = np.asarray(p)
            if weights.dtype == object:
                # Exact inputs (object arrays of Fractions): the exact cdf.
                exact = [to_fraction(w, name="p[i]") for w in weights]
                total = sum(exact, Fraction(0))
                acc, bounds = Fraction(0), []
                for w in exact:
                    acc += w
                    bounds.append(acc / total)
            else:
                cdf = np.cumsum(weights.astype(np.float64))
                cdf /= cdf[-1]
                bounds = [Fraction(float(c)) for c in cdf]
            picks = [self._searchsorted_right(bounds) for _ in range(n)]
        if population is not None:
            picks = [population[int(i)] for i in picks]
        return self._shape(picks, shape)

    def _searchsorted_right(self, bounds: list[Fraction]) -> int:
        u = self._rng.random()
        for i, c in enumerate(bounds):
            if u < c:
                return i
        return len(bounds)

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise self._rng.unsupported(
                f"numpy exact mode cannot model Generator.{name}: only random, uniform, "
                "integers and choice draws are enumerated exactly")

        return refuse


def numpy_output_distribution(fn: Callable[[Any, Any, Any], Any], p: Sequence[Any],
                              q: Sequence[Any], *, fmt: str = "float64",
                              uniform: str = "dtype",
                              budget: Budget | None = None) -> Distribution:
    """The exact law of ``fn(p, q, rng)`` for numpy code using a ``numpy.random.Generator``.

    ``p`` and ``q`` are handed over as numpy arrays of ``fmt`` (``"float64"``
    or ``"float32"``); see the module docstring for what is modelled.
    """
    np = _numpy()
    if fmt not in ("float64", "float32"):
        msg = f"fmt={fmt!r} must be 'float64' or 'float32'"
        raise InvalidArgument(msg)
    if uniform not in ("dtype", "continuous"):
        msg = f"uniform={uniform!r} must be 'dtype' (53-bit grid) or 'continuous'"
        raise InvalidArgument(msg)
    pa = np.array([float(x) for x in as_distribution(p, name="p")], dtype=fmt)
    qa = np.array([float(x) for x in as_distribution(q, name="q")], dtype=fmt)
    if pa.shape != qa.shape:
        msg = f"p and q must have the same length, got {len(pa)} and {len(qa)}"
        raise InvalidArgument(msg)

    def run(rng: ExactRandom) -> Any:
        return fn(pa.copy(), qa.copy(), ExactGenerator(rng))

    return enumerate_law(run, budget=budget,
                         uniform_bits=_BITS if uniform == "dtype" else None,
                         context={"p": tuple(Fraction(float(x)) for x in pa),
                                  "q": tuple(Fraction(float(x)) for x in qa)})


def numpy_rng_sampler(fn: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """numpy code ``fn(p, q, generator)`` as an engine sampler ``(p, q, rng) -> token``.

    For the existing audit and search: p and q arrive as exact Fractions and
    are handed over as numpy object arrays (exact values); the uniform is the
    engine's own (its ``uniform_bits`` grid, or continuous).
    """
    np = _numpy()

    def sampler(p: Any, q: Any, rng: ExactRandom) -> Any:
        pa = np.empty(len(p), dtype=object)
        pa[:] = list(p)
        qa = np.empty(len(q), dtype=object)
        qa[:] = list(q)
        return fn(pa, qa, ExactGenerator(rng))

    sampler.__name__ = getattr(fn, "__name__", "numpy_sampler")
    return sampler
