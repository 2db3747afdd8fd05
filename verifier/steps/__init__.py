"""Multi-step decoding, exactly: toy models, processors and stopping, per-prefix step
laws, decode composition, step verdicts and efficiency.  Built on :mod:`specexact.exact`.
"""

from __future__ import annotations

from specexact.steps.decode import (
    CacheDivergence,
    DecodeClock,
    Step,
    decode_distribution,
    step_law,
    target_distribution,
)
from specexact.steps.efficiency import (
    StepEfficiency,
    acceptance_upper_bound,
    draft_law_iid,
    draft_law_without_replacement,
    iid_acceptance,
    iid_expected_tokens,
    step_efficiency,
)
from specexact.steps.models import (
    CachedModel,
    ContextFreeModel,
    DeferredList,
    RaisingModel,
    RandomModel,
    RecordingModel,
    TableModel,
    random_model_pair,
)
from specexact.steps.processors import (
    BadWords,
    FrequencyPenalty,
    LogitBias,
    MinNewTokens,
    NoRepeatNGram,
    PresencePenalty,
    ProcessorPipeline,
    ProcessorsExhausted,
    RepetitionPenalty,
    Stopping,
    TokenGrammar,
)
from specexact.steps.verdict import (
    DecodeComparison,
    StepVerdict,
    check_step,
    compare_decodes,
    first_differing_prefix,
)

__all__ = [
    "BadWords",
    "CacheDivergence",
    "CachedModel",
    "ContextFreeModel",
    "DecodeClock",
    "DecodeComparison",
    "DeferredList",
    "FrequencyPenalty",
    "LogitBias",
    "MinNewTokens",
    "NoRepeatNGram",
    "PresencePenalty",
    "ProcessorPipeline",
    "ProcessorsExhausted",
    "RaisingModel",
    "RandomModel",
    "RecordingModel",
    "RepetitionPenalty",
    "Step",
    "StepEfficiency",
    "StepVerdict",
    "Stopping",
    "TableModel",
    "TokenGrammar",
    "acceptance_upper_bound",
    "check_step",
    "compare_decodes",
    "decode_distribution",
    "draft_law_iid",
    "draft_law_without_replacement",
    "first_differing_prefix",
    "iid_acceptance",
    "iid_expected_tokens",
    "random_model_pair",
    "step_efficiency",
    "step_law",
    "target_distribution",
]
