"""Exact witnesses and their one JSON form.

A :class:`SamplerWitness` is an exact (p, q); a :class:`StepWitness` is a
pair of toy models and a horizon.  The search (:mod:`properties`) returns
them and the catalogue (:mod:`counterexamples`) stores them; both use these
classes.  JSON writes every probability as an exact fraction string
("3/10"), token ids as strings ("2"), token sequences and prefixes as
comma-joined ids ("0,1"; "" for the empty prefix), model rows shortest
prefix first.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, final

__all__ = [
    "SamplerWitness",
    "StepWitness",
    "fraction_text",
    "law_json",
    "outcome_key",
    "prefix_key",
    "rows_json",
    "sampler_case_json",
    "step_witness_json",
    "vector_text",
]

Probs = tuple[Fraction, ...]
Rows = Mapping[tuple[int, ...], Sequence[Fraction]]


@final
@dataclass(frozen=True)
class SamplerWitness:
    """An exact (p, q) on which a sampler does not preserve p."""

    p: Probs
    q: Probs

    @classmethod
    def of(cls, p: Sequence[Any], q: Sequence[Any]) -> SamplerWitness:
        """From fractions or their strings: ``SamplerWitness.of(["1/2", "1/2"], ["0", "1"])``."""
        return cls(tuple(Fraction(x) for x in p), tuple(Fraction(x) for x in q))

    def to_json(self) -> dict[str, list[str]]:
        return {"p": [fraction_text(x) for x in self.p], "q": [fraction_text(x) for x in self.q]}


@final
@dataclass(frozen=True)
class StepWitness:
    """Exact models and a horizon on which a step does not preserve the target's joint law.

    ``spec`` is the compact description the search built the models from
    (a :class:`specexact.properties.step_strategies.ModelSpec`), None for hand-written
    witnesses; ``processors`` the processors and stopping the step was judged
    under (a :class:`specexact.steps.processors.ProcessorPipeline`), None for none.
    """

    target: Any
    draft: Any
    horizon: int
    spec: Any = field(default=None, compare=False)
    processors: Any = None


def fraction_text(value: Any) -> str:
    """An exact probability as a string: ``Fraction(3, 10)`` -> ``"3/10"``."""
    return str(value if isinstance(value, Fraction) else Fraction(value))


def vector_text(values: Sequence[Any]) -> str:
    return "(" + ", ".join(fraction_text(v) for v in values) + ")"


def outcome_key(outcome: Hashable) -> str:
    """A token id or a token sequence as a JSON key: ``2`` -> "2", ``(0, 1)`` -> "0,1"."""
    if isinstance(outcome, bool):
        return repr(outcome)
    if isinstance(outcome, int):
        return str(outcome)
    if isinstance(outcome, tuple):
        return ",".join(outcome_key(x) for x in outcome)
    return repr(outcome)


def prefix_key(prefix: Sequence[int]) -> str:
    return ",".join(str(t) for t in prefix)


def law_json(law: Mapping[Hashable, Fraction] | None,
             keys: Sequence[Hashable] = ()) -> dict[str, str]:
    """``{outcome: probability}`` with string keys; ``keys`` are listed even when 0."""
    out: dict[str, str] = {outcome_key(k): "0" for k in keys}
    if law is not None:
        for outcome, prob in law.items():
            out[outcome_key(outcome)] = fraction_text(prob)
    return out


def rows_json(rows: Rows) -> dict[str, list[str]]:
    """A model as ``{"0,1": ["1/2", "1/2"], ...}``, shortest prefixes first."""
    ordered = sorted(rows, key=lambda prefix: (len(prefix), prefix))
    return {prefix_key(prefix): [fraction_text(x) for x in rows[prefix]] for prefix in ordered}


def sampler_case_json(p: Sequence[Fraction], q: Sequence[Fraction],
                      expected: Mapping[Hashable, Fraction] | None,
                      actual: Mapping[Hashable, Fraction] | None) -> dict[str, Any]:
    """A sampler's (p, q) with the expected and actual laws, every token listed."""
    vocab = range(len(p))
    return {**SamplerWitness(tuple(p), tuple(q)).to_json(),
            "expected": law_json(expected, vocab),
            "actual": law_json(actual, vocab if actual is not None else ())}


def step_witness_json(target_rows: Rows, draft_rows: Rows, horizon: int,
                      expected: Mapping[Hashable, Fraction] | None,
                      actual: Mapping[Hashable, Fraction] | None,
                      processors: Any = None) -> dict[str, Any]:
    """A step's witness: the model rows the run asked for, the horizon and both joint laws.

    A crash leaves no comparison, hence no expected law whose outcomes to list.
    ``processors`` (a pipeline with ``to_json()``) adds its configuration under
    ``"processors"``; the rows are the models' own, before processing.
    """
    keys = list(expected) if expected is not None else []
    data = {"target": rows_json(target_rows), "draft": rows_json(draft_rows),
            "horizon": horizon, "expected": law_json(expected, keys),
            "actual": law_json(actual, keys if actual is not None else ())}
    if processors is not None:
        data["processors"] = processors.to_json()
    return data
