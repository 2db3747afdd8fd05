"""Ways of judging code other than the plain exact run: floats and grids, symbolic
proofs, black-box statistics, and the torch adapter.  Built on :mod:`verifier.exact`.

The symbolic prover is imported from :mod:`verifier.modes.symbolic` (it needs sympy).
"""

from __future__ import annotations

from verifier.modes.batched import batched_statistical_audit
from verifier.modes.batched_chain import batched_chain_audit
from verifier.modes.floats import FloatVerdict, check_floats, check_grid
from verifier.modes.power import NeededSamples, Power, samples_needed, test_power
from verifier.modes.statistical import StatisticalReport, statistical_audit
from verifier.modes.torch_adapter import torch_sampler

__all__ = [
    "FloatVerdict",
    "NeededSamples",
    "Power",
    "StatisticalReport",
    "batched_chain_audit",
    "batched_statistical_audit",
    "check_floats",
    "check_grid",
    "samples_needed",
    "statistical_audit",
    "test_power",
    "torch_sampler",
]
