"""The audit: one policy for every kind of code, each kind one record.

:func:`audit` runs the hand-picked edge cases and the Hypothesis search of
:mod:`specexact.properties` on the code, judging each case exactly; the kinds
(:data:`SAMPLER`, :data:`STEP`, :data:`CROSS_VOCAB`, :data:`FLOAT`) say how
their code is called, searched, judged and shown, and torch code's calling
conventions (:data:`TORCH_SIGNATURES`) say which of them judges it; :func:`result_human` and
:func:`result_json` word the result.  The frontends (CLI, pytest plugin,
assertions) only parse, call this and print.
"""

from __future__ import annotations

from specexact.audit.kinds import (
    BATCH,
    CROSS_VOCAB,
    DEFAULT_HORIZON,
    FLOAT,
    KINDS,
    SAMPLER,
    STEP,
    Kind,
    get_kind,
    kind_of,
    register_kind,
    selectable_kinds,
)
from specexact.audit.options import (
    DEFAULT_SEED,
    AuditOptions,
    AuditResult,
    Finding,
    Judgement,
    parse_integer,
    parse_vocab_sizes,
)
from specexact.audit.policy import audit, float_mode
from specexact.audit.render import model_lines, wrap
from specexact.audit.report import counterexample_json, result_human, result_json
from specexact.audit.signature import describe_arity_problem, describe_callable, detect_kind
from specexact.audit.torch_code import TORCH_SIGNATURES, TorchCode, TorchSignature

__all__ = [
    "BATCH",
    "CROSS_VOCAB",
    "DEFAULT_HORIZON",
    "DEFAULT_SEED",
    "FLOAT",
    "KINDS",
    "SAMPLER",
    "STEP",
    "TORCH_SIGNATURES",
    "AuditOptions",
    "AuditResult",
    "Finding",
    "Judgement",
    "Kind",
    "TorchCode",
    "TorchSignature",
    "audit",
    "counterexample_json",
    "describe_arity_problem",
    "describe_callable",
    "detect_kind",
    "float_mode",
    "get_kind",
    "kind_of",
    "model_lines",
    "parse_integer",
    "parse_vocab_sizes",
    "register_kind",
    "result_human",
    "result_json",
    "selectable_kinds",
    "wrap",
]
