"""Sampling pipelines as exact rational transforms: temperature 1/m, top-k, top-p, min-p.

The target of speculative decoding is the law plain sampling draws from
*after* every processor, and each draft's q is the law it was really drawn
from after its own processors.  These transforms compute those laws exactly
over Fractions, so a sampler that mixes pipelines can be judged exactly.

Tie and boundary rules follow the main engines (Hugging Face transformers
``TopKLogitsWarper`` / ``TopPLogitsWarper``, vLLM ``apply_top_k_top_p``):

* **top-k** keeps every token whose probability is >= the k-th largest
  (``scores < topk(scores, k)[-1]`` is removed), so ties at the boundary are
  all kept and more than k tokens may survive.
* **top-p** (``rule="engine"``): sort ascending, remove the tokens whose
  ascending cumulative probability is ``<= 1 - top_p``; the largest token is
  always kept.  A cumulative sum landing exactly on ``1 - top_p`` removes
  that token.  Equal probabilities are ordered by token id, lower id first
  in the ascending order (a stable sort), so among ties the lower ids are
  removed first.
* **top-p** (``rule="nucleus"``, Holtzman et al.): sort descending (ties:
  lower id first), keep the shortest prefix whose mass is ``>= top_p``.
  The two rules differ exactly at boundaries and ties:
  ``top_p(1/2)`` on ``(1/2, 1/2)`` keeps token 1 under "engine" and token 0
  under "nucleus".
* **min-p** keeps tokens with ``p(x) >= min_p * max(p)``.
* **temperature 1/m** (integer m >= 1) is ``p^m / sum p^m``: dividing logits
  by 1/m multiplies them by m.  Temperatures that are not 1/m give
  irrational laws and are out of scope.

Each transform renormalises, so the output of every stage is a
distribution; composition is plain function composition in the order given
(engines apply temperature, then top-k, then top-p, then min-p).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, final

from specexact.errors import InvalidArgument
from specexact.numbers import as_distribution, to_fraction
from specexact.validation import check_integer

__all__ = [
    "MinP",
    "Pipeline",
    "Temperature",
    "TopK",
    "TopP",
    "sampling_pipeline",
]

Probs = tuple[Fraction, ...]


def _normalise(weights: Sequence[Fraction]) -> Probs:
    total = sum(weights, Fraction(0))
    # Every transform keeps at least the most likely token, so total > 0.
    return tuple(w / total for w in weights)


@final
@dataclass(frozen=True)
class Temperature:
    """Temperature 1/m: ``p^m`` renormalised (m = 1 is the identity)."""

    m: int

    def __post_init__(self) -> None:
        check_integer(self.m, "Temperature m", min_value=1)

    def __call__(self, p: Sequence[Fraction]) -> Probs:
        return _normalise([x ** self.m for x in p])

    def __str__(self) -> str:
        return f"temperature 1/{self.m}"


@final
@dataclass(frozen=True)
class TopK:
    """Keep every token at least as likely as the k-th largest (ties all kept)."""

    k: int

    def __post_init__(self) -> None:
        check_integer(self.k, "TopK k", min_value=1)

    def __call__(self, p: Sequence[Fraction]) -> Probs:
        if self.k >= len(p):
            return tuple(p)
        kth = sorted(p, reverse=True)[self.k - 1]
        return _normalise([x if x >= kth else Fraction(0) for x in p])

    def __str__(self) -> str:
        return f"top-k {self.k}"


@final
@dataclass(frozen=True)
class TopP:
    """Nucleus filtering with the engines' boundary rule (see the module docstring)."""

    top_p: Fraction
    rule: Literal["engine", "nucleus"] = "engine"

    def __post_init__(self) -> None:
        value = to_fraction(self.top_p, name="top_p")
        if not 0 < value <= 1:
            msg = f"TopP top_p={value} must lie in (0, 1]"
            raise InvalidArgument(msg)
        if self.rule not in ("engine", "nucleus"):
            msg = f"TopP rule={self.rule!r} must be 'engine' or 'nucleus'"
            raise InvalidArgument(msg)
        object.__setattr__(self, "top_p", value)

    def __call__(self, p: Sequence[Fraction]) -> Probs:
        keep = [False] * len(p)
        if self.rule == "engine":
            ascending = sorted(range(len(p)), key=lambda i: (p[i], i))
            cumulative = Fraction(0)
            for i in ascending:
                cumulative += p[i]
                keep[i] = cumulative > 1 - self.top_p
            keep[ascending[-1]] = True
        else:
            descending = sorted(range(len(p)), key=lambda i: (-p[i], i))
            mass = Fraction(0)
            for i in descending:
                keep[i] = True
                mass += p[i]
                if mass >= self.top_p:
                    break
        return _normalise([x if k else Fraction(0) for x, k in zip(p, keep, strict=True)])

    def __str__(self) -> str:
        return f"top-p {self.top_p} ({self.rule})"


