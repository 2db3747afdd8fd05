"""Python's ``random`` and ``numpy.random`` module-level draws, as lazy sources.

Engine code sometimes draws from the interpreter's generators rather than
torch's: ``random.random() < ratio``, ``np.random.choice(V, p=probs)``.
While exact mode is on, the module-level functions below are replaced by
lazy draws of the same law, so such code gets an exact verdict:

* ``random.random()``, ``np.random.rand``/``random``/``random_sample``: a
  uniform on the real grid k / 2**53 (0 included; the ideal uniform in the
  continuous run), handed back as a float64 tensor of one draw (0-d, or the
  requested shape), so comparisons and affine arithmetic branch exactly;
* ``random.uniform``/``np.random.uniform``: the affine image ``a + (b - a) u``;
* ``random.choices`` and ``np.random.choice(..., p=...)``: the index whose
  cumulative-weight bound first exceeds ``u`` (Python's ``bisect``, numpy's
  ``searchsorted(side="right")``) on one grid uniform per pick; numpy's float64
  ``cumsum`` of a float array and its check that p sums to 1 are numpy's own;
* ``random.choice``/``randint``/``randrange``, ``np.random.randint`` and
  ``np.random.choice`` without ``p``: exactly uniform integers (both libraries
  draw them by rejection).

A ``seed(s)`` during the call makes every later draw of that module a fixed
function of the inputs, reported as :class:`~specexact.torch.values.FixedRandomness`
as for torch's generators.  Functions not listed still use the real generator;
the engine's watch on the global generators reports such a draw as hidden
randomness (no verdict), as before.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specexact.numbers import ONE
from specexact.torch.grid import GridDraw, Step
from specexact.torch.noise import Unif
from specexact.torch.tensor import ExactTensor, as_exact, make, read_scalar
from specexact.torch.values import FixedRandomness, current_session, unsupported

__all__ = ["module_draws"]

_BITS = 53  # random.random() and numpy's float64 draws: k / 2**53


class _Draws:
    """The lazy draws of one exact execution, and which modules the code seeded."""

    def __init__(self) -> None:
        self.seeded: dict[str, str] = {}

    def _check(self, module: str) -> None:
        seed = self.seeded.get(module)
        if seed is not None:
            msg = (f"the code draws from {module}'s global generator after seeding it with "
                   f"{seed} during the call: every call draws the same numbers, so the "
                   "output is a fixed function of the inputs, not a sample")
            raise FixedRandomness(msg)

    def uniform(self, module: str) -> Unif:
        self._check(module)
        s = current_session()
        return Unif(s.new_uniform(_BITS if s.uniform == "dtype" else None))

    def grid_uniform(self, module: str, lo: Fraction, hi: Fraction) -> GridDraw:
        """A float64 draw as the dtype run computes with it: ``k / 2**53`` on its grid,
        and ``a + (b - a) * u`` in double as Python and numpy compute ``uniform(a, b)``,
        so a later cast to float32 (a Python float meeting a float32 tensor) rounds it
        as torch does."""
        self._check(module)
        draw = GridDraw(current_session().new_uniform(_BITS), torch.float64)
        if lo == 0 and hi == 1:
            return draw
        start, width = float(lo), float(hi) - float(lo)

        def scale(t: torch.Tensor) -> torch.Tensor:
            return start + width * t

        return draw.then(Step("uniform", scale, (None,), 0, (), torch.float64, 0),
                         torch.float64)

    def uniforms(self, module: str, shape: tuple[int, ...], low: Any = 0, high: Any = 1
                 ) -> ExactTensor:
        lo, hi = _exact(low, "low"), _exact(high, "high")
        n = math.prod(shape)
        s = current_session()
        values: list[Any]
        if s.semantics == "dtype" and s.uniform == "dtype":
            values = [self.grid_uniform(module, lo, hi) for _ in range(n)]
        else:
            values = [self.uniform(module) * (hi - lo) + lo for _ in range(n)]
        arr = np.empty(shape, dtype=object)
        if shape:
            arr.reshape(-1)[:] = values
        else:
            arr[()] = values[0]
        return make(arr, torch.float64)

    def below(self, module: str, n: int) -> int:
        """An exactly uniform index in ``range(n)``."""
        self._check(module)
        if n <= 0:
            msg = f"an empty range (size {n}) to draw from"
            raise ValueError(msg)
        return int(current_session().rng.categorical([ONE] * n).value())

    def pick(self, module: str, bounds: Sequence[Fraction]) -> int:
        """The first index whose bound exceeds a fresh uniform (the last when none does)."""
        u = self.uniform(module)
        for i, c in enumerate(bounds[:-1]):
            if bool(u < c):
                return i
        return len(bounds) - 1


def _exact(x: Any, what: str) -> Fraction:
    """A weight or bound the code passed (number or one-element tensor), exactly."""
    if isinstance(x, torch.Tensor):
        t = as_exact(x)
        if t.arr.size != 1:
            raise unsupported(f"a {t.arr.size}-element tensor as {what}")
        x = read_scalar(t.arr.reshape(-1)[0], what)
    if isinstance(x, (bool, np.bool_)):
        return Fraction(int(x))
    if isinstance(x, (int, Fraction, np.integer)):
        return Fraction(int(x)) if isinstance(x, np.integer) else Fraction(x)
    if isinstance(x, (float, np.floating)) and math.isfinite(float(x)):
        return Fraction(float(x))
    raise unsupported(f"{x!r} as {what} of a random draw")


def _values(weights: Any, what: str) -> list[Fraction]:
    if isinstance(weights, torch.Tensor):
        return [_exact(w, what) for w in as_exact(weights).arr.reshape(-1)]
    if isinstance(weights, np.ndarray):
        return [_exact(w, what) for w in weights.reshape(-1)]
    return [_exact(w, what) for w in weights]


def _shape(size: Any) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


def _scalar(t: ExactTensor, size: Any) -> Any:
    return t if size is not None else t.reshape(())


# -- Python's random ----------------------------------------------------------------


def _python(draws: _Draws) -> dict[str, Callable[..., Any]]:
    def random_() -> Any:
        return draws.uniforms("random", ())

    def uniform(a: Any, b: Any) -> Any:
        return draws.uniforms("random", (), a, b)

    def choices(population: Sequence[Any], weights: Any = None, *, cum_weights: Any = None,
                k: int = 1) -> list[Any]:
        n = len(population)
        if cum_weights is None:
            if weights is None:
                return [population[draws.below("random", n)] for _ in range(k)]
            cum = list(itertools.accumulate(_values(weights, "a weight")))
        elif weights is not None:
            msg = "Cannot specify both weights and cumulative weights"
            raise TypeError(msg)
        else:
            cum = _values(cum_weights, "a cumulative weight")
        if len(cum) != n:
            msg = "The number of weights does not match the population"
            raise ValueError(msg)
        total = cum[-1] if cum else Fraction(0)
        if total <= 0:
            msg = "Total of weights must be greater than zero"
            raise ValueError(msg)
        bounds = [c / total for c in cum]
        return [population[draws.pick("random", bounds)] for _ in range(k)]

    def choice(seq: Sequence[Any]) -> Any:
        if not len(seq):
            msg = "Cannot choose from an empty sequence"
            raise IndexError(msg)
        return seq[draws.below("random", len(seq))]

    def randrange(start: int, stop: int | None = None, step: int = 1) -> int:
        lo, hi = (0, start) if stop is None else (start, stop)
        count = len(range(lo, hi, step))
        return lo + step * draws.below("random", count)

    def randint(a: int, b: int) -> int:
        return randrange(a, b + 1)

    def seed(a: Any = None, version: int = 2) -> None:
        if a is not None:
            draws.seeded["random"] = repr(a)

    return {"random": random_, "uniform": uniform, "choices": choices, "choice": choice,
            "randrange": randrange, "randint": randint, "seed": seed}


# -- numpy.random -------------------------------------------------------------------


def _numpy(draws: _Draws) -> dict[str, Callable[..., Any]]:
    def rand(*shape: int) -> Any:
        return draws.uniforms("numpy.random", tuple(int(s) for s in shape))

    def random_sample(size: Any = None) -> Any:
        return draws.uniforms("numpy.random", _shape(size))

    def uniform(low: Any = 0.0, high: Any = 1.0, size: Any = None) -> Any:
        return draws.uniforms("numpy.random", _shape(size), low, high)

    def randint(low: int, high: int | None = None, size: Any = None, dtype: Any = int) -> Any:
        lo, hi = (0, int(low)) if high is None else (int(low), int(high))
        shape = _shape(size)
        picks = [lo + draws.below("numpy.random", hi - lo) for _ in range(math.prod(shape))]
        return picks[0] if size is None else np.array(picks, dtype=np.int64).reshape(shape)

    def choice(a: Any, size: Any = None, replace: bool = True, p: Any = None) -> Any:
        population = None if isinstance(a, (int, np.integer)) else list(a)
        n = int(a) if population is None else len(population)
        shape = _shape(size)
        count = math.prod(shape)
        if not replace and count > 1:
            raise unsupported("numpy.random.choice(replace=False) of more than one item "
                              "(numpy's permutation-based draw is not modelled)")
        if p is None:
            picks = [draws.below("numpy.random", n) for _ in range(count)]
        else:
            bounds = _numpy_cdf(p, n)
            picks = [draws.pick("numpy.random", bounds) for _ in range(count)]
        out = picks if population is None else [population[i] for i in picks]
        return out[0] if size is None else np.array(out).reshape(shape)

    def seed(seed: Any = None) -> None:
        if seed is not None:
            draws.seeded["numpy.random"] = repr(seed)

    return {"rand": rand, "random": random_sample, "random_sample": random_sample,
            "sample": random_sample, "ranf": random_sample, "uniform": uniform,
            "randint": randint, "choice": choice, "seed": seed}


def _numpy_cdf(p: Any, n: int) -> list[Fraction]:
    """numpy's ``cdf = cumsum(p); cdf /= cdf[-1]`` bounds, after its own checks on ``p``."""
    if isinstance(p, np.ndarray) and p.dtype != object:
        weights = p.astype(np.float64).reshape(-1)
        if len(weights) != n:
            msg = "'a' and 'p' must have same size"
            raise ValueError(msg)
        if (weights < 0).any():
            msg = "probabilities are not non-negative"
            raise ValueError(msg)
        if abs(float(weights.sum()) - 1.0) > math.sqrt(np.finfo(np.float64).eps):
            msg = "probabilities do not sum to 1"
            raise ValueError(msg)
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        return [Fraction(float(c)) for c in cdf]
    exact = _values(p, "a probability")
    if len(exact) != n:
        msg = "'a' and 'p' must have same size"
        raise ValueError(msg)
    if any(w < 0 for w in exact):
        msg = "probabilities are not non-negative"
        raise ValueError(msg)
    total = sum(exact, Fraction(0))
    if abs(total - 1) > math.sqrt(np.finfo(np.float64).eps):
        msg = "probabilities do not sum to 1"
        raise ValueError(msg)
    return [c / total for c in itertools.accumulate(exact)]


@contextmanager
def _patched(module: Any, replacements: dict[str, Callable[..., Any]]) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in replacements}
    for name, fn in replacements.items():
        setattr(module, name, fn)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(module, name, fn)


@contextmanager
def module_draws() -> Iterator[None]:
    """While active, the module-level draws above are lazy draws of one execution."""
    draws = _Draws()
    with ExitStack() as stack:
        stack.enter_context(_patched(random, _python(draws)))
        numpy_random = getattr(sys.modules.get("numpy"), "random", None)
        if numpy_random is not None:
            stack.enter_context(_patched(numpy_random, _numpy(draws)))
        yield
