"""Symbolic proofs over the whole simplex: run a sampler on symbolic p and q.

``prove_step(step, vocab_size, horizon)`` does the same for a decoding step,
with a symbolic target and draft row after every prefix it reads.

``prove(sampler, vocab_size)`` splits the simplex into cases (regions cut out
by linear constraints, decided with an exact LP), computes the output law as
a rational formula in each, and either simplifies ``law - p`` to zero
everywhere (a proof for every pair of distributions) or returns the biased
cases with their bias formula and a witness point confirmed by the exact
numeric engine.

sympy takes about a second to import, so ``prove`` and ``Constraint`` load
the symbolic engine on first use: ``import verifier`` stays fast for
numeric-only users.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specexact.symbolic.grid import GridHazard
from specexact.symbolic.result import Case, ProofResult
from specexact.symbolic.step_result import StepProofResult, StepRefutation

if TYPE_CHECKING:
    from collections.abc import Callable

    from specexact.exact.tree import Budget
    from specexact.symbolic.region import Constraint

__all__ = [
    "Case",
    "Constraint",
    "GridHazard",
    "ProofResult",
    "StepProofResult",
    "StepRefutation",
    "prove",
    "prove_step",
]


def prove(sampler: Callable[..., Any], vocab_size: int, *, budget: Budget | None = None,
          max_cases: int = 20_000, seed: int = 0, first: bool = False,
          uniform_bits: int | None = None) -> ProofResult:
    """Prove that ``sampler`` preserves p for every pair (p, q) on ``vocab_size`` tokens.

    Returns a :class:`ProofResult`: ``proved`` when ``output - p`` simplifies
    to zero in every case; ``refuted`` with the biased cases (region, bias
    formula, and a witness (p, q) the exact engine confirmed) otherwise.
    Raises an :class:`~specexact.errors.Undecided` subclass -- for example
    UnsupportedOperation naming the operation -- when no verdict is
    possible; never a false proof.  ``max_cases`` bounds the number of
    cases, ``budget`` each case's enumeration, ``seed`` the witness search;
    ``first=True`` stops at the first confirmed refutation.  The proof is
    for a continuous uniform: comparisons that differ between ``<`` and
    ``<=`` on a grid are listed in ``hazards``, and ``uniform_bits=K``
    refutes the rule when one puts mass on a token with p = 0 on the K-bit grid.

    >>> def textbook(p, q, rng):
    ...     x = rng.categorical(q)
    ...     if rng.random() * q[x] < p[x]:
    ...         return x
    ...     return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
    >>> prove(textbook, 3).proved
    True
    """
    from specexact.symbolic.prover import prove as _prove

    return _prove(sampler, vocab_size, budget=budget, max_cases=max_cases, seed=seed,
                  first=first, uniform_bits=uniform_bits)


def prove_step(step: Callable[..., Any], vocab_size: int, horizon: int, *,
               budget: Budget | None = None, max_cases: int = 20_000,
               seed: int = 0, merge_subtrees: bool = True,
               first: bool = False, search_first: bool = True) -> StepProofResult:
    """Prove that decoding with ``step`` gives the target's joint law of ``horizon`` tokens.

    For every pair of context-dependent target and draft models on
    ``vocab_size`` tokens: every row the step reads (the target's and the
    draft's after each prefix) is its own symbolic distribution.  Returns a
    :class:`StepProofResult`, proved or with a :class:`StepRefutation` (the
    state and region, the bias formula of the first differing sequence, and
    rational rows per prefix on which the exact numeric engine confirms the
    bias).  Raises an :class:`~specexact.errors.Undecided` subclass when no
    verdict is possible (``max_cases`` cases and regions exceeded, an
    unsupported operation, a stateful step); never a false proof.

    A subtree of the step's choice tree whose paths all give the same law
    of the tokens still needed (a chain verifying drafts past the horizon)
    is compared as one path; ``merge_subtrees=False`` compares every path
    on its own (for benchmarks and cross-checks: the verdict is the same).
    ``first=True`` checks the shortest states first and stops at the first
    confirmed refutation (then the bias formula is the step's own law
    followed by the target's; without it states go longest first and the
    formula is the decode's own).  The exact engine first decodes random
    rational models; a witness it finds guides the refutation to its region
    (``search_first=False`` skips that).

    >>> from specexact.counterexamples.chain_steps import chain
    >>> prove_step(chain, 2, 2).proved
    True
    """
    from specexact.symbolic.step_prover import prove_step as _prove_step

    return _prove_step(step, vocab_size, horizon, budget=budget, max_cases=max_cases,
                       seed=seed, merge_subtrees=merge_subtrees, first=first,
                       search_first=search_first)


def __getattr__(name: str) -> Any:
    if name == "Constraint":
        from specexact.symbolic.region import Constraint

        return Constraint
    msg = f"module 'specexact.symbolic' has no attribute {name!r}"
    raise AttributeError(msg)
