"""A cross-vocabulary witness: two models over two vocabularies and a horizon in characters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, final

from specexact.crossvocab.models import VocabModel

__all__ = ["CrossVocabWitness"]


@final
@dataclass(frozen=True)
class CrossVocabWitness:
    """Models on which a cross-vocabulary step does not preserve the target's law of text.

    ``spec`` is the compact description the search built the models from
    (a :class:`specexact.properties.crossvocab_search.CrossVocabSpec`), None for
    hand-written witnesses.
    """

    target: VocabModel
    draft: VocabModel
    horizon: int
    spec: Any = field(default=None, compare=False)
