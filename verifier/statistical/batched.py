"""Batched black-box audits: one call of the code under test draws a whole batch.

Real kernels take batches, so the statistical audit calls them that way:

* a **sampler** is ``fn(P, Q, generator) -> tokens``, with ``P`` and ``Q`` of
  shape ``[N, V]`` (numpy float64 arrays, or torch tensors of ``dtype`` on
  ``device``) and ``tokens`` of shape ``[N]`` (or ``[N, 1]``);
* a **chain step** (see :mod:`specexact.statistical.batched_chain`) is
  ``fn(draft_token_ids [N, k], draft_probs [N, k, V], target_probs
  [N, k + 1, V], generator) -> [N, k + 1]`` padded with -1.

Every batch mixes the cases of the panel (row ``i`` belongs to case ``i %
m``; smaller vocabularies are padded with zero-probability tokens), so a bug
that shows only when rows differ inside one batch is exercised.  With
``generators="per-row"`` the generator argument is a list of one entry per
row, a ``torch.Generator`` (numpy: ``numpy.random.Generator``) or ``None``
for rows that must draw from the global generator; ``"seeded-dict"`` passes
``{row: generator}`` for the seeded rows only (vLLM's ``generators``).  Seeded
and unseeded rows of a case are then judged as two cases.  ``"shared"`` (the
default) passes one generator for the whole batch.

Code that ignores the generator and draws from the global one is supported:
the audit seeds numpy's and torch's global generators from ``seed`` (and
sets torch to one thread) for the run, and restores them afterwards.

The decision is the one of :mod:`specexact.statistical.audit`: certain
failures (a draw where p = 0, an id outside the case's vocabulary, a
non-integer result, an exception) fail outright; otherwise a G-test per case
and Holm over the panel.  A pass says only that no bias of the stated size
was detected.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from specexact.errors import InvalidArgument, Undecided
from specexact.statistical.audit import (
    DEFAULT_ALPHA,
    Case,
    Draws,
    StatisticalReport,
    default_panel,
    judge_counts,
    require_module,
    scipy_stats,
)
from specexact.validation import check_choice, check_integer

__all__ = [
    "ARRAY_KINDS",
    "DEFAULT_BATCHED_SAMPLES",
    "DEFAULT_BATCH_ROWS",
    "GENERATOR_LAYOUTS",
    "Backend",
    "Batch",
    "ProgressCallback",
    "batched_statistical_audit",
    "check_panel",
    "detect_array_kind",
    "run_batches",
    "seeded_global_generators",
    "takes_generator",
]

#: Draws per case in batched mode: with them the default panel detects a TV of
#: 0.005 with 99% power on every case (``benchmarks/bench_statistical.py`` prints
#: the figure and the time).
DEFAULT_BATCHED_SAMPLES = 550_000
#: Rows handed to one call, at most.
DEFAULT_BATCH_ROWS = 1 << 16
ARRAY_KINDS = ("auto", "numpy", "torch")
GENERATOR_LAYOUTS = ("shared", "per-row", "seeded-dict")

#: ``progress(done, total, detail)``: draws done so far, draws planned, a status text.
ProgressCallback = Callable[[int, int, str], None]


def _require_numpy() -> Any:
    return require_module("numpy")


def _code_names(code: Any) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names


def detect_array_kind(fn: Callable[..., Any]) -> str:
    """``"torch"`` or ``"numpy"``: what ``fn`` expects P and Q to be.

    Read from the modules the function's own code names (``torch.…`` or
    ``np.…``, torch winning when it names both); when it names neither, torch
    if its module imported torch, else numpy.  Pass ``array=`` to decide.
    """
    inner = fn
    for _ in range(10):  # functools.wraps chains, partials
        nxt = getattr(inner, "__wrapped__", None) or getattr(inner, "func", None)
        if nxt is None or nxt is inner:
            break
        inner = nxt
    code = getattr(inner, "__code__", None)
    scope = getattr(inner, "__globals__", None) or {}
    if code is not None:
        used = {getattr(scope.get(name), "__name__", "") for name in _code_names(code)}
        roots = {name.partition(".")[0] for name in used if isinstance(name, str)}
        if "torch" in roots:
            return "torch"
        if "numpy" in roots:
            return "numpy"
    module = sys.modules.get(getattr(inner, "__module__", "") or "")
    if module is not None and "torch" in vars(module):
        return "torch"
    return "numpy"


def takes_generator(fn: Callable[..., Any], arity: int) -> bool:
    """False when ``fn`` accepts only ``arity - 1`` positional arguments: code written
    for the global generator, called without one."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= arity


