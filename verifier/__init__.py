"""specexact's engine: the exact law of a sampler, and verdicts against the target.

Data flows sampler -> random source -> choice-tree enumeration -> exact
distribution -> verdict -> report, and the package is layered the same way:

* ``verifier`` itself: errors, exact numbers, validation, distributions,
  sampling pipelines;
* :mod:`verifier.exact`: the choice tree, random sources, the enumerator, verdicts;
* :mod:`verifier.steps`: models and multi-step decoding on top of it;
* :mod:`verifier.modes`: floats and grids, symbolic proofs, statistics, torch;
* :mod:`verifier.doors`: audits, reports, assertions, the pytest plugin, the CLI.

Every public name is re-exported here; import it from ``verifier``.
"""

from __future__ import annotations

from verifier.distribution import Distribution, InvalidToken, total_variation
from verifier.doors import (
    AuditOptions,
    AuditResult,
    assert_preserves_target,
    assert_step_preserves_target,
)
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
from verifier.exact import (
    Budget,
    Comparison,
    ExactRandom,
    LazyToken,
    LazyUniform,
    SeededRandom,
    Verdict,
    check_sampler,
    compare_laws,
    enumerate_law,
    format_table,
    output_distribution,
)
from verifier.modes import (
    FloatVerdict,
    StatisticalReport,
    check_floats,
    check_grid,
    statistical_audit,
    torch_sampler,
)
from verifier.modes.symbolic import (
    ProofResult,
    StepProofResult,
    StepRefutation,
    prove,
    prove_step,
)
from verifier.modes.torch_exact import (
    assert_torch_preserves_target,
    check_torch_sampler,
    numpy_output_distribution,
    torch_output_distribution,
    torch_randomness_reason,
    torch_step,
)
from verifier.numbers import as_distribution, to_fraction
from verifier.steps import (
    CacheDivergence,
    CachedModel,
    ContextFreeModel,
    DecodeComparison,
    RaisingModel,
    RandomModel,
    RecordingModel,
    StepEfficiency,
    StepVerdict,
    TableModel,
    acceptance_upper_bound,
    check_step,
    compare_decodes,
    decode_distribution,
    draft_law_iid,
    draft_law_without_replacement,
    iid_acceptance,
    iid_expected_tokens,
    random_model_pair,
    step_efficiency,
    step_law,
    target_distribution,
)

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
    "StepProofResult",
    "StepRefutation",
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
    "prove_step",
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
