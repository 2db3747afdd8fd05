"""Toy language models for multi-step searches, as small exact specifications.

A :class:`ModelSpec` is a default (p, q) row pair used after every prefix,
plus a few overrides at short prefixes: context-free models have none, and
shrinking removes overrides first, so witnesses come out context-free when
the bug allows it.  ``spec.models()`` builds the exact models
(:class:`~specexact.steps.models.ContextFreeModel` / :class:`~specexact.steps.models.TableModel`,
wrapped in :class:`~specexact.steps.models.CachedModel` for stateful steps).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from specexact.errors import InvalidArgument
from specexact.properties.strategies import PAIR_FAMILIES, pair_family, vocab_range
from specexact.steps.models import CachedModel, ContextFreeModel, TableModel
from specexact.validation import check_integer

__all__ = ["STEP_MODEL_KINDS", "ModelSpec", "model_pairs", "model_specs"]

Probs = tuple[Fraction, ...]
Prefix = tuple[int, ...]

#: Row families for step models (the pair families of
#: :func:`specexact.properties.strategies.pq_pairs`).
STEP_MODEL_KINDS = PAIR_FAMILIES


@dataclass(frozen=True)
class ModelSpec:
    """Target and draft rows: ``default`` everywhere except at the ``overrides`` prefixes."""

    default: tuple[Probs, Probs]
    overrides: tuple[tuple[Prefix, Probs, Probs], ...] = ()

    @property
    def vocab_size(self) -> int:
        return len(self.default[0])

    @property
    def context_free(self) -> bool:
        return not self.overrides

    def models(self, *, stateful: bool = False) -> tuple[Any, Any]:
        """The (target, draft) exact models this spec describes."""
        p, q = self.default
        if self.context_free:
            target: Any = ContextFreeModel(p)
            draft: Any = ContextFreeModel(q)
        else:
            target = TableModel({pre: a for pre, a, _ in self.overrides}, default=p)
            draft = TableModel({pre: b for pre, _, b in self.overrides}, default=q)
        if stateful:
            return CachedModel(target), CachedModel(draft)
        return target, draft

    def describe(self) -> str:
        """The rows, one prefix a line, in exact fractions."""
        def row(values: Probs) -> str:
            return "(" + ", ".join(str(x) for x in values) + ")"

        lines = [f"every other prefix: target {row(self.default[0])}, "
                 f"draft {row(self.default[1])}"]
        for prefix, a, b in self.overrides:
            lines.insert(0, f"after {prefix}: target {row(a)}, draft {row(b)}")
        return "\n".join(lines)


@functools.cache
def _hot_target(v: int, w: int) -> st.SearchStrategy[tuple[Probs, Probs]]:
    # Greedy rules are only lossless for one-hot targets: keep the draft free.
    return st.tuples(st.integers(0, v - 1), pair_family("independent", v, w)).map(
        lambda args: (tuple(Fraction(int(i == args[0])) for i in range(v)), args[1][1]))


@st.composite
def _spec(draw: Any, v: int, families: Sequence[str], max_weight: int, max_overrides: int,
          depth: int, one_hot_target: bool) -> ModelSpec:
    def pair(family: str) -> tuple[Probs, Probs]:
        chosen: tuple[Probs, Probs]
        if one_hot_target:
            chosen = draw(_hot_target(v, max_weight))
        elif v == 1:
            chosen = (Fraction(1),), (Fraction(1),)
        else:
            chosen = draw(pair_family(family, v, max_weight))
        return chosen

    # Rows mix families per prefix (target = draft at some prefixes only, a zero
    # in the draft after one token, ...): each prefix draws its own family.
    default = pair(draw(st.sampled_from(tuple(families))))
    overrides: dict[Prefix, tuple[Probs, Probs]] = {}
    if draw(st.booleans()):
        # Fully context-dependent: every prefix up to some length has its own rows.
        length = draw(st.integers(1, depth))
        prefixes: list[Prefix] = [()]
        for _ in range(length):
            prefixes = [(*pre, t) for pre in prefixes for t in range(v)]
            for pre in prefixes:
                overrides[pre] = pair(draw(st.sampled_from(tuple(families))))
    else:
        for _ in range(draw(st.integers(0, max_overrides))):
            prefix = tuple(draw(st.lists(st.integers(0, v - 1), min_size=1, max_size=depth)))
            overrides[prefix] = pair(draw(st.sampled_from(tuple(families))))
    return ModelSpec(default, tuple((k, a, b) for k, (a, b) in sorted(overrides.items())))


def model_specs(*, vocab_sizes: int | Sequence[int] = (2, 3), kinds: Sequence[str] | None = None,
                max_weight: int = 6, max_overrides: int = 2, depth: int = 2,
                one_hot_target: bool = False) -> st.SearchStrategy[ModelSpec]:
    """Specifications of (target, draft) models; see :class:`ModelSpec`.

    ``kinds`` picks the row families (default: all of ``STEP_MODEL_KINDS``:
    independent rows, target == draft, zeros in the draft, disjoint
    supports, nearly equal rows, one-hot rows); up to ``max_overrides``
    prefixes of length <= ``depth`` get their own rows (context-dependent
    models).  ``one_hot_target`` makes every target row one-hot.
    """
    low, high = vocab_range(vocab_sizes)
    families = tuple(kinds) if kinds is not None else STEP_MODEL_KINDS
    unknown = [k for k in families if k not in PAIR_FAMILIES]
    if unknown or not families:
        msg = f"kinds={families!r} must be a non-empty subset of {STEP_MODEL_KINDS}"
        raise InvalidArgument(msg)
    check_integer(max_weight, "max_weight", min_value=1)
    check_integer(depth, "depth", min_value=1)
    check_integer(max_overrides, "max_overrides", min_value=0)
    return st.integers(low, high).flatmap(
        lambda v: _spec(v, families, max_weight, max_overrides, depth, one_hot_target))


def model_pairs(*, vocab_sizes: int | Sequence[int] = (2, 3), kinds: Sequence[str] | None = None,
                stateful: bool = False, one_hot_target: bool = False
                ) -> st.SearchStrategy[tuple[Any, Any]]:
    """(target, draft) exact toy language models, context-free or context-dependent."""
    return model_specs(vocab_sizes=vocab_sizes, kinds=kinds,
                       one_hot_target=one_hot_target).map(
        lambda spec: spec.models(stateful=stateful))
