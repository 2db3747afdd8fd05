"""One exact execution of torch code: the random source and the generator streams.

Every draw from a ``torch.Generator`` (the global one included) is a slot of
that generator's stream for its current seed.  Re-seeding a generator to a
seed already used in this execution hands the same lazy draws out again, so
``manual_seed`` before every draw shows as the dependence it creates.  The
real generators are restored when the execution ends, so the engine sees no
use of torch's global random state.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any, Literal

import torch

from specexact.exact.random_source import ExactRandom
from specexact.torch.grid import GridDraw, Step
from specexact.torch.noise import NoiseRecord, Unif, UniformRecord
from specexact.torch.tensor import GRID_BITS
from specexact.torch.values import (
    FixedRandomness,
    Semantics,
    unsupported,
)

__all__ = ["IDEALISED_DRAWS", "Session", "UniformMode", "default_semantics"]

UniformMode = Literal["dtype", "continuous"]


#: Draws whose law dtype semantics takes from exact arithmetic, not from torch's kernel.
IDEALISED_DRAWS: dict[str, str] = {
    "multinomial": "torch.multinomial as the exact categorical law of its dtype weights "
                   "(torch's float normalisation and cumulative sum are not modelled)",
    "exponential": "exponential_ as ideal Exp(1) draws (its float grid is not modelled)",
}


def default_semantics(uniform: UniformMode) -> Semantics:
    """The semantics that goes with a uniform: the dtype's grid with the dtype's
    arithmetic, the continuous (ideal) uniform with exact rationals."""
    return "dtype" if uniform == "dtype" else "exact"


class _Stream:
    __slots__ = ("slots",)

    def __init__(self) -> None:
        self.slots: list[tuple[Hashable, Any]] = []


class Session:
    """The state of one execution: rng, uniform mode, generator streams."""

    def __init__(self, rng: ExactRandom, uniform: UniformMode,
                 provided: tuple[torch.Generator, ...] = (),
                 semantics: Semantics = "exact") -> None:
        self.rng = rng
        self.uniform = uniform
        self.semantics = semantics
        #: What this execution idealised, in words (see :mod:`.grid`): the verdict says it.
        self.idealised: set[str] = set()
        #: A certified bound on the TV between this execution's law in the dtype and the
        #: one computed with the idealisations (the sum over its races).
        self.mass_error = Fraction(0)
        self._grid_noise: dict[int, NoiseRecord] = {}
        self.uniforms = 0
        self.noises = 0
        self._saved: dict[int, tuple[torch.Generator, torch.Tensor]] = {}
        #: Each watched generator's state when the call starts (after ``watch``).
        self._start: dict[int, torch.Tensor] = {}
        self._marker: dict[int, torch.Tensor] = {}
        self._streams: dict[Hashable, _Stream] = {}
        self._current: dict[int, tuple[_Stream, list[int]]] = {}
        #: Generators handed to the code (their streams are the random ones).
        self._provided: set[int] = set()
        #: Why each stream is fixed (seeded by the code during the call), by stream.
        self._fixed: dict[int, str] = {}
        for gen in (torch.default_generator, *provided):
            self.watch(gen)

    def watch(self, gen: torch.Generator) -> None:
        """Remember a generator's state, to restore it when the execution ends.

        Call it before the exact mode is installed.  Generators watched are
        the ones the code is handed (and torch's global one): their streams
        are random.  A stream the code seeds itself during the call
        (``manual_seed`` of a fixed value, or a ``torch.Generator()`` it
        creates) is fixed: real torch would draw the same numbers on every
        call.  A generator that starts right after ``manual_seed(s)`` (a
        module that seeds at import, a fresh ``torch.Generator()``) is
        advanced one draw first, so that the code seeding it with the same
        ``s`` is a visible change of state.
        """
        gid = id(gen)
        self._provided.add(gid)
        if gid in self._saved:
            return
        state = gen.get_state()
        self._saved[gid] = (gen, state)
        if torch.equal(state, _fresh_state(gen.initial_seed())):
            torch.rand(1, generator=gen)
            state = gen.get_state()
        self._start[gid] = state

    # -- streams ------------------------------------------------------------

    def _stream(self, gen: torch.Generator) -> tuple[_Stream, list[int]]:
        gid = id(gen)
        state = gen.get_state()
        if gid not in self._saved:
            self._saved[gid] = (gen, state)
        marker = self._marker.get(gid)
        if marker is not None and torch.equal(state, marker):
            return self._current[gid]
        seed = gen.initial_seed()
        fixed = None
        if torch.equal(state, _fresh_state(seed)):
            key: Hashable = (gid, seed)  # just seeded (again): replay from slot 0
            start = self._start.get(gid, self._saved[gid][1])
            which = ("torch's global generator" if gen is torch.default_generator
                     else "a generator")
            if gid not in self._provided:
                fixed = (f"a torch.Generator the code created during the call (seed {seed})"
                         if gen is not torch.default_generator else
                         f"torch's global generator seeded with {seed}")
            elif key in self._streams or not torch.equal(start, state):
                fixed = f"{which} the code re-seeded with manual_seed({seed}) during the call"
        else:
            # A state we cannot place in any seed's stream (the process's own
            # generator at the start, or a set_state): its own stream.
            key = (gid, "state", bytes(state.numpy().tobytes()))
        stream = self._streams.setdefault(key, _Stream())
        if fixed is not None:
            self._fixed[id(stream)] = fixed
        current = (stream, [0])
        self._current[gid] = current
        return current

    def _mark(self, gen: torch.Generator) -> None:
        # Advance the real generator once so that a later re-seed is visible
        # as a state different from this marker.
        torch.rand(1, generator=gen)
        self._marker[id(gen)] = gen.get_state()

    def draw(self, generator: torch.Generator | None, kind: Hashable, count: int,
             make: Callable[[], Any]) -> list[Any]:
        """``count`` slots of ``kind`` from ``generator``'s stream (replayed after a re-seed)."""
        gen = torch.default_generator if generator is None else generator
        if not isinstance(gen, torch.Generator):
            raise unsupported(f"generator={gen!r} (not a torch.Generator)")
        name = kind[0] if isinstance(kind, tuple) else kind
        if self.semantics == "dtype" and name in IDEALISED_DRAWS:
            self.idealised.add(IDEALISED_DRAWS[name])
        stream, pos = self._stream(gen)
        fixed = self._fixed.get(id(stream))
        if fixed is not None:
            msg = (f"the code draws from {fixed}: real torch draws the same numbers on "
                   "every call from a seed set during the call, so the output is a fixed "
                   "function of the inputs, not a sample (hand the generator in, or seed it "
                   "once outside the sampler)")
            raise FixedRandomness(msg)
        out: list[Any] = []
        for _ in range(count):
            i = pos[0]
            if i < len(stream.slots):
                had, value = stream.slots[i]
                if had != kind:
                    raise unsupported(
                        f"a draw of {kind} replaying, after a re-seed, the generator "
                        f"position that a draw of {had} used (their dependence depends "
                        "on torch's internals)")
            else:
                value = make()
                stream.slots.append((kind, value))
            out.append(value)
            pos[0] = i + 1
        self._mark(gen)
        return out

    def position(self, gen: torch.Generator) -> int:
        """How many draws the code made from ``gen``'s stream since its state was last
        set (0 when it drew none)."""
        marker = self._marker.get(id(gen))
        with torch._C.DisableTorchFunction():
            if marker is None or not torch.equal(gen.get_state(), marker):
                return 0
        return self._current[id(gen)][1][0]

    # -- draws --------------------------------------------------------------

    def uniform_bits(self, dtype: torch.dtype) -> int | None:
        if self.uniform == "continuous":
            return None
        bits = GRID_BITS.get(dtype)
        if bits is None:
            raise unsupported(f"torch.rand with dtype {dtype}")
        return bits

    def new_uniform(self, bits: int | None) -> UniformRecord:
        self.uniforms += 1
        return UniformRecord(self.rng.random(), bits, self.uniforms)

    def uniform_value(self, rec: UniformRecord, dtype: torch.dtype, a: Any, b: Any) -> Any:
        """The element a draw of ``torch.rand`` (scaled to ``[b, a + b)``) puts in a tensor:
        in dtype semantics on a grid, the draw as the dtype computes with it."""
        if self.semantics == "dtype" and rec.bits is not None:
            draw = GridDraw(rec, dtype)
            if (a, b) == (1, 0):
                return draw
            if dtype not in (torch.float32, torch.float64):
                raise unsupported(f"uniform_(from, to) on {dtype} in dtype semantics")
            # torch's uniform_real: x * (to - from) + from in double, the span
            # computed in the dtype, then stored in the dtype.
            lo = float(b)
            span = torch.tensor(float(a + b), dtype=dtype) - torch.tensor(lo, dtype=dtype)
            wide = float(span.double())

            def scale(t: torch.Tensor) -> torch.Tensor:
                return (t.double() * wide + lo).to(dtype)

            return draw.then(Step("uniform_", scale, (None,), 0, (), dtype, 0), dtype)
        return Unif(rec, a, b)

    def new_noise(self, source: str) -> NoiseRecord:
        self.noises += 1
        return NoiseRecord(self.noises, source)

    def noise_for(self, rec: UniformRecord) -> NoiseRecord:
        """The noise record of a grid draw raced as an exponential (one per draw)."""
        noise = self._grid_noise.get(rec.index)
        if noise is None:
            noise = self._grid_noise[rec.index] = self.new_noise(f"u{rec.index}")
        return noise

    def restore(self) -> None:
        for gen, state in self._saved.values():
            gen.set_state(state)


_FRESH: dict[int, torch.Tensor] = {}


def _fresh_state(seed: int) -> torch.Tensor:
    """The state of a CPU generator right after ``manual_seed(seed)``."""
    state = _FRESH.get(seed)
    if state is None:
        gen = torch.Generator()
        gen.manual_seed(seed)
        state = _FRESH[seed] = gen.get_state()
    return state