@contextmanager
def seeded_global_generators(seed: int, device: str = "cpu") -> Iterator[None]:
    """numpy's and torch's global generators seeded from ``seed`` (torch on one thread)
    for the duration; their states restored afterwards."""
    np = _require_numpy()
    torch = sys.modules.get("torch")
    backend = Backend(kind="torch" if torch is not None else "numpy", device=device,
                      dtype="float32", seed=seed, layout="shared", np=np, torch=torch)
    with backend.global_generators():
        yield


@dataclass
class Backend:
    """Arrays, generators and global seeding for one array library on one device."""

    kind: str
    device: str
    dtype: str
    seed: int
    layout: str
    np: Any = field(repr=False)
    torch: Any = field(default=None, repr=False)
    _pool: list[Any] = field(default_factory=list, repr=False)
    _shared: Any = field(default=None, repr=False)

    @classmethod
    def make(cls, kind: str, *, device: str, dtype: str, seed: int, layout: str) -> Backend:
        check_choice(kind, "array", ("numpy", "torch"))
        check_choice(layout, "generators", GENERATOR_LAYOUTS)
        check_choice(device, "device", ("cpu", "cuda"))
        np = _require_numpy()
        if kind == "numpy":
            if device != "cpu":
                msg = (f"device={device!r} needs torch tensors; numpy code runs on the CPU "
                       "(use array='torch' / --torch)")
                raise InvalidArgument(msg)
            if dtype not in ("float64", "float32"):
                msg = f"dtype={dtype!r} for numpy arrays must be 'float64' or 'float32'"
                raise InvalidArgument(msg)
            return cls(kind, device, dtype, seed, layout, np)
        from specexact.floats.scalars import torch_module

        torch = torch_module("the batched torch audit")
        if device == "cuda" and not torch.cuda.is_available():
            msg = "device='cuda' but torch reports no CUDA device; use device='cpu'"
            raise InvalidArgument(msg)
        tdtype = getattr(torch, dtype, None) if isinstance(dtype, str) else None
        if not isinstance(tdtype, torch.dtype) or not tdtype.is_floating_point:
            msg = (f"dtype={dtype!r} is not a torch floating dtype; valid: 'float32', "
                   "'float64', 'float16', 'bfloat16'")
            raise InvalidArgument(msg)
        return cls(kind, device, dtype, seed, layout, np, torch)

    def describe(self) -> str:
        what = "numpy arrays" if self.kind == "numpy" else \
            f"torch {self.dtype} tensors on {self.device}"
        return f"batched, {what}, {self.layout} generator"

    # -- arrays ---------------------------------------------------------------------

    def probs(self, arr: Any) -> Any:
        """float64 numpy -> the array handed to the code."""
        if self.kind == "numpy":
            return arr.astype(self.dtype, copy=True)
        return self.torch.tensor(arr, dtype=getattr(self.torch, self.dtype),
                                 device=self.device)

    def ids(self, arr: Any) -> Any:
        if self.kind == "numpy":
            return arr.astype(self.np.int64, copy=True)
        return self.torch.tensor(arr, dtype=self.torch.int64, device=self.device)

    def to_numpy(self, out: Any) -> Any:
        """The code's result as a numpy array (its dtype kept), or raise TypeError."""
        np = self.np
        torch = self.torch
        if torch is not None and isinstance(out, torch.Tensor):
            t = out.detach()
            if t.dtype == torch.bool:
                return t.cpu().numpy()
            if t.is_floating_point():
                return t.to(torch.float64).cpu().numpy()
            return t.to(torch.int64).cpu().numpy()
        if isinstance(out, np.ndarray):
            return out
        if isinstance(out, (list, tuple)):
            return np.asarray(out)
        msg = f"returned {type(out).__name__}, not an array of token ids"
        raise TypeError(msg)

    # -- generators -----------------------------------------------------------------

    def _new_generator(self, entropy: Sequence[int]) -> Any:
        np = self.np
        if self.kind == "numpy":
            return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(entropy))))
        gen = self.torch.Generator(device=self.device)
        gen.manual_seed(int(np.random.SeedSequence(list(entropy)).generate_state(
            1, np.uint64)[0]) & ((1 << 63) - 1))
        return gen

    def generator(self, seeded_rows: Sequence[int] | None, rows: int) -> Any:
        """The generator argument for a batch of ``rows`` rows.

        Row positions keep their generator from call to call (as a request keeps
        its generator from step to step), so the pool grows to the largest batch.
        """
        if self.layout == "shared":
            if self._shared is None:
                self._shared = self._new_generator((self.seed, 0))
            return self._shared
        assert seeded_rows is not None
        while len(self._pool) < rows:
            self._pool.append(self._new_generator((self.seed, 1, len(self._pool))))
        if self.layout == "per-row":
            out: list[Any] = [None] * rows
            for i in seeded_rows:
                out[i] = self._pool[i]
            return out
        return {int(i): self._pool[i] for i in seeded_rows}

    @contextmanager
    def global_generators(self) -> Iterator[None]:
        """numpy's and torch's global generators seeded from ``seed``, torch on one
        thread; all restored afterwards."""
        np = self.np
        np_state = np.random.get_state()
        np.random.seed(int(np.random.SeedSequence((self.seed, 2)).generate_state(1)[0]))
        torch = self.torch if self.torch is not None else sys.modules.get("torch")
        saved: tuple[Any, ...] | None = None
        if torch is not None:
            cuda = self.device == "cuda"
            saved = (torch.random.get_rng_state(), torch.get_num_threads(),
                     torch.cuda.get_rng_state_all() if cuda else None)
            torch.manual_seed(int(np.random.SeedSequence((self.seed, 3)).generate_state(
                1, np.uint64)[0]) & ((1 << 63) - 1))
            torch.set_num_threads(1)
        try:
            yield
        finally:
            np.random.set_state(np_state)
            if torch is not None and saved is not None:
                torch.random.set_rng_state(saved[0])
                torch.set_num_threads(saved[1])
                if saved[2] is not None:
                    torch.cuda.set_rng_state_all(saved[2])


