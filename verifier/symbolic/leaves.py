"""What both provers do with one execution path and its leaf.

The sampler prover (prover.py) and the step prover (step_prover.py) enumerate a
case with a :class:`~specexact.exact.tree.ChoiceTree` of sympy weights; each
path ends in a leaf: its weight, the local "positive probability" constraints
it was explored under and the law it returned.  A leaf's formula is exact on
its whole region only if every branch taken assuming ``a > 0`` contributes 0
where ``a = 0``, and no denominator of the law vanishes there (see prover.py);
otherwise the case is split (:class:`~specexact.symbolic.signs.NeedSplit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from specexact.errors import Undecided
from specexact.symbolic.region import Constraint, Space
from specexact.symbolic.signs import (
    ZERO,
    Decider,
    NeedSplit,
    check_nonlinear_local,
    factorise,
    side,
)

__all__ = [
    "Leaf",
    "check_denominators",
    "check_leaf",
    "check_linear_local",
    "end_path",
    "path_signal",
]


@dataclass
class Leaf:
    """One execution path: its weight and the local constraints it was explored under."""

    weight: Any
    local: tuple[Constraint, ...]


def path_signal(decider: Any) -> BaseException | None:
    """What must end a path, even if the code under test swallowed it: the decider's first
    error, else its first split; None when there is neither."""
    if decider.errors:
        error: BaseException = decider.errors[0]
        return error
    if decider.splits:
        split: BaseException = decider.splits[0]
        return split
    return None


def end_path(decider: Any, exc: Exception) -> None:
    """After the code under test raised ``exc`` on a path: raise what really ends the path
    (the decider's signal, see :func:`path_signal`, or an Undecided); return when ``exc``
    is the code's own failure."""
    signal = path_signal(decider)
    if signal is not None:
        raise signal from None
    if isinstance(exc, Undecided):
        raise exc


def check_leaf(space: Space, cell: tuple[Constraint, ...], local: Sequence[Constraint],
               contributions: Sequence[Any], vanishes: Callable[[tuple[Constraint, ...]], bool],
               what: str, *, sides: tuple[Constraint, ...] | None = None,
               skip: frozenset[int] = frozenset()) -> None:
    """Raise NeedSplit (of the case ``cell``) unless a leaf's formula is exact on its region.

    Without ``sides`` (a sampler's leaf) every local constraint is decided on the case
    itself.  With ``sides`` (a step's leaf: the sides of the comparisons its path took,
    at the positions ``skip`` of ``local``) the region is the case and the sides, and
    each local constraint is decided below the ones before it.
    """
    before: list[Constraint] = []
    for i, c in enumerate(local):
        if i in skip:
            continue
        base = cell if sides is None else (*cell, *sides, *before)
        before.append(c)
        if c.lin is None:
            # Decided on the region (base), split on the case's signs.
            check_nonlinear_local(space, c, contributions, base,
                                  None if sides is None else cell)
        else:
            check_linear_local(space, c, base, cell, vanishes)
    case = Decider(space, cell)
    region = case if sides is None else Decider(space, (*cell, *sides))
    check_denominators(space, contributions, region, case, what)


def check_linear_local(space: Space, c: Constraint, base: Sequence[Constraint],
                       case: Sequence[Constraint],
                       vanishes: Callable[[tuple[Constraint, ...]], bool]) -> None:
    """Raise NeedSplit unless a branch explored assuming the linear ``c`` (``a > 0``) is
    exact on the region ``base``: ``base`` implies ``a >= 0`` and the contributions vanish
    (``vanishes``) on ``base`` and ``a == 0``.  The split has the sides of ``c`` that
    ``case`` allows."""
    if not space.feasible((*base, c.negated(space, ">="))):
        return  # the region itself implies the constraint
    below = c.negated(space, ">")
    zero = c.with_rel(space, "==")
    split = NeedSplit([s for s in (below, zero, c) if space.feasible((*case, s))])
    if space.feasible((*base, below)) or not vanishes((*base, zero)):
        raise split


def check_denominators(space: Space, contributions: Sequence[Any], region: Decider,
                       case: Decider, what: str) -> None:
    """Raise NeedSplit when a factor of a contribution's denominator may be 0 on the
    ``region``; the split has one side per sign the factor takes on the ``case``."""
    for contribution in contributions:
        _, den = sympy.fraction(contribution)
        if den.is_number:
            continue
        _, factors, _ = factorise(space, den, what)
        for factor in factors:
            signs = region.factor_signs(factor, local=False)
            if ZERO in signs:
                if case is not region:
                    signs = case.factor_signs(factor, local=False)
                raise NeedSplit([s for sign in sorted(signs)
                                 for s in side(space, factor, frozenset((sign,)))])
