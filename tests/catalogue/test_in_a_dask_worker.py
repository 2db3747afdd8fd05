"""Issue 24: the catalogue's correct sampler rules keep their verdicts inside a Dask
worker, whose event loop draws from ``random`` on another thread (before: every one
came back "undecided: the code used a global random generator")."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")


def _audit_correct_samplers() -> list[tuple[str, str, bool]]:
    from specexact.counterexamples import catalogue
    from specexact.frontends.cli.catalogue_cmd import audit_entry

    rows = [audit_entry(entry.name, None, None) for entry in catalogue()
            if entry.kind == "sampler" and entry.lossless]
    return [(row["rule"], row["found"], row["match"]) for row in rows]


@pytest.mark.slow
def test_correct_sampler_rules_pass_inside_a_dask_worker():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        rows = client.submit(_audit_correct_samplers).result(timeout=600)
    assert rows
    assert [row for row in rows if not row[2]] == []