# --------------------------------------------------------------------------
# The panel as units: a case, and which rows of it get a seeded generator
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One judged group of rows: a case, and whether its rows are seeded (None: shared)."""

    case: Case
    seeded: bool | None

    @property
    def judged(self) -> Case:
        if self.seeded is None:
            return self.case
        kind = "seeded rows" if self.seeded else "global-generator rows"
        return Case(f"{self.case.name} [{kind}]", self.case.p, self.case.q, self.case.labels)


def units_of(cases: Sequence[Case], layout: str) -> tuple[Unit, ...]:
    if layout == "shared":
        return tuple(Unit(c, None) for c in cases)
    return tuple(Unit(c, s) for c in cases for s in (True, False))


class Budget:
    """The wall-clock limit of a run and its progress line."""

    def __init__(self, max_seconds: float | None, total: int,
                 progress: ProgressCallback | None, units: int) -> None:
        if max_seconds is not None and not (isinstance(max_seconds, (int, float))
                                            and not isinstance(max_seconds, bool)
                                            and max_seconds > 0 and math.isfinite(max_seconds)):
            msg = f"max_seconds={max_seconds!r} must be a positive number of seconds or None"
            raise InvalidArgument(msg)
        self.start = time.monotonic()
        self.deadline = None if max_seconds is None else self.start + max_seconds
        self.total = total
        self.progress = progress
        self.units = units

    def check(self, done: int) -> None:
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline:
            msg = (f"the statistical audit ran out of time (max_seconds) after {done} of "
                   f"{self.total} draws; lower --samples or raise --max-seconds -- no verdict")
            raise Undecided(msg)
        if self.progress is not None:
            elapsed = now - self.start
            rate = done / elapsed if elapsed > 0 else 0.0
            left = (self.total - done) / rate if rate > 0 else float("nan")
            cases_done = self.units if done >= self.total else 0
            detail = (f"{cases_done}/{self.units} cases, {rate:,.0f} draws/s"
                      + (f", ~{left:.0f} s left" if math.isfinite(left) else ""))
            self.progress(done, self.total, detail)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start


def check_common(samples: int, seed: int, alpha: Fraction | float,
                 batch_rows: int) -> Fraction:
    check_integer(samples, "samples", min_value=1)
    check_integer(seed, "seed", min_value=0)
    check_integer(batch_rows, "batch_rows", min_value=1)
    try:
        alpha_f = Fraction(alpha)
    except (TypeError, ValueError):
        alpha_f = Fraction(-1)
    if not 0 < alpha_f < 1:
        msg = f"alpha={alpha!r} must lie strictly between 0 and 1"
        raise InvalidArgument(msg)
    return alpha_f


def audit_backend(fn: Any, *, array: str, device: str, dtype: str | None, seed: int,
                  generators: str) -> Backend:
    """Check that ``fn`` is callable and build the backend an audit calls it with
    (``array="auto"`` resolved from ``fn``'s module; float64 numpy, float32 torch
    unless ``dtype`` says otherwise)."""
    if not callable(fn):
        msg = f"fn={fn!r} is not callable"
        raise InvalidArgument(msg)
    check_choice(array, "array", ARRAY_KINDS)
    kind = detect_array_kind(fn) if array == "auto" else array
    return Backend.make(kind, device=device, dtype=dtype or (
        "float64" if kind == "numpy" else "float32"), seed=seed, layout=generators)


def check_panel(cases: Sequence[Any] | None, default: Callable[[], Sequence[Any]],
                kind: type, what: str) -> tuple[Any, ...]:
    """The panel audited: ``cases`` (default ``default()``), each a ``kind``, or
    InvalidArgument naming ``what`` they must be; MissingDependency before any work
    when scipy, which judges the counts, is missing."""
    panel = tuple(default() if cases is None else cases)
    if not panel or not all(isinstance(c, kind) for c in panel):
        msg = f"cases must be a non-empty sequence of {what}"
        raise InvalidArgument(msg)
    scipy_stats()  # fail before any draw if scipy is missing
    return panel


def crash_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else f"{type(exc).__name__} (no message)"


class Tally:
    """Counts per unit, the invalid draws and a few of them, and a crash."""

    def __init__(self, units: Sequence[Unit]) -> None:
        self.units = units
        self.vocab = [len(u.case.p) for u in units]
        self.counts = [[0] * v for v in self.vocab]
        self.invalid = [0] * len(units)
        self.examples: list[list[str]] = [[] for _ in units]
        self.crash: str | None = None
        #: Per unit, what its invalid draws did (None: not tokens of the vocabulary).
        self.invalid_what: list[str | None] = [None] * len(units)

    def add_counts(self, unit: int, counts: Sequence[int]) -> None:
        row = self.counts[unit]
        for i, c in enumerate(counts):
            row[i] += int(c)

    def add_invalid(self, unit: int, how_many: int, examples: Sequence[str]) -> None:
        self.invalid[unit] += how_many
        for text in examples:
            if len(self.examples[unit]) < 3 and text not in self.examples[unit]:
                self.examples[unit].append(text)

    def draws(self) -> list[Draws]:
        return [Draws(tuple(c), inv, tuple(ex), self.crash) if what is None
                else Draws(tuple(c), inv, tuple(ex), self.crash, what)
                for c, inv, ex, what in zip(self.counts, self.invalid, self.examples,
                                            self.invalid_what, strict=True)]


def count_tokens(tally: Tally, tokens: Any, unit_of_row: Any, np: Any) -> None:
    """Add one batch's tokens (an int64 numpy array) to ``tally``."""
    vocab = np.asarray(tally.vocab, dtype=np.int64)
    limit = vocab[unit_of_row]
    valid = (tokens >= 0) & (tokens < limit)
    width = int(vocab.max())
    flat = np.bincount(unit_of_row[valid] * width + tokens[valid],
                       minlength=len(tally.units) * width)
    for u, v in enumerate(tally.vocab):
        tally.add_counts(u, flat[u * width:u * width + v].tolist())
    if not valid.all():
        bad_rows = np.nonzero(~valid)[0]
        per_unit = np.bincount(unit_of_row[bad_rows], minlength=len(tally.units))
        for u in np.nonzero(per_unit)[0].tolist():
            rows = bad_rows[unit_of_row[bad_rows] == u][:3]
            tally.add_invalid(u, int(per_unit[u]),
                              [f"id {int(tokens[r])} (vocabulary {tally.vocab[u]})"
                               for r in rows])


