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
* lucidrains ``speculative_decoding``: FAIL, float-only, ``2**-24``: it rejects when
  ``r > p / q`` with ``r`` from ``uniform_(0, 1)`` on the float32 grid, so ``r = 0``
  accepts a draft the target gives p = 0 (target one-hot on 1, draft one-hot on 0: the
  loop emits 0 with mass ``2**-24``). Its Gumbel noise ``-log(-log(u))`` with its ``eps``
  clamps is a race on the float32 grid. A default audit took 315 CPU s (219 s of wall
  clock) on a shared 2-core machine.

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
lucidrains = e.lucidrains()
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


@pytest.mark.slow
def test_lucidrains_accepts_a_p_zero_draft_on_the_float32_grid(targets: Path) -> None:
    report = _audit(targets, "lucidrains", "decode")
    assert report["verdict"] == "fail"
    assert report["counterexample"]["tv"] == "1/16777216"
    assert report["counterexample"]["class"] == "float-only"
    assert report["counterexample"]["actual"] == {"1": "16777215/16777216",
                                                  "0": "1/16777216"}


@pytest.mark.slow
def test_real_torch_confirms_lucidrains_accepts_a_p_zero_draft_when_uniform_gives_0(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import served_engines
    import torch
    from upstream_engines import RealLM

    generate = served_engines.lucidrains()
    target, draft = RealLM([0.0, 1.0]), RealLM([1.0, 0.0])
    prompt = torch.tensor([[0]])
    torch.manual_seed(0)
    # r from uniform_(0, 1) is never 0 in a few hundred calls: token 0 never comes out ...
    assert all(int(generate(prompt, draft, target, 1)[0, 1]) == 1 for _ in range(200))
    # ... and is emitted when it is: the grid point 0 the audit's witness names.
    monkeypatch.setattr(torch.Tensor, "uniform_", lambda self, *a, **k: self.zero_())
    assert int(generate(prompt, draft, target, 1)[0, 1]) == 0
