"""specexact's engine: the exact law of a sampler, and verdicts against the target.

Data flows sampler -> random source -> choice-tree enumeration -> exact
distribution -> verdict.
"""

from __future__ import annotations

from verifier.assertions import assert_preserves_target, assert_step_preserves_target
from verifier.audit import AuditOptions, AuditResult
from verifier.distribution import Distribution, InvalidToken, total_variation
from verifier.efficiency import (
    StepEfficiency,
    acceptance_upper_bound,
    draft_law_iid,
    draft_law_without_replacement,
    iid_acceptance,
    iid_expected_tokens,
    step_efficiency,
)
from verifier.engine import enumerate_law, output_distribution
from verifier.errors import (
    BudgetExceeded,
    HiddenRandomness,
    InvalidArgument,
    InvalidDistribution,
    InvalidInput,
    InvalidOutput,
    MissingDependency,
    SamplerFailure,
    SamplerRaised,
    SpecexactError,
    Undecided,
    UnsupportedOperation,
)
from verifier.floats import FloatVerdict, check_floats, check_grid
from verifier.models import (
    CachedModel,
    ContextFreeModel,
    RaisingModel,
    RandomModel,
    RecordingModel,
    TableModel,
    random_model_pair,
)
from verifier.numbers import as_distribution, to_fraction
from verifier.random_source import ExactRandom, LazyToken, LazyUniform, SeededRandom
from verifier.statistical import StatisticalReport, statistical_audit
from verifier.step_verdict import DecodeComparison, StepVerdict, check_step, compare_decodes
from verifier.steps import CacheDivergence, decode_distribution, step_law, target_distribution
from verifier.symbolic import ProofResult, prove
from verifier.torch_adapter import torch_sampler
from verifier.torchexact import (
    assert_torch_preserves_target,
    check_torch_sampler,
    numpy_output_distribution,
    torch_output_distribution,
    torch_randomness_reason,
    torch_step,
)
from verifier.tree import Budget
from verifier.verdict import Comparison, Verdict, check_sampler, compare_laws, format_table

__all__ = [
    "AuditOptions",
    "AuditResult",
    "Budget",
    "BudgetExceeded",
    "CacheDivergence",
    "CachedModel",
    "Comparison",
    "ContextFreeModel",
    "DecodeComparison",
    "Distribution",
    "ExactRandom",
    "FloatVerdict",
    "HiddenRandomness",
    "InvalidArgument",
    "InvalidDistribution",
    "InvalidInput",
    "InvalidOutput",
    "InvalidToken",
    "LazyToken",
    "LazyUniform",
    "MissingDependency",
    "ProofResult",
    "RaisingModel",
    "RandomModel",
    "RecordingModel",
    "SamplerFailure",
    "SamplerRaised",
    "SeededRandom",
    "SpecexactError",
    "StatisticalReport",
    "StepEfficiency",
    "StepVerdict",
    "TableModel",
    "Undecided",
    "UnsupportedOperation",
    "Verdict",
    "acceptance_upper_bound",
    "as_distribution",
    "assert_preserves_target",
    "assert_step_preserves_target",
    "assert_torch_preserves_target",
    "check_floats",
    "check_grid",
    "check_sampler",
    "check_step",
    "check_torch_sampler",
    "compare_decodes",
    "compare_laws",
    "decode_distribution",
    "draft_law_iid",
    "draft_law_without_replacement",
    "enumerate_law",
    "format_table",
    "iid_acceptance",
    "iid_expected_tokens",
    "numpy_output_distribution",
    "output_distribution",
    "prove",
    "random_model_pair",
    "statistical_audit",
    "step_efficiency",
    "step_law",
    "target_distribution",
    "to_fraction",
    "torch_output_distribution",
    "torch_randomness_reason",
    "torch_sampler",
    "torch_step",
    "total_variation",
]