def as_token_array(out: Any, rows: int, backend: Backend) -> tuple[Any, str | None]:
    """The batch's tokens as int64 [rows], or (None, why the result is not tokens)."""
    np = backend.np
    try:
        arr = backend.to_numpy(out)
    except TypeError as exc:
        return None, str(exc)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.shape != (rows,):
        return None, f"returned shape {list(arr.shape)} for a batch of {rows} rows; " \
                     f"expected [{rows}]"
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        return None, f"returned {arr.dtype} values, not integer token ids"
    return arr.astype(np.int64), None


# --------------------------------------------------------------------------
# The sampler audit
# --------------------------------------------------------------------------


def batched_statistical_audit(fn: Callable[..., Any], *, samples: int | None = None,
                              seed: int = 0, alpha: Fraction | float = DEFAULT_ALPHA,
                              cases: Sequence[Case] | None = None,
                              max_seconds: float | None = None, array: str = "auto",
                              device: str = "cpu", dtype: str | None = None,
                              generators: str = "shared",
                              batch_rows: int = DEFAULT_BATCH_ROWS,
                              progress: ProgressCallback | None = None) -> StatisticalReport:
    """Audit the batched sampler ``fn(P, Q, generator) -> tokens`` on a panel.

    A function of two parameters, ``fn(P, Q)``, is called without the
    generator (code that draws from the global generator, seeded here).

    Each case gets ``samples`` draws (default :data:`DEFAULT_BATCHED_SAMPLES`),
    in calls of at most ``batch_rows`` rows mixing every case.  ``array`` is
    ``"numpy"`` (float64 arrays, a ``numpy.random.Generator``), ``"torch"``
    (``dtype`` tensors on ``device``, a ``torch.Generator``) or ``"auto"``
    (torch when ``fn``'s module imports torch).  ``generators`` is the layout
    of the generator argument (see the module doc).  ``seed`` fixes every
    draw; ``max_seconds`` bounds the run (:class:`~specexact.errors.Undecided`
    when it runs out); ``progress(done, total, detail)`` is called after each batch.

    >>> import numpy as np
    >>> def plain(P, Q, rng):     # ignores the draft: draws from P itself
    ...     u = rng.random((len(P), 1))
    ...     return (P.cumsum(axis=1) <= u).sum(axis=1).clip(max=P.shape[1] - 1)
    >>> batched_statistical_audit(plain, samples=2000).passed
    True
    """
    samples = DEFAULT_BATCHED_SAMPLES if samples is None else samples
    alpha_f = check_common(samples, seed, alpha, batch_rows)
    backend = audit_backend(fn, array=array, device=device, dtype=dtype, seed=seed,
                            generators=generators)
    panel = check_panel(cases, default_panel, Case, "Case (see Case.of)")
    units = units_of(panel, generators)
    return run_batches(units, _sampler_batch(fn, units, backend), samples=samples, seed=seed,
                       alpha=alpha_f, batch_rows=batch_rows, backend=backend,
                       max_seconds=max_seconds, progress=progress, mode=backend.describe())


