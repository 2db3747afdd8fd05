"""The batch signature, sampled (``--statistical --batched --signature batch``): the exact
mode's properties on the real kernel, on real tensors of the given device."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from specexact import InvalidArgument
from specexact.frontends.cli import main

torch = pytest.importorskip("torch")
pytest.importorskip("numpy")
pytest.importorskip("scipy")

from specexact.counterexamples import batch_kernels  # noqa: E402
from specexact.statistical.batched_batch import (  # noqa: E402
    BATCH_SIGNATURE_PROPERTIES,
    batch_signature_audit,
)

FAST = 600
KERNELS = "specexact.counterexamples.batch_kernels:"


def _failed(report: Any) -> set[str]:
    return {c.case.name.partition(":")[0] for c in report.failures}


def test_a_correct_kernel_passes_with_every_property_named() -> None:
    report = batch_signature_audit(batch_kernels.vllm_rejection, samples=FAST, seed=0)
    assert report.verdict == "pass", report.format()
    text = report.format()
    assert text.startswith("PASS (statistical): ")
    assert "not a proof" in text and f"x {FAST} draws" in text and "(Holm)" in text
    assert {c.case.name.partition(":")[0] for c in report.cases} == \
        set(BATCH_SIGNATURE_PROPERTIES)
    assert all(f"{name} pass" in report.mode for name in BATCH_SIGNATURE_PROPERTIES)


def test_shared_stream_fails_independence() -> None:
    report = batch_signature_audit(batch_kernels.shared_stream, samples=FAST, seed=0)
    assert report.verdict == "fail"
    assert "independence" in _failed(report)
    assert "independence FAIL" in report.mode
    assert "seeds" not in _failed(report)


def test_compacted_generators_fails_seeds_with_the_example() -> None:
    report = batch_signature_audit(batch_kernels.compacted_generators, samples=FAST, seed=0)
    assert _failed(report) == {"seeds"}
    (seeds,) = report.failures
    assert seeds.p_value == 0 and "changed with its neighbours" in seeds.reason
    assert "with the same seed and drafts" in seeds.reason


def test_ignored_seeds_fail_seeds() -> None:
    report = batch_signature_audit(batch_kernels.ignored_seeds, samples=FAST, seed=1)
    assert _failed(report) == {"seeds"}


def test_a_token_at_a_padded_position_is_a_certain_failure() -> None:
    def pads(ids: Any, q: Any, p: Any, generators: list[Any]) -> Any:
        out = batch_kernels.vllm_rejection(ids, q, p, generators)
        out[:, -1] = 0  # every row emits k + 1 tokens, whatever it drafted
        return out

    report = batch_signature_audit(pads, samples=50, seed=0)
    assert "padding" in _failed(report)
    assert any("padded position" in c.reason for c in report.failures)


def test_arguments_are_checked() -> None:
    with pytest.raises(InvalidArgument, match="k="):
        batch_signature_audit(batch_kernels.vllm_rejection, k=0)
    with pytest.raises(InvalidArgument, match="samples"):
        batch_signature_audit(batch_kernels.vllm_rejection, samples=0)


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_cli_batch_signature() -> None:
    code, out, _ = _cli(["audit", KERNELS + "compacted_generators", "--statistical",
                         "--batched", "--signature", "batch", "--samples", "200", "--json"])
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail"
    assert data["counterexample"]["case"].startswith("seeds:")
    assert "batch signature" in data["statistical"]["mode"]


def test_cli_batch_signature_needs_batched() -> None:
    code, _, err = _cli(["audit", KERNELS + "vllm_rejection", "--statistical",
                         "--signature", "batch"])
    assert code == 2 and "needs --batched" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_cli_cuda_without_a_device_is_one_clear_line() -> None:
    code, _, err = _cli(["audit", KERNELS + "vllm_rejection", "--statistical", "--batched",
                         "--signature", "batch", "--device", "cuda"])
    assert code == 2 and "no CUDA device" in err and len(err.strip().splitlines()) == 1


def device_rejection(draft_token_ids: Any, draft_probs: Any, target_probs: Any,
                     generators: list[Any]) -> Any:
    """vLLM's rejection sampler, row by row, on the tensors' own device."""
    batch, k = draft_token_ids.shape
    dev = draft_probs.device
    out = torch.full((batch, k + 1), -1, dtype=torch.long, device=dev)
    ids = draft_token_ids.tolist()
    for i in range(batch):
        g = generators[i]
        u = torch.rand(k, generator=g, device=dev)
        n = sum(1 for x in ids[i] if x >= 0)
        for j in range(n + 1):
            if j < n:
                x = ids[i][j]
                if u[j] * draft_probs[i, j, x] < target_probs[i, j, x]:
                    out[i, j] = x
                    continue
                w = torch.clamp(target_probs[i, j] - draft_probs[i, j], min=0)
            else:
                w = target_probs[i, j]
            out[i, j] = torch.multinomial(w / w.sum(), 1, generator=g)[0]
            break
    return out


def test_a_device_aware_kernel_passes_on_the_cpu() -> None:
    report = batch_signature_audit(device_rejection, samples=300, seed=0)
    assert report.verdict == "pass", report.format()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_a_correct_kernel_passes_and_a_shared_stream_fails() -> None:
    report = batch_signature_audit(device_rejection, samples=FAST, seed=0, device="cuda")
    assert report.verdict == "pass", report.format()
    assert "on cuda" in report.mode

    def shared_on_device(ids: Any, q: Any, p: Any, generators: list[Any]) -> Any:
        common = torch.Generator(device=q.device)
        state = common.get_state()
        gens = []
        for g in generators:
            if g is None:
                g = torch.Generator(device=q.device)
                g.set_state(state)  # every unseeded row replays one stream
            gens.append(g)
        return device_rejection(ids, q, p, gens)

    bad = batch_signature_audit(shared_on_device, samples=FAST, seed=0, device="cuda")
    assert "independence" in _failed(bad)