@final
@dataclass(frozen=True)
class MinP:
    """Keep tokens with ``p(x) >= min_p * max(p)``."""

    min_p: Fraction

    def __post_init__(self) -> None:
        value = to_fraction(self.min_p, name="min_p")
        if not 0 <= value <= 1:
            msg = f"MinP min_p={value} must lie in [0, 1]"
            raise InvalidArgument(msg)
        object.__setattr__(self, "min_p", value)

    def __call__(self, p: Sequence[Fraction]) -> Probs:
        floor = self.min_p * max(p)
        return _normalise([x if x >= floor else Fraction(0) for x in p])

    def __str__(self) -> str:
        return f"min-p {self.min_p}"


Transform = Callable[[Sequence[Fraction]], Probs]


@final
@dataclass(frozen=True)
class Pipeline:
    """Transforms applied left to right; calling it validates p and returns the exact law.

    >>> from fractions import Fraction as F
    >>> Pipeline((Temperature(2), TopK(2)))([F(1, 2), F(1, 3), F(1, 6)])
    (Fraction(9, 13), Fraction(4, 13), Fraction(0, 1))
    """

    transforms: tuple[Transform, ...] = ()

    def __call__(self, p: Sequence[Any]) -> Probs:
        law: Probs = as_distribution(p, name="p")
        for transform in self.transforms:
            law = transform(law)
        return law

    def __str__(self) -> str:
        return " -> ".join(str(t) for t in self.transforms) or "identity"


_STAGES = ("temperature", "top_k", "top_p", "min_p")


def sampling_pipeline(*, temperature_m: int = 1, top_k: int | None = None,
                      top_p: Any = None, min_p: Any = None,
                      top_p_rule: Literal["engine", "nucleus"] = "engine",
                      order: Sequence[str] = _STAGES) -> Pipeline:
    """The pipeline an engine applies for these sampling parameters, in ``order``.

    Stages left at their default (temperature_m=1, None) are skipped.
    ``order`` lists the stage names "temperature", "top_k", "top_p",
    "min_p"; the default is the engines' order.
    """
    unknown = [s for s in order if s not in _STAGES]
    if unknown or len(set(order)) != len(order):
        msg = f"order={tuple(order)!r} must list distinct stages among {_STAGES}"
        raise InvalidArgument(msg)
    made: dict[str, Transform] = {}
    if temperature_m != 1:
        made["temperature"] = Temperature(temperature_m)
    if top_k is not None:
        made["top_k"] = TopK(top_k)
    if top_p is not None:
        made["top_p"] = TopP(to_fraction(top_p, name="top_p"), top_p_rule)
    if min_p is not None:
        made["min_p"] = MinP(to_fraction(min_p, name="min_p"))
    missing = [s for s in made if s not in order]
    if missing:
        msg = f"order={tuple(order)!r} leaves out the configured stages {missing}"
        raise InvalidArgument(msg)
    return Pipeline(tuple(made[s] for s in order if s in made))
