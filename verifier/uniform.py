"""What ``rng.random()`` returns in an audit: one value that travels through every layer.

A :class:`Uniform` says which law the exact enumeration gives ``rng.random()``
and on which further grids each case that passes is run again:

>>> CONTINUOUS
Uniform.continuous()
>>> FLOAT32.describe()
'float32 uniforms (rng.random() on k/2^24, as torch.rand draws it)'
>>> DEFAULT.rechecks
(24, 53)

* :data:`CONTINUOUS`: the ideal uniform on [0, 1), nothing else;
* ``Uniform.grid(K)``: the grid k / 2**K (k = 0 .. 2**K - 1, 0 included, each
  with probability 2**-K), the law itself computed on it;
* :data:`DEFAULT`: the ideal uniform, and every case passing exactly run
  again on the float32 grid (k / 2**24, as ``torch.rand`` draws it) and the
  float64 grid (k / 2**53, as numpy's ``random()`` draws it), judged there for
  crashes and mass where the target has none (a grid moves acceptance
  probabilities by rounding: that alone is not a finding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

from specexact.validation import check_integer, check_optional_integer, fail

__all__ = ["CONTINUOUS", "DEFAULT", "FLOAT32", "FLOAT64", "Uniform", "grid_name"]

#: Grids with a name people know: torch.rand in float32, numpy / torch in float64.
_KNOWN = {24: ("float32", "torch.rand"), 53: ("float64", "numpy's random()")}


def grid_name(bits: int) -> str:
    """``'float32 uniforms (rng.random() on k/2^24, as torch.rand draws it)'`` for 24."""
    known = _KNOWN.get(bits)
    if known is None:
        return f"{bits}-bit uniforms (rng.random() on k/2^{bits})"
    return f"{known[0]} uniforms (rng.random() on k/2^{bits}, as {known[1]} draws it)"


@final
@dataclass(frozen=True)
class Uniform:
    """The law of ``rng.random()`` in an exact run, and the grids each passing case is
    run again on.

    ``bits`` is None for the ideal continuous uniform, or K for the grid
    k / 2**K (0 included).  ``rechecks`` are grids (bits) on which a case that
    passes is run again and judged for crashes and support violations only.
    """

    bits: int | None = None
    rechecks: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        check_optional_integer(self.bits, "bits", min_value=1)
        if not isinstance(self.rechecks, tuple):
            fail("rechecks", self.rechecks, "a tuple of grid sizes in bits")
        for bits in self.rechecks:
            check_integer(bits, "rechecks", min_value=1)

    @classmethod
    def continuous(cls) -> Uniform:
        """The ideal uniform on [0, 1)."""
        return cls()

    @classmethod
    def grid(cls, bits: int) -> Uniform:
        """``rng.random()`` on the grid k / 2**bits, 0 included."""
        return cls(bits)

    @classmethod
    def rechecked_on(cls, grids: Sequence[int]) -> Uniform:
        """The ideal uniform, each passing case run again on ``grids``."""
        return cls(None, tuple(grids))

    def without_rechecks(self) -> Uniform:
        return Uniform(self.bits)

    def describe(self) -> str:
        """The law of one draw, in words."""
        if self.bits is None:
            return "an ideal uniform"
        return grid_name(self.bits)

    def recheck_note(self) -> str:
        """The coverage sentence for the rechecks ('' without any)."""
        if not self.rechecks:
            return ""
        if self.rechecks == (24, 53):
            grids = ("the float32 grid k/2^24 and on the float64 grid k/2^53 (0 included, "
                     "as torch.rand and numpy draw them)")
        elif len(self.rechecks) == 1:
            bits = self.rechecks[0]
            grids = f"the {bits}-bit grid k/2^{bits} (0 included)"
        else:
            grids = " and on ".join(f"the grid k/2^{bits}" for bits in self.rechecks) \
                + " (0 included)"
        return (f" Each case passing exactly was run again with rng.random() on {grids} and "
                "judged for crashes and mass where the target has none.")

    def __repr__(self) -> str:
        if self.bits is None and not self.rechecks:
            return "Uniform.continuous()"
        if not self.rechecks:
            return f"Uniform.grid({self.bits})"
        if self.bits is None:
            return f"Uniform.rechecked_on({self.rechecks!r})"
        return f"Uniform(bits={self.bits!r}, rechecks={self.rechecks!r})"


#: The ideal uniform on [0, 1).
CONTINUOUS = Uniform()
#: torch.rand in float32: k / 2**24, 0 included.
FLOAT32 = Uniform(24)
#: numpy's Generator.random() and torch.rand in float64: k / 2**53, 0 included.
FLOAT64 = Uniform(53)
#: What an audit uses unless told otherwise: the ideal uniform, every passing case run
#: again on the float32 and float64 grids for crashes and support violations.
DEFAULT = Uniform(None, (24, 53))
