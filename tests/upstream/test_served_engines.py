"""Serving engines' verification code, unmodified, audited with the defaults (issue 22).

Each function (see served_engines.py for the sources and commits) is audited as a user
would: ``specexact audit FILE:fn --torch --signature S``, nothing else.  Verdicts:

* vLLM v0 ``RejectionSampler.forward``, unseeded and with its row seeded: FAIL,
  support: the residual floored at ``finfo(float32).tiny`` gives a p = 0 token mass
  ``tiny / (1 + tiny)`` in exact arithmetic, and ``2**-53`` in float32 (it wins exactly
  when its exponential is 0, from the float64 draw ``u = 0``: ``tiny / 0 = inf``);
* vLLM v0 in a mixed seeded/unseeded batch: FAIL, the race reads memory never written:
  ``q[non_seeded_indices].exponential_()`` fills a copy (advanced indexing), so the
  unseeded rows race on ``torch.empty_like`` garbage;
* vLLM ``TypicalAcceptanceSampler``: FAIL, structural (typical acceptance is lossy by
  design; its entropy threshold is decided exactly);
* transformers ``_speculative_sampling``: FAIL, support ``2**-24`` (``r <= p / q``
  accepts a p = 0 draft when ``torch.rand`` returns 0);
* LMDeploy ``RejectionSampler``: FAIL, structural (greedy: the target's argmax);
* lucidrains ``speculative_decoding``: its faithful run is now in dtype semantics (the
  Gumbel noise ``-log(-log(u))`` with its ``eps`` clamps is a race on the float32 grid,
  no longer an undecided exact log); a default audit did not finish within 590 s of
  wall clock (146 CPU s) on a shared 2-core machine, so its verdict is not recorded here.

With dtype semantics each finding is classified (``counterexample.class``):
transformers is float-only (the ``2**-24`` zero of ``torch.rand``); vLLM's typical
acceptance and LMDeploy are structural.

``confirm_real_torch.py`` checks each verdict against real torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
TARGETS = '''
import sys
sys.path.insert(0, {here!r})
import served_engines as e
_v = e.vllm_rejection()
vllm_chain, vllm_seeded = _v["chain"], _v["seeded"]
vllm_mixed_seeded, vllm_mixed_unseeded = _v["mixed_seeded_row"], _v["mixed_unseeded_row"]
vllm_typical = e.vllm_typical()
transformers = e.transformers_sampling()
lmdeploy = e.lmdeploy()
'''


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("served") / "targets.py"
    path.write_text(TARGETS.format(here=str(HERE)))
    return path


def _audit(targets: Path, fn: str, signature: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "specexact", "audit", f"{targets.name}:{fn}",
                           "--torch", "--signature", signature, "-q", "--json"],
                          cwd=targets.parent, capture_output=True, text=True, timeout=1800,
                          check=False)
    assert done.returncode in (0, 1, 2), done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.mark.slow
@pytest.mark.parametrize("fn", ["vllm_chain", "vllm_seeded"])
def test_vllm_rejection_sampler_floors_a_p_zero_token_into_the_race(targets: Path,
                                                                    fn: str) -> None:
    report = _audit(targets, fn, "chain")
    assert report["verdict"] == "fail"
    assert "never emits" in report["counterexample"]["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("fn", ["vllm_mixed_seeded", "vllm_mixed_unseeded"])
def test_vllm_mixed_batch_races_on_memory_never_written(targets: Path, fn: str) -> None:
    report = _audit(targets, fn, "chain")
    assert report["verdict"] == "fail"
    assert "UninitialisedRead" in json.dumps(report)
    assert "rejection_sampler.py:401" in json.dumps(report)


@pytest.mark.slow
@pytest.mark.parametrize(("fn", "signature"), [("vllm_typical", "chain"),
                                               ("lmdeploy", "chain")])
def test_deterministic_acceptance_is_structurally_biased(targets: Path, fn: str,
                                                         signature: str) -> None:
    report = _audit(targets, fn, signature)
    assert report["verdict"] == "fail"
    assert "biased" in report["counterexample"]["reason"]
    assert report["counterexample"]["class"] == "structural"


@pytest.mark.slow
def test_transformers_accepts_a_p_zero_draft_on_the_float32_grid(targets: Path) -> None:
    report = _audit(targets, "transformers", "hf")
    assert report["verdict"] == "fail"
    assert report["counterexample"]["tv"] == "1/16777216"
    assert report["counterexample"]["class"] == "float-only"
