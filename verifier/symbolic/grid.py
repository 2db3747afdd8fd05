"""Grid hazards: comparisons whose answer on a K-bit uniform differs from the continuous one.

A proof models ``rng.random()`` as a continuous uniform on [0, 1): a single
value has probability 0, so ``u < t`` and ``u <= t`` are the same event.  On
a grid ``{k / 2^K}`` (torch.rand, 0 included) they are not wherever ``t``
can equal an end of the interval u is known to lie in (0 at first): a
non-strict test against a threshold that can be 0 (``u <= p[x] / q[x]``
with ``p[x] = 0``) accepts with probability 2^-K.  The prover records every
such comparison with the region where its threshold sits on the end;
``prove(..., uniform_bits=K)`` then runs the exact engine on the K-bit grid
at points of each region and refutes the rule when the grid puts mass on a
token the target gives none (the grid's rounding elsewhere is no bias of
the rule, see ``specexact.floats.check``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from specexact.distribution import Distribution
    from specexact.symbolic.region import Constraint, Space

__all__ = ["GridHazard", "grid_witness"]


@final
@dataclass(frozen=True)
class GridHazard:
    """``comparison`` differs between ``<`` and ``<=`` on a grid in ``constraints``.

    ``boundary`` is the end of the uniform's interval the threshold reaches
    there (``"0"``), or None for an equality test on the uniform (a grid
    value has positive mass wherever it lies).
    """

    comparison: str
    boundary: str | None
    constraints: tuple[Constraint, ...]

    def region(self) -> str:
        return " and ".join(str(c) for c in self.constraints) or "the whole simplex"

    def describe(self) -> str:
        where = ("an equality test on a uniform" if self.boundary is None else
                 f"the threshold can equal {self.boundary}, an end of the uniform's range "
                 "that a grid value hits")
        return f"{self.comparison}: {where}, where {self.region()}"

    def to_json(self) -> dict[str, Any]:
        return {"comparison": self.comparison, "boundary": self.boundary,
                "region": [str(c) for c in self.constraints]}


def grid_witness(space: Space, hazard: GridHazard, sampler: Callable[..., Any], bits: int,
                 rng: random.Random
                 ) -> tuple[tuple[tuple[Fraction, ...], tuple[Fraction, ...]], Distribution,
                            dict[Hashable, Fraction]] | None:
    """A point of the hazard's region where the K-bit grid puts mass where p has none.

    Returns ``(point, grid law, misplaced mass)`` or None when no tried point shows it.
    """
    from specexact.distribution import InvalidToken
    from specexact.errors import SpecexactError
    from specexact.exact.engine import output_distribution

    cell = hazard.constraints
    candidates: list[Sequence[Fraction]] = []
    centre = space.interior_point(cell)
    if centre is not None:
        candidates.append(centre)
    candidates += space.random_points(cell, 6, rng)
    for x in candidates:
        if not space.contains(cell, x):
            continue
        x = space.simplest_point(cell, x)
        p, q = space.split_point(x)
        try:
            law = output_distribution(sampler, p, q, uniform_bits=bits)
        except SpecexactError:
            continue  # a crash on the grid is the audit's to report, not this check's
        misplaced = {k: v for k, v in law.items()
                     if v and (isinstance(k, InvalidToken) or not isinstance(k, int)
                               or not 0 <= k < len(p) or p[k] == 0)}
        if misplaced:
            return (p, q), law, misplaced
    return None
