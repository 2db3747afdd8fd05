"""Issue 24: the catalogue's correct sampler rules keep their verdicts inside a Ray task.

A Ray worker runs threads of its own (the core worker, log and metrics reporters) next
to the task; draws those threads make must not be blamed on the audited code, and the
clock and address guards must not turn the worker's own reads into an undecided
verdict.  The Dask twin is tests/catalogue/test_in_a_dask_worker.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray")

#: Three correct rules that draw through categorical, bernoulli and a uniform.
FEW = ("textbook", "textbook-bernoulli", "one-hot-verification")


def _audit_correct_samplers(names: tuple[str, ...] | None) -> list[tuple[str, str, bool]]:
    from specexact.counterexamples import catalogue
    from specexact.frontends.cli.catalogue_cmd import audit_entry

    rows = [audit_entry(entry.name, None, None) for entry in catalogue()
            if entry.kind == "sampler" and entry.lossless
            and (names is None or entry.name in names)]
    return [(row["rule"], row["found"], row["match"]) for row in rows]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_a_few_correct_sampler_rules_pass_inside_a_ray_task(local_ray: Any) -> None:
    task = local_ray.remote(_audit_correct_samplers)
    rows = local_ray.get(task.remote(FEW), timeout=600)
    assert sorted(row[0] for row in rows) == sorted(FEW)
    assert [row for row in rows if not row[2]] == []


@pytest.mark.slow
def test_every_correct_sampler_rule_passes_inside_a_ray_task(local_ray: Any) -> None:
    task = local_ray.remote(_audit_correct_samplers)
    rows = local_ray.get(task.remote(None), timeout=1200)
    assert len(rows) >= 10
    assert [row for row in rows if not row[2]] == []
