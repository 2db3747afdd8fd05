"""The baseline for bench_steps.py: replay enumeration memoised per prefix, without lazy draws.

Every ``rng.categorical`` branches at once over all its tokens (no lazy
token is ever returned), and the step law at each reachable prefix is
enumerated by replaying the step from the start for every leaf of its choice
tree, then composed by prefix length as the real engine does.  Uniforms are
still compared exactly (a continuous draw has no finite list of values), so
the only difference with ``specexact.decode_distribution`` is laziness and the
engine's bookkeeping.  The random source is the engine's own
(``ExactRandom``, with ``categorical`` made eager): whatever makes it faster
makes this baseline faster too, so the ratio in bench_steps.py keeps
measuring laziness alone (see its docstring for what that did to the ratio).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from specexact import Budget, ExactRandom
from specexact.exact import ChoiceTree, Chooser

__all__ = ["naive_decode_distribution"]

Prefix = tuple[int, ...]


class EagerRandom(ExactRandom):
    """``categorical`` returns a plain int, branching over every token immediately."""

    __slots__ = ()

    def categorical(self, weights: Any) -> int:  # type: ignore[override]
        return super().categorical(weights).value()


def _step_law(step: Callable[..., Any], target: Any, draft: Any, prefix: Prefix,
              budget: Budget) -> dict[Prefix, Fraction]:
    tree: ChoiceTree[Any] = ChoiceTree(budget)

    def execute(chooser: Chooser) -> Any:
        rng = EagerRandom(chooser)
        try:
            return tuple(int(t) for t in step(target, draft, prefix, rng))
        finally:
            rng.active = False

    law: dict[Prefix, Fraction] = {}
    for weight, out, _ in tree.explore(execute):
        law[out] = law.get(out, Fraction(0)) + weight
    return law


def naive_decode_distribution(step: Callable[..., Any], target: Any, draft: Any,
                              horizon: int, budget: Budget | None = None
                              ) -> dict[Prefix, Fraction]:
    """The joint law of the first ``horizon`` tokens, by eager replay memoised per prefix."""
    budget = budget or Budget(max_seconds=None)
    memo: dict[Prefix, dict[Prefix, Fraction]] = {}
    levels: list[dict[Prefix, Fraction]] = [{} for _ in range(horizon)]
    levels[0][()] = Fraction(1)
    final: dict[Prefix, Fraction] = {}
    for length in range(horizon):
        for prefix, mass in levels[length].items():
            law = memo.get(prefix)
            if law is None:
                law = memo[prefix] = _step_law(step, target, draft, prefix, budget)
            for out, prob in law.items():
                seq = prefix + out
                if len(seq) >= horizon:
                    key = seq[:horizon]
                    final[key] = final.get(key, Fraction(0)) + mass * prob
                else:
                    nxt = levels[len(seq)]
                    nxt[seq] = nxt.get(seq, Fraction(0)) + mass * prob
    return final
