"""Black-box statistics: sampled audits for code no exact mode can run, and the power
of engine-style statistical tests.

Sampled audits (:mod:`specexact.statistical.audit`), batched audits of samplers and chain
steps (:mod:`specexact.statistical.batched`, :mod:`specexact.statistical.batched_chain`),
the torch adapter (:mod:`specexact.statistical.torch_adapter`) and the power of
histogram tests (:mod:`specexact.statistical.power`).  A statistical verdict is never
exact; exact modes live in :mod:`specexact.exact`, :mod:`specexact.floats`,
:mod:`specexact.symbolic` and :mod:`specexact.torch`.
"""

from __future__ import annotations

from specexact.statistical.audit import StatisticalReport, statistical_audit, statistical_random
from specexact.statistical.batched import batched_statistical_audit
from specexact.statistical.batched_chain import batched_chain_audit
from specexact.statistical.power import NeededSamples, Power, samples_needed, test_power
from specexact.statistical.torch_adapter import torch_sampler

__all__ = [
    "NeededSamples",
    "Power",
    "StatisticalReport",
    "batched_chain_audit",
    "batched_statistical_audit",
    "samples_needed",
    "statistical_audit",
    "statistical_random",
    "test_power",
    "torch_sampler",
]
