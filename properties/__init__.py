"""Hypothesis strategies, exact properties and the counterexample search.

>>> from specexact.properties import search_sampler
>>> from specexact.counterexamples.samplers import naive_resample
>>> search_sampler(naive_resample).status
'fail'
"""

from __future__ import annotations

from specexact.properties.crossvocab_search import (
    DEFAULT_CROSSVOCAB_EXAMPLES,
    CrossVocabSpec,
    crossvocab_edge_cases,
    crossvocab_specs,
    search_crossvocab,
    vocabularies,
)
from specexact.properties.edge_cases import EDGE_FAMILIES, sampler_edge_cases
from specexact.properties.float_hazards import FLOAT_HAZARDS, float_hazard_pairs
from specexact.properties.float_search import DEFAULT_FLOAT_EXAMPLES, search_floats
from specexact.properties.minimal import Minimality, minimise_pair
from specexact.properties.processor_search import (
    PROCESSOR_PANEL,
    processor_pipelines,
    search_processed_step,
)
from specexact.properties.properties import (
    acceptance_is_one_minus_tv,
    efficiency_bounds_hold,
    is_distribution_over_vocabulary,
    multidraft_acceptance,
    multidraft_acceptance_within_bound,
    no_mass_where_target_is_zero,
    preserves_joint_law,
    preserves_target,
    textbook_acceptance,
)
from specexact.properties.runner import ExactOnly, ExitReason, Phase, classifying
from specexact.properties.search import (
    DEFAULT_SAMPLER_EXAMPLES,
    DEFAULT_SAMPLER_VOCAB_SIZES,
    SamplerWitness,
    SearchResult,
    largest_tv,
    search_sampler,
    shrink_pair,
)
from specexact.properties.step_search import (
    DEFAULT_STEP_EXAMPLES,
    StepWitness,
    choose_horizon,
    search_step,
    step_edge_cases,
)
from specexact.properties.step_strategies import STEP_MODEL_KINDS, model_pairs, model_specs
from specexact.properties.strategies import (
    PAIR_FAMILIES,
    TOKEN_RELATIONS,
    distributions,
    pipelines,
    pq_pairs,
    vocab_range,
)

# Plainly sorted, as tests/test_exports.py checks (ruff would put the constants first).
__all__ = [  # noqa: RUF022
    "CrossVocabSpec",
    "DEFAULT_CROSSVOCAB_EXAMPLES",
    "DEFAULT_FLOAT_EXAMPLES",
    "DEFAULT_SAMPLER_EXAMPLES",
    "DEFAULT_SAMPLER_VOCAB_SIZES",
    "DEFAULT_STEP_EXAMPLES",
    "EDGE_FAMILIES",
    "ExactOnly",
    "ExitReason",
    "FLOAT_HAZARDS",
    "Minimality",
    "PAIR_FAMILIES",
    "PROCESSOR_PANEL",
    "Phase",
    "STEP_MODEL_KINDS",
    "SamplerWitness",
    "SearchResult",
    "StepWitness",
    "TOKEN_RELATIONS",
    "acceptance_is_one_minus_tv",
    "choose_horizon",
    "classifying",
    "crossvocab_edge_cases",
    "crossvocab_specs",
    "distributions",
    "efficiency_bounds_hold",
    "float_hazard_pairs",
    "is_distribution_over_vocabulary",
    "largest_tv",
    "minimise_pair",
    "model_pairs",
    "model_specs",
    "multidraft_acceptance",
    "multidraft_acceptance_within_bound",
    "no_mass_where_target_is_zero",
    "pipelines",
    "pq_pairs",
    "preserves_joint_law",
    "preserves_target",
    "processor_pipelines",
    "sampler_edge_cases",
    "search_crossvocab",
    "search_floats",
    "search_processed_step",
    "search_sampler",
    "search_step",
    "shrink_pair",
    "step_edge_cases",
    "textbook_acceptance",
    "vocab_range",
    "vocabularies",
]
