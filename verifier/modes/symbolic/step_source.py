"""What a step sees in a symbolic proof: models with a symbolic row per prefix, local case splits.

:class:`SymbolicModel` answers ``model(prefix)`` with the row of
:class:`~verifier.modes.symbolic.values.SymbolicValue` for that prefix (a
row whose prefix holds undrawn tokens is looked up when first read, fixing
them, as the numeric engine's models do).

:class:`LocalDecider` makes an undecided sign a *branch* of the execution
instead of a split of the whole case: a chain step compares ``p[0]`` with
``q[0]`` only after drafting token 0, so splitting every case on every
prefix's comparison would multiply the cases by every row the step may
read.  Each side of such a branch is a region (weight 1, not a
probability); the leaf records the sides it took, and the step prover sums
leaves over a refinement of the regions (see step_prover.py).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, MutableSequence, Sequence
from typing import Any

import sympy

from verifier.errors import UnsupportedOperation
from verifier.exact.random_source import LazyToken
from verifier.exact.tree import Chooser
from verifier.modes.symbolic.random_source import SymbolicRandom
from verifier.modes.symbolic.region import Constraint
from verifier.modes.symbolic.signs import Decider, SignSet, poly_signs
from verifier.modes.symbolic.step_space import RowKey, StepSpace
from verifier.modes.symbolic.values import SymbolicValue

__all__ = ["LocalDecider", "MissingRow", "SymbolicModel", "possible"]

_ONE = sympy.Integer(1)


class MissingRow(BaseException):
    """The step read a row the space has no symbols for; the state is redone with it.
    A BaseException so that a step's ``except Exception`` cannot swallow it."""

    def __init__(self, key: RowKey) -> None:
        super().__init__(f"{key[0]} row at prefix {key[1]}")
        self.key = key


def possible(space: StepSpace, base: Sequence[Constraint], c: Constraint) -> bool:
    """Whether ``c`` may hold together with ``base`` (exact for linear constraints; for a
    nonlinear one only the explicit constraints on the same polynomial count)."""
    if c.lin is not None:
        return space.feasible((*base, c))
    return bool(poly_signs((*base, c), c.poly))


class LocalDecider(Decider):
    """A Decider whose undecided signs branch the execution, one region per side."""

    def __init__(self, space: StepSpace, cell: Sequence[Constraint], chooser: Chooser) -> None:
        super().__init__(space, cell)
        self.chooser = chooser
        self.step_space = space
        #: Indices into ``local`` of the constraints that are region sides (the
        #: others are "this branch has positive probability").
        self.side_positions: list[int] = []

    def decide(self, expr: Any, truth: SignSet, what: str = "comparison") -> bool:
        for _ in range(32):
            signs = self.sign_set(expr, what)
            if signs <= truth:
                return True
            if not signs & truth:
                return False
            self._choose(self.split(expr, truth, what).sides, what)
        msg = f"internal error: the sign of {expr} stays undecided after 32 case splits"
        raise UnsupportedOperation(msg)

    def _choose(self, sides: Sequence[Constraint], what: str) -> None:
        base = (*self.cell, *self.local)
        live = [c for c in sides if possible(self.step_space, base, c)]
        if not live:  # pragma: no cover - the sides cover the region
            msg = f"internal error: no side of the split on {what} is possible"
            raise UnsupportedOperation(msg)
        index = 0
        if len(live) > 1:
            index = self.chooser.choose(("sides", tuple(c.key() for c in live)),
                                        lambda: [(i, _ONE) for i in range(len(live))],
                                        f"case: {' | '.join(str(c) for c in live)}")
        self.side_positions.append(len(self.local))
        self.local.append(live[index])

    @property
    def sides(self) -> tuple[Constraint, ...]:
        return tuple(self.local[i] for i in self.side_positions)


class SymbolicModel:
    """``model(prefix)``: a fresh list of symbolic values, the row of ``(name, prefix)``."""

    def __init__(self, name: str, space: StepSpace, rng: SymbolicRandom,
                 missing: list[RowKey]) -> None:
        self.name = name
        self.space = space
        self.rng = rng
        self.missing = missing

    def __call__(self, prefix: Any) -> MutableSequence[Any]:
        key = tuple(prefix)
        for token in key:
            if isinstance(token, LazyToken) and not token.is_fixed:
                return _LazyRow(self, key)
        return self.row(key)

    def row(self, prefix: Sequence[Any]) -> list[Any]:
        ids = tuple(operator.index(t) for t in prefix)
        v = self.space.vocab_size
        if any(not 0 <= t < v for t in ids):
            msg = (f"the step asked the {'target' if self.name == 'p' else 'draft'} for its "
                   f"row at prefix {ids}, which holds an id outside the vocabulary 0..{v - 1}")
            raise UnsupportedOperation(msg)
        key = (self.name, ids)
        if not self.space.has_row(key):
            self.missing.append(key)
            raise MissingRow(key)
        return [SymbolicValue(s, self.rng) for s in self.space.symbols[key]]

    def __repr__(self) -> str:
        return f"<symbolic {'target' if self.name == 'p' else 'draft'} model>"


class _LazyRow(MutableSequence[Any]):
    """A row whose prefix holds undrawn tokens: looked up (fixing them) when first read."""

    __slots__ = ("_items", "_model", "_prefix")

    def __init__(self, model: SymbolicModel, prefix: tuple[Any, ...]) -> None:
        self._model = model
        self._prefix = prefix
        self._items: list[Any] | None = None

    def _resolve(self) -> list[Any]:
        if self._items is None:
            self._items = self._model.row(self._prefix)
        return self._items

    def __getitem__(self, index: Any) -> Any:
        return self._resolve()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._resolve()[index] = value

    def __delitem__(self, index: Any) -> None:
        del self._resolve()[index]

    def insert(self, index: int, value: Any) -> None:
        self._resolve().insert(index, value)

    def __len__(self) -> int:
        return self._model.space.vocab_size if self._items is None else len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._resolve())

    def copy(self) -> list[Any]:
        return list(self._resolve())

    def __add__(self, other: Any) -> list[Any]:
        return [*self._resolve(), *other]

    def __radd__(self, other: Any) -> list[Any]:
        return [*other, *self._resolve()]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._resolve())
