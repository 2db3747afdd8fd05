"""Float code judged exactly: the deviation split into rounding and structure.

Float code is re-run on exact stand-ins of its inputs (:mod:`specexact.floats.scalars`)
to tell structure from rounding, and on the grid ``k / 2**K`` of ``rng.random()``
(:mod:`specexact.floats.check`).
"""

from __future__ import annotations

from specexact.floats.check import FloatVerdict, check_floats, check_grid

__all__ = [
    "FloatVerdict",
    "check_floats",
    "check_grid",
]
