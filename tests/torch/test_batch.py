"""The batch audit (--signature batch): each property decided exactly on the panel."""

from __future__ import annotations

import pytest

from specexact.counterexamples import batch_kernels as bk
from specexact.properties.batch_search import search_batch
from specexact.torch.batch import BatchKernel


def _statuses(fn, k):
    result = search_batch(BatchKernel(fn, k=k, faithful=False), vocab_sizes=(2, 2))
    report = result.witness.report
    return result, {name: report.status(name) for name in report.names}


def test_vllm_idiom_passes_every_property() -> None:
    result, statuses = _statuses(bk.vllm_rejection, 2)
    assert result.status == "pass"
    assert set(statuses.values()) == {"pass"}


@pytest.mark.parametrize(("fn", "failed"), [
    (bk.shared_stream, "independence"),
    (bk.ignored_seeds, "seeds"),
    (bk.placeholder_accepted, "padding"),
])
def test_each_bug_fails_its_property(fn, failed) -> None:
    result, statuses = _statuses(fn, 2 if fn is bk.placeholder_accepted else 1)
    assert result.status == "fail"
    assert statuses[failed] == "fail"
