"""An immutable exact probability law, and the invalid-outcome marker."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, final

from specexact.numbers import to_fraction

__all__ = ["Distribution", "InvalidToken", "total_variation"]


@final
class InvalidToken:
    """Stands in the law for a returned value that is not a token id.

    Kept apart from ints so that returning ``1.0`` or ``True`` never merges
    with token 1.
    """

    __slots__ = ("description",)

    def __init__(self, value: Any) -> None:
        try:
            text = repr(value)
        except Exception:
            text = "<unrepresentable>"
        self.description = f"{text} ({type(value).__name__})"

    @classmethod
    def described(cls, description: str) -> InvalidToken:
        """A marker whose description is given (``a one-element float32 tensor``)."""
        marker = cls(None)
        marker.description = description
        return marker

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InvalidToken) and other.description == self.description

    def __hash__(self) -> int:
        return hash(("InvalidToken", self.description))

    def __repr__(self) -> str:
        return f"<not a token: {self.description}>"

    def __lt__(self, other: object) -> bool:  # so tables sort
        return isinstance(other, InvalidToken) and self.description < other.description


def _sort_key(outcome: Any) -> tuple[int, Any]:
    if isinstance(outcome, int):
        return (0, outcome)
    if isinstance(outcome, tuple):
        return (1, tuple(_sort_key(x) for x in outcome))
    return (2, repr(outcome))


@final
class Distribution(Mapping[Hashable, Fraction]):
    """An exact law: outcome -> Fraction, zero-probability outcomes absent.

    Behaves as a read-only mapping, iterates in a stable order (tokens
    ascending, then tuples, then invalid outcomes) and compares equal to
    another mapping with the same nonzero entries, or to a sequence of
    probabilities read as ``token i -> seq[i]``:

    >>> Distribution({0: Fraction(1, 2), 1: Fraction(1, 2)}) == ["1/2", "1/2"]
    True
    """

    __slots__ = ("_items", "_order")

    def __init__(self, items: Mapping[Hashable, Any] | Iterable[tuple[Hashable, Any]] = ()
                 ) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        data: dict[Hashable, Fraction] = {}
        for outcome, prob in pairs:
            f = to_fraction(prob, name=f"probability of {outcome!r}")
            if f:
                data[outcome] = data.get(outcome, Fraction(0)) + f
        self._items = {k: v for k, v in data.items() if v}
        self._order = sorted(self._items, key=_sort_key)

    @classmethod
    def from_probabilities(cls, probs: Sequence[Any]) -> Distribution:
        """Token i gets ``probs[i]``."""
        return cls((i, v) for i, v in enumerate(probs))

    def __getitem__(self, outcome: Hashable) -> Fraction:
        return self._items[outcome]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._items)

    def get(self, outcome: Hashable, default: Any = None) -> Any:
        return self._items.get(outcome, default)

    def prob(self, outcome: Hashable) -> Fraction:
        """Probability of ``outcome`` (0 when absent)."""
        return self._items.get(outcome, Fraction(0))

    @property
    def total(self) -> Fraction:
        """Total mass (1 for a complete law)."""
        return sum(self._items.values(), Fraction(0))

    def _coerce(self, other: object) -> Distribution | None:
        if isinstance(other, Distribution):
            return other
        if isinstance(other, Mapping):
            return Distribution(other)
        if isinstance(other, (list, tuple)) or (hasattr(other, "tolist")
                                                 and hasattr(other, "__len__")):
            try:
                return Distribution.from_probabilities(list(other))  # type: ignore[call-overload]
            except (TypeError, ValueError):
                return None
        return None

    def __eq__(self, other: object) -> bool:
        coerced = self._coerce(other)
        if coerced is None:
            return NotImplemented
        return self._items == coerced._items

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def difference(self, other: Mapping[Hashable, Any] | Sequence[Any]) -> dict[Hashable, Fraction]:
        """``self - other`` on every outcome where they differ."""
        coerced = self._coerce(other)
        if coerced is None:
            msg = f"cannot compare a Distribution with {type(other).__name__}"
            raise TypeError(msg)
        keys = sorted(set(self._items) | set(coerced._items), key=_sort_key)
        out = {k: self.prob(k) - coerced.prob(k) for k in keys}
        return {k: v for k, v in out.items() if v}

    def marginal(self, position: int) -> Distribution:
        """For a law over tuples: the law of the element at ``position``."""
        return Distribution((k[position], v) for k, v in self._items.items()  # type: ignore[index]
                            )

    def map(self, fn: Any) -> Distribution:
        """The law of ``fn(outcome)``."""
        return Distribution((fn(k), v) for k, v in self._items.items())

    def mean(self) -> Fraction:
        """The exact mean of a law over integers (a count, such as tokens per call).

        >>> Distribution({1: Fraction(1, 2), 3: Fraction(1, 2)}).mean()
        Fraction(2, 1)
        """
        return sum((int(k) * v for k, v in self._items.items()),  # type: ignore[call-overload]
                   Fraction(0))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v}" for k, v in self.items())
        return f"Distribution({{{inner}}})"


def total_variation(a: Mapping[Hashable, Any], b: Mapping[Hashable, Any]) -> Fraction:
    """Exact total variation distance: half the L1 distance."""
    da = a if isinstance(a, Distribution) else Distribution(a)
    db = b if isinstance(b, Distribution) else Distribution(b)
    keys = set(da) | set(db)
    return sum((abs(da.prob(k) - db.prob(k)) for k in keys), Fraction(0)) / 2
