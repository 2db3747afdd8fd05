"""``assert_torch_preserves_target``: a panel of exact audits of torch code for pytest.

Single-position code is checked with :func:`~specexact.torch.api.check_torch_sampler`
on hand-picked pairs for each vocabulary size (p = q, zeros in q, disjoint
supports, one-hot p and q, a skewed pair) plus seeded random dyadic pairs
(exact in every float dtype, some with zeros).  Step code (``chain``, ``hf``)
is checked with :func:`specexact.steps.verdict.check_step` on the model kinds
of :func:`specexact.steps.models.random_model_pair`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from specexact.errors import InvalidArgument
from specexact.exact.tree import Budget
from specexact.exact.verdict import support_finding
from specexact.steps.models import random_model_pair
from specexact.steps.verdict import check_step

__all__ = ["assert_torch_preserves_target", "panel"]

_F = Fraction
_KINDS = ("random", "zeros", "disjoint", "equal", "one-hot", "context-free")


def _dyadic(r: random.Random, v: int, zeros: bool) -> tuple[Fraction, ...]:
    weights = [0 if zeros and r.random() < 0.3 else r.randint(1, 16) for _ in range(v)]
    if not any(weights):
        weights[r.randrange(v)] = 1
    total = sum(weights)
    # Round to a power-of-two denominator so the values are exact in bfloat16 too.
    scale = 256
    cells = [w * scale // total for w in weights]
    cells[max(range(v), key=lambda i: weights[i])] += scale - sum(cells)
    return tuple(_F(c, scale) for c in cells)


def panel(vocab_size: int, examples: int, seed: int
          ) -> Iterator[tuple[str, tuple[Fraction, ...], tuple[Fraction, ...]]]:
    """Hand-picked and random (name, p, q) pairs over ``vocab_size`` tokens."""
    v = vocab_size
    uniform = tuple(_F(1, v) for _ in range(v))
    first = tuple(_F(int(i == 0)) for i in range(v))
    last = tuple(_F(int(i == v - 1)) for i in range(v))
    skew = tuple(_F(1, 2 ** (i + 1)) if i < v - 1 else _F(1, 2 ** (v - 1)) for i in range(v))
    yield "p = q (uniform)", uniform, uniform
    yield "p = q (skewed)", skew, skew
    yield "skewed p, reversed q", skew, skew[::-1]
    yield "one-hot p and q, different", first, last
    yield "one-hot p, uniform q", first, uniform
    even = tuple(_F(2, v) if i % 2 == 0 else _F(0) for i in range(v))
    odd = tuple(_F(0) if i % 2 == 0 else _F(1) for i in range(v))
    if sum(even) == 1 and sum(odd) == 1 and v >= 2:
        yield "disjoint supports", even, tuple(x / sum(odd) for x in odd)
    zq = tuple(_F(0) if i == 0 else _F(1, v - 1) for i in range(v))
    yield "zero in q where p > 0", skew, zq
    yield "zero in p where q > 0", zq, skew
    r = random.Random(seed * 1009 + v)
    for k in range(examples):
        yield (f"random #{k}", _dyadic(r, v, zeros=k % 2 == 1),
               _dyadic(r, v, zeros=k % 3 == 2))


def _vocab_range(vocab_sizes: Any) -> range:
    if isinstance(vocab_sizes, range):
        return vocab_sizes
    if isinstance(vocab_sizes, tuple) and len(vocab_sizes) == 2 \
            and all(isinstance(x, int) and not isinstance(x, bool) for x in vocab_sizes) \
            and 1 <= vocab_sizes[0] <= vocab_sizes[1]:
        return range(vocab_sizes[0], vocab_sizes[1] + 1)
    msg = f"vocab_sizes={vocab_sizes!r} must be a pair (low, high) with 1 <= low <= high"
    raise InvalidArgument(msg)


def assert_torch_preserves_target(fn: Callable[..., Any], *, signature: str = "single",
                                  vocab_sizes: Any = (2, 5), examples: int = 4,
                                  seed: int = 0, dtype: Any = "float32",
                                  uniform: Any = None, gamma: int = 2, horizon: int = 3,
                                  budget: Budget | None = None,
                                  semantics: Any = None) -> int:
    """Raise ``AssertionError`` with the exact witness unless ``fn`` preserves the target.

    ``signature="single"``: ``fn(p, q[, generator])`` (``uniform`` defaults to
    ``"dtype"``: grid rounding passes, support violations fail; in dtype
    semantics, the default there, each random pair is also judged as rows an
    engine hands over: the float ``softmax`` of its logits at temperature 0.7).
    ``"chain"``/``"hf"``: torch verifiers as steps (see ``torch_step``); the
    step audit is exact, so each case is judged with ``uniform="continuous"``
    and, unless ``uniform`` is given, again with ``torch.rand`` on its dtype
    grid for support violations and crashes only.
    Returns the number of audits run.  Undecidable audits raise
    :class:`~specexact.errors.Undecided` (the test errors, never passes).
    """
    sizes = _vocab_range(vocab_sizes)
    if signature == "single":
        from specexact.torch.api import (
            check_semantics,
            check_torch_sampler,
            check_uniform,
            softmax_rows,
        )
        mode = check_uniform(uniform or "dtype")
        engine_rows = check_semantics(semantics, mode) == "dtype"
        count = 0
        for v in sizes:
            for name, p, q in panel(v, examples, seed):
                cases: list[tuple[str, Any, Any]] = [(name, p, q)]
                if engine_rows and name.startswith("random"):
                    cases.append((f"{name} as {dtype} softmax rows (temperature 0.7)",
                                  softmax_rows(p, dtype, 0.7), softmax_rows(q, dtype, 0.7)))
                for case, pc, qc in cases:
                    verdict = check_torch_sampler(fn, pc, qc, dtype=dtype, uniform=mode,
                                                  semantics=semantics, budget=budget)
                    count += 1
                    if not verdict.passed:
                        msg = (f"{getattr(fn, '__name__', fn)} does not preserve the target "
                               f"on {case} (V = {v}):\n{verdict.format()}")
                        raise AssertionError(msg)
        return count
    from specexact.torch.steps import torch_step
    step = torch_step(fn, signature=signature, gamma=gamma, dtype=dtype,
                      uniform=uniform or "continuous")
    # By default also torch.rand on its dtype grid, judged for what no rounding
    # explains (mass where the target has none, crashes), as the CLI audit does.
    grid = torch_step(fn, signature=signature, gamma=gamma, dtype=dtype,
                      uniform="dtype") if uniform is None else None
    count = 0
    for v in sizes:
        for kind in _KINDS:
            if kind == "disjoint" and v < 2:
                continue
            for s in range(seed, seed + max(1, examples // 2)):
                target, draft = random_model_pair(v, s, kind=kind)
                step_verdict = check_step(step, target, draft, horizon, budget=budget)
                if step_verdict.passed and grid is not None:
                    on_grid = check_step(grid, target, draft, horizon, budget=budget)
                    if support_finding(on_grid):
                        step_verdict = on_grid
                count += 1
                if not step_verdict.passed:
                    msg = (f"{getattr(fn, '__name__', fn)} ({signature}, gamma={gamma}) "
                           f"does not preserve the target on {kind} models, V = {v}, "
                           f"seed {s}:\n{step_verdict}")
                    raise AssertionError(msg)
    return count
