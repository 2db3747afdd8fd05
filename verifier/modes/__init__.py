"""Ways of judging code other than the plain exact run: floats and grids, symbolic
proofs, black-box statistics, and the torch adapter.  Built on :mod:`specexact.exact`.

The symbolic prover is imported from :mod:`specexact.modes.symbolic` (it needs sympy).
"""

from __future__ import annotations

from specexact.modes.batched import batched_statistical_audit
from specexact.modes.batched_chain import batched_chain_audit
from specexact.modes.floats import FloatVerdict, check_floats, check_grid
from specexact.modes.power import NeededSamples, Power, samples_needed, test_power
from specexact.modes.statistical import StatisticalReport, statistical_audit
from specexact.modes.torch_adapter import torch_sampler

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
