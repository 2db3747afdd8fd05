"""vLLM v1's Triton rejection sampler, unmodified, audited with defaults (issue 22).

``rejection_sample`` (vllm/v1/sample/rejection_sampler.py at jiqing-feng/vllm@8896eb7)
launches ``rejection_random_sample_kernel`` and ``sample_recovered_tokens_kernel``
with ``kernel[grid](...)``; exact mode runs both kernels as Triton's interpreter does.
Verdict with defaults (``specexact audit ... --torch --signature chain``): FAIL,
float-only (it shows only on torch.rand's float32 grid): the acceptance test
``target_prob / draft_prob >= uniform_prob`` accepts a draft with p = 0 when
``torch.rand`` returns its grid zero, mass 2^-24 per position (witness: target (0, 1),
draft (1, 0)).  With an ideal uniform the kernels are exact: the recovered-token race
``argmax(max(p - q, 0) / q_exp)`` over one exponential row per request is a correct
exponential race, and only one recovered token per request is ever read.
``confirm_vllm_v1_triton.py`` confirms both with real torch and Triton's interpreter.
About 45 s of CPU.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("triton")

import vllm_v1_triton as v1

from specexact import check_step, random_model_pair, torch_step
from specexact.frontends.cli import main

pytestmark = pytest.mark.slow


def test_default_audit_fails_on_the_grid_zero_of_torch_rand(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entry = tmp_path / "vllm_v1_entry.py"
    entry.write_text("import vllm_v1_triton\nrejection_sample = vllm_v1_triton.chain()\n")
    code = main(["audit", f"{entry}:rejection_sample", "--torch", "--signature", "chain"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL" in out and "on sequences the target never emits" in out
    assert "The failure shows only\nunder torch.rand's grid" in out or \
        "only under torch.rand's grid" in out.replace("\n", " ")
    assert "after ()           (0, 1)" in out and "after ()           (1, 0)" in out


def test_exact_with_an_ideal_uniform() -> None:
    target, draft = random_model_pair(3, 0)
    step = torch_step(v1.chain(), signature="chain", gamma=2, uniform="continuous")
    result = check_step(step, target, draft, 3)
    assert result.passed and result.tv == Fraction(0)