#: ``batch(unit_of_row, r, tally)`` runs one call of ``r`` rows per unit (row ``i`` belongs
#: to unit ``unit_of_row[i]``) and counts its draws in ``tally``; False stops the run (a
#: crash, or output that is not tokens, recorded in ``tally``: certain for every unit).
Batch = Callable[[Any, int, Tally], bool]


def run_batches(units: Sequence[Unit], batch: Batch, *, samples: int, seed: int,
                alpha: Fraction, batch_rows: int, backend: Backend, max_seconds: float | None,
                progress: ProgressCallback | None, mode: str) -> StatisticalReport:
    """The one batched audit runner: ``samples`` draws per unit, in calls of at most
    ``batch_rows`` rows mixing every unit, under the backend's seeded global generators
    and the time budget; then every unit judged (see :func:`judge_counts`)."""
    np = backend.np
    m = len(units)
    tally = Tally(units)
    budget = Budget(max_seconds, samples * m, progress, m)
    per_call = max(1, batch_rows // m)
    with backend.global_generators():
        done = 0
        while done < samples:
            budget.check(done * m)
            r = min(per_call, samples - done)
            if not batch(np.tile(np.arange(m, dtype=np.int64), r), r, tally):
                break
            done += r
        else:
            budget.check(done * m)
    results = judge_counts([u.judged for u in units], tally.draws(), samples=samples,
                           alpha=alpha)
    return StatisticalReport(results, alpha, samples, seed, budget.elapsed, mode=mode)


def _sampler_batch(fn: Callable[..., Any], units: Sequence[Unit], backend: Backend) -> Batch:
    """One call of the batched sampler ``fn`` on the rows of every unit."""
    np = backend.np
    m = len(units)
    width = max(len(u.case.p) for u in units)
    p_rows = np.zeros((m, width))
    q_rows = np.zeros((m, width))
    for i, unit in enumerate(units):
        p_rows[i, :len(unit.case.p)] = [float(x) for x in unit.case.p]
        q_rows[i, :len(unit.case.q)] = [float(x) for x in unit.case.q]
    seeded_unit = np.array([bool(u.seeded) for u in units])
    with_generator = takes_generator(fn, 3)

    def batch(unit_of_row: Any, r: int, tally: Tally) -> bool:
        rows = len(unit_of_row)
        seeded_rows = np.nonzero(seeded_unit[unit_of_row])[0].tolist() \
            if backend.layout != "shared" else None
        generator = backend.generator(seeded_rows, rows)
        args = (backend.probs(p_rows[unit_of_row]), backend.probs(q_rows[unit_of_row]))
        try:
            out = fn(*args, generator) if with_generator else fn(*args)
        except Exception as exc:
            tally.crash = crash_text(exc)
            return False
        tokens, why = as_token_array(out, rows, backend)
        if tokens is None:
            # Not tokens at all: certain for every case, no need to draw more.
            for u in range(m):
                tally.add_invalid(u, r, [why or "not tokens"])
            return False
        count_tokens(tally, tokens, unit_of_row, np)
        return True

    return batch
