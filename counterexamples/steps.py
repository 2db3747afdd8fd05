"""Multi-step rules (chains, trees, blocks, stateful caches), right and wrong.

``STEP_RULES`` lists each rule as a :class:`StepRule`; a wrong rule carries
a :class:`StepWitness`: exact toy models and a horizon on which its joint law
(or its cache) departs from the target's.  Every witness here was checked by
:func:`specexact.check_step` (see ``tests/test_step_rules.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specexact.counterexamples import chain_steps, tree_steps
from specexact.counterexamples.lookup import by_name
from specexact.steps.models import CachedModel, ContextFreeModel, TableModel
from specexact.witness import StepWitness

__all__ = ["STEP_RULES", "StepRule", "StepWitness", "get_step_rule", "named_step"]


@dataclass(frozen=True)
class StepRule:
    """One multi-step rule: the step, whether it is lossless, why, and its witness.

    ``stateful`` rules need :class:`~specexact.steps.models.CachedModel` models
    (wrap generated ones); ``target_kind == "one-hot"`` rules are lossless
    only for targets with one-hot rows (greedy decoding).
    """

    name: str
    lossless: bool
    rule: Callable[..., Any]
    summary: str
    source: str | None
    witness: StepWitness | None
    stateful: bool = False
    target_kind: str = "any"
    #: The processors and stopping the rule is judged under (a ProcessorPipeline).
    processors: Any = None


def named_step(fn: Callable[..., Any], name: str, **options: Any) -> Callable[..., Any]:
    """``fn`` with its options fixed, as a plain step function called ``name``."""
    bound = functools.partial(fn, **options)

    def step(target: Any, draft: Any, prefix: tuple[int, ...], rng: Any) -> Any:
        return bound(target, draft, prefix, rng)

    step.__name__ = step.__qualname__ = name.replace("-", "_")
    step.__doc__ = fn.__doc__
    step.__module__ = fn.__module__
    return step


def _cf(p: tuple[str, ...], q: tuple[str, ...], horizon: int) -> StepWitness:
    return StepWitness(ContextFreeModel(p), ContextFreeModel(q), horizon)


def _r(*xs: str) -> tuple[Fraction, ...]:
    return tuple(Fraction(x) for x in xs)


# p = 1/2 everywhere except after token 0, where it is (1/4, 3/4); q = (1/3, 2/3).
_AFTER_ZERO = TableModel({(0,): _r("1/4", "3/4")}, default=_r("1/2", "1/2"))
_Q_THIRDS = ContextFreeModel(("1/3", "2/3"))
_AFTER_ZERO_THIRDS = TableModel({(0,): _r("1/3", "2/3")}, default=_r("1/2", "1/2"))

_LEVIATHAN = "Leviathan et al., ICML 2023, Algorithm 1; Chen et al. 2023"


def _chain_rules() -> list[StepRule]:
    rules = []
    for gamma in (1, 2, 3, 4):
        rules.append(StepRule(
            f"chain-gamma{gamma}", True,
            named_step(chain_steps.chain, f"chain-gamma{gamma}", gamma=gamma),
            f"The textbook chain rule with gamma = {gamma} drafts and the bonus token: fresh "
            "uniforms, the residual of the rejected position, the later drafts dropped.",
            _LEVIATHAN, None))
    for gamma in (1, 2):
        rules.append(StepRule(
            f"chain-gamma{gamma}-no-bonus", True,
            named_step(chain_steps.chain, f"chain-gamma{gamma}-no-bonus", gamma=gamma,
                       bonus=False),
            "The chain rule without the bonus token when every draft is accepted: it wastes "
            "the free target sample but each emitted token still has the target's law.",
            "reference sheet, section 2 (wasteful but lossless)", None))
    return rules


_RULES: list[StepRule] = [
    *_chain_rules(),
    StepRule(
        "greedy", True, named_step(chain_steps.greedy, "greedy", gamma=2),
        "Greedy speculative decoding: keep argmax drafts while they equal the target's "
        "argmax. It reproduces greedy decoding, so it preserves a greedy (one-hot) target "
        "and nothing else.",
        "reference sheet, section 3 (greedy)", None, target_kind="one-hot"),
    StepRule(
        "specinfer-multiround", True,
        named_step(tree_steps.specinfer, "specinfer-multiround", k=2, depth=2),
        "SpecInfer multi-round over k = 2 i.i.d. siblings per level, depth 2: each sibling "
        "is tested against the running residual r, which becomes norm(max(r - q, 0)) after "
        "a rejection.",
        "Miao et al., ASPLOS 2024", None),
    StepRule(
        "rrs-without-replacement", True,
        named_step(tree_steps.rrs_without_replacement, "rrs-without-replacement", k=2),
        "Recursive rejection sampling over drafts drawn without replacement: the j-th "
        "draft's ratio and residual use q^(j), q restricted to the tokens not drawn yet.",
        "Jeon et al. 2024; EAGLE-1", None),
    StepRule(
        "one-hot-tree", True, named_step(tree_steps.one_hot_tree, "one-hot-tree", k=2, depth=2),
        "A deterministic token tree (EAGLE-2 style): the draft's top-2 tokens at each of 2 "
        "levels, each accepted with probability r(x), else zeroed in r; lossless because "
        "the candidates never depend on the verifier's coins.",
        "EAGLE-2/3, SGLang, vLLM argmax drafts", None),
    StepRule(
        "spectr-rho-k", True, named_step(tree_steps.spectr, "spectr-rho-k", k=2),
        "SpecTr k-sequential selection with rho = k = 2: accept with min(1, p/(rho q)), "
        "fallback [p - min(q, p/rho)(1 - (1-beta)^k)/beta] / (1-beta)^k, with its own "
        "branches for beta = 0 and beta = 1.",
        "Sun et al., NeurIPS 2023", None),
    StepRule(
        "block-verification", True,
        named_step(tree_steps.block_verification, "block-verification", gamma=2),
        "Block verification: the longest prefix kept by coins h_i computed from the "
        "weights P_i, then a token from norm(max(P_tau p - q, 0)); never below the "
        "token-wise rule's expected length.",
        "Sun et al., ICLR 2025", None),
    StepRule(
        "stateful-chain", True,
        named_step(chain_steps.stateful_chain, "stateful-chain", gamma=2),
        "The chain rule against models with a cache: after a rejection both caches are cut "
        "back to the accepted prefix, then the emitted token is appended.",
        _LEVIATHAN, None, stateful=True),
    # ---- wrong rules -------------------------------------------------------
    StepRule(
        "shared-uniform", False,
        named_step(chain_steps.shared_uniform, "shared-uniform", gamma=2),
        "One uniform reused to test every drafted position: the first token's marginal is "
        "right, but the acceptances become dependent and the joint law is biased "
        "(P(0, 0) = 2/9 instead of 1/9 on the witness).",
        "FlashInfer #424 (one uniform reused); reference sheet, section 2",
        _cf(("1/3", "2/3"), ("2/3", "1/3"), 2)),
    StepRule(
        "bonus-from-residual", False,
        named_step(chain_steps.bonus_from_residual, "bonus-from-residual", gamma=1),
        "After every draft is accepted the bonus token is drawn from norm(max(p - q, 0)) "
        "instead of p: the free token is biased away from what the draft likes (and the "
        "draw crashes when p = q there).",
        "reference sheet, section 5 (bonus token from the wrong law)",
        _cf(("1/2", "1/2"), ("1/3", "2/3"), 2)),
    StepRule(
        "residual-wrong-position", False,
        named_step(chain_steps.residual_wrong_position, "residual-wrong-position", gamma=1),
        "The residual at a rejection uses the target's row one position late (logits not "
        "shifted): max(p_{i+1} - q_i, 0). Invisible with context-free models; the witness "
        "changes p only after token 0.",
        "reference sheet, section 5 (residual from the wrong position)",
        StepWitness(_AFTER_ZERO, _Q_THIRDS, 2)),
    StepRule(
        "stale-context-fallback", False,
        named_step(chain_steps.stale_context_fallback, "stale-context-fallback", gamma=1),
        "After a rejection the replacement's p and q are read at a context that still holds "
        "the rejected draft. Invisible with context-free models; the witness changes p only "
        "after token 0.",
        "reference sheet, section 2 (stale context after a rejection)",
        StepWitness(_AFTER_ZERO, _Q_THIRDS, 2)),
    StepRule(
        "greedy-verify-sampled", False,
        named_step(chain_steps.greedy_verify_sampled, "greedy-verify-sampled", gamma=1),
        "Drafts sampled from q but verified greedily (kept iff equal to argmax p) while "
        "the target samples: greedy verification at temperature > 0 collapses the law "
        "onto argmax tokens.",
        "SGLang #31214 (greedy verification used at temperature > 0)",
        _cf(("1/3", "2/3"), ("1/2", "1/2"), 1)),
    StepRule(
        "specinfer-original-p", False,
        named_step(tree_steps.specinfer, "specinfer-original-p", k=2, depth=1,
                   against_original=True),
        "Every sibling tested against the original p instead of the running residual: a "
        "token the first sibling failed to land gets a second chance, giving (4/9, 5/9) "
        "instead of (1/3, 2/3) on the witness.",
        "reference sheet, section 3 (SpecInfer)",
        _cf(("1/3", "2/3"), ("2/3", "1/3"), 1)),
    StepRule(
        "rrs-plain-residual", False,
        named_step(tree_steps.rrs_without_replacement, "rrs-plain-residual", k=2,
                   plain_q=True),
        "Drafts drawn without replacement but ratio and residual computed with the plain q "
        "instead of q^(j): on the witness token 2 comes out with probability 1 instead "
        "of 3/4.",
        "reference sheet, section 3 (recursive rejection sampling without replacement)",
        _cf(("0", "1/4", "3/4"), ("1/2", "0", "1/2"), 1)),
    StepRule(
        "block-no-ptau", False,
        named_step(tree_steps.block_verification, "block-no-ptau", gamma=2, weighted=False),
        "Block verification whose final residual drops the P_tau weight: "
        "norm(max(p - q, 0)) instead of norm(max(P_tau p - q, 0)); wrong only from "
        "vocabulary 3 and gamma 2 on.",
        "Sun et al., ICLR 2025; reference sheet, section 3",
        _cf(("1/4", "1/4", "1/2"), ("0", "3/4", "1/4"), 2)),
    StepRule(
        "stateful-chain-no-rollback", False,
        named_step(chain_steps.stateful_chain, "stateful-chain-no-rollback", gamma=1,
                   rollback=False),
        "The stateful chain rule that forgets to truncate the caches after a rejection: "
        "the rejected draft stays in the cache and the next step reads its rows after a "
        "context that was never emitted.",
        "mlx-lm #846 (caches not rewound after a rejection)",
        StepWitness(CachedModel(_AFTER_ZERO_THIRDS), CachedModel(_Q_THIRDS), 2),
        stateful=True),
]

STEP_RULES: tuple[StepRule, ...] = tuple(_RULES)


def get_step_rule(name: str) -> StepRule:
    """The rule called ``name``; KeyError listing close names otherwise."""
    return by_name(STEP_RULES, name, "step rule")
