"""``@triton.jit`` kernels under exact mode (issue 22): launched as engines launch them,
judged with the torch mode's semantics (dtype values, lazy draws, exact law)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from specexact import check_step, random_model_pair, torch_step  # noqa: E402
from specexact.errors import SamplerRaised, UnsupportedOperation  # noqa: E402
from specexact.torch import check_torch_sampler, torch_output_distribution  # noqa: E402
from tests.torch import triton_kernels as k  # noqa: E402

F = Fraction
P, Q = ["1/2", "1/2", "0"], ["1/4", "1/4", "1/2"]
P4, Q4 = ["1/2", "1/4", "1/4", "0"], ["1/4", "1/4", "1/4", "1/4"]


def test_textbook_race_kernel_passes_with_its_exact_law() -> None:
    verdict = check_torch_sampler(k.race_sampler, P4, Q4)
    assert verdict.passed, verdict
    law = torch_output_distribution(k.race_sampler, P4, Q4, uniform="continuous")
    assert dict(law.items()) == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}
    # p / q is dyadic here (2, 1, 1, 0): on torch.rand's float32 grid the law is the same
    assert torch_output_distribution(k.race_sampler, P4, Q4) == law


def test_inclusive_accept_fails_on_the_grid_zero_of_torch_rand() -> None:
    verdict = check_torch_sampler(k.race_inclusive, ["1", "0"], ["0", "1"])
    assert not verdict.passed
    law = torch_output_distribution(k.race_inclusive, ["1", "0"], ["0", "1"])
    assert law[1] == F(1, 2 ** 24)                   # u = 0 <= 0 / 1 accepts token 1
    exact = torch_output_distribution(k.race_inclusive, ["1", "0"], ["0", "1"],
                                      uniform="continuous")
    assert dict(exact.items()) == {0: F(1)}


def test_inverse_cdf_without_renormalising_is_structurally_biased() -> None:
    good = torch_output_distribution(k.cdf_sampler, P4, Q4, uniform="continuous",
                                     semantics="exact")
    assert dict(good.items()) == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}
    bad = torch_output_distribution(k.cdf_unnormalised, P4, Q4, uniform="continuous",
                                    semantics="exact")
    # rejected w.p. 1/4; the residual (1/4, 0, 0, 0) is not divided by 1/4, so u2 above
    # 1/4 counts every lane: token 4 (outside the vocabulary) 3/4 of the time
    assert bad[0] == F(1, 4) + F(1, 4) * F(1, 4) and bad[4] == F(1, 4) * F(3, 4)
    assert not check_torch_sampler(k.cdf_unnormalised, P4, Q4).passed


def test_chain_kernel_passes_and_a_shared_uniform_fails() -> None:
    target, draft = random_model_pair(3, 0)
    good = torch_step(k.chain_sampler, signature="chain", gamma=2, uniform="continuous")
    assert check_step(good, target, draft, 3).passed
    bad = torch_step(k.chain_shared_uniform, signature="chain", gamma=2,
                     uniform="continuous")
    result = check_step(bad, target, draft, 3)
    assert not result.passed and result.tv > F(1, 1000)


def test_unsupported_tl_op_names_the_op_the_kernel_line_and_a_spelling() -> None:
    with pytest.raises(UnsupportedOperation) as caught:
        torch_output_distribution(k.unsupported_op, P, Q)
    text = str(caught.value)
    lines = Path(k.__file__).read_text().splitlines()
    line = next(i for i, s in enumerate(lines, 1) if "tl.sigmoid(" in s and "store" in s)
    assert "tl.sigmoid" in text and f"triton_kernels.py:{line}" in text
    assert "1 / (1 + tl.exp(-x))" in text


def _token_of(block_values: object) -> object:
    def fn(p: object, q: object) -> object:
        out = k.copy_block(torch.tensor([3, 1, 2]), 4, other=block_values)
        return out[3] + 4 * out[0]     # lane 3 is masked off; lane 0 is src[0] = 3
    return fn


def test_masked_lanes_take_other_and_the_rest_load_the_tensor() -> None:
    law = torch_output_distribution(_token_of(5), P, Q)
    assert dict(law.items()) == {5 + 4 * 3: F(1)}


def test_a_masked_lane_without_other_is_uninitialised_as_on_the_gpu() -> None:
    with pytest.raises(SamplerRaised, match=r"UninitialisedRead .*masked-off lane of "
                                            r"tl.load with no other="):
        torch_output_distribution(_token_of(None), P, Q)


def test_an_unmasked_load_past_the_tensor_is_a_memory_finding() -> None:
    def fn(p: object, q: object) -> object:
        return k.copy_block(torch.tensor([3, 1, 2]), 4, masked=False)[0]
    with pytest.raises(SamplerRaised, match=r"KernelMemoryError .*element 3 of the "
                                            r"argument src_ptr, outside its storage of 3 "
                                            r"elements .*triton_kernels\.py:\d+"):
        torch_output_distribution(fn, P, Q)


def test_pointers_follow_views_and_stores_reach_the_base_tensor() -> None:
    def fn(p: object, q: object) -> object:
        base = torch.tensor([9, 8, 7, 6, 5])
        view = base[2:]                          # storage offset 2, as torch's view
        dst = torch.zeros(5, dtype=torch.int64)
        k.copy_kernel[(1,)](dst[1:], view, 3, BLOCK=4, OTHER=0, MASKED=True)
        assert view.is_contiguous() and view.data_ptr() > base.data_ptr()
        assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
        return dst[1] * 100 + dst[3] * 10 + dst[4]     # dst = [0, 7, 6, 5, 0]
    assert dict(torch_output_distribution(fn, P, Q).items()) == {750: F(1)}


def test_the_how_to_lists_every_modelled_tl_op() -> None:
    from specexact.torch.triton_language import supported_tl_ops
    page = (Path(__file__).parents[2] / "docs" / "how-to" / "triton.md").read_text()
    listed = page.split("## What is modelled", 1)[1]
    assert all(f"`{name}`" in listed for name in supported_tl_ops())


def test_triton_arithmetic_in_the_dtype_and_exactly() -> None:
    # 7 (= -3 + 10), 9 (= -1 + 10), 1/3 rounded to float32, -7 / 2 = -3.5 in float32
    assert dict(torch_output_distribution(k.arithmetic, P, Q).items()) == {1791: F(1)}
    # exact semantics: 1 / 3 is the rational 1/3, not float32's nearest value
    exact = torch_output_distribution(k.arithmetic, P, Q, semantics="exact")
    assert dict(exact.items()) == {1790: F(1)}


def test_launches_outside_an_exact_session_are_triton_s_own() -> None:
    torch_output_distribution(k.race_sampler, P, Q, uniform="continuous")  # hook installed
    assert k.race_kernel[(1,)].__name__ == "<lambda>"   # Triton's KernelInterface proxy


def _interpreted(cases: list[tuple[str, list[object], list[str | None]]]) -> list[object]:
    """Each ``(kernel name, argument values, dtypes)`` launched on real tensors by
    Triton's own CPU interpreter (TRITON_INTERPRET=1, in a fresh process): the first
    argument's values after the launch."""
    script = Path(__file__).with_name("triton_interpret.py")
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(cases),
                          capture_output=True, text=True, check=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    return list(json.loads(done.stdout))


def _exact(name: str, values: list[object], dtypes: list[str | None]) -> object:
    kernel = getattr(k, name)

    def fn(p: object, q: object) -> object:
        args = [torch.tensor(v, dtype=getattr(torch, d)) if d is not None else v
                for v, d in zip(values, dtypes, strict=True)]
        kernel[(1,)](*args)
        out = args[0]                    # integer outputs, encoded as one token id
        return sum((out[i] + 100) * 1000 ** i for i in range(out.shape[0]))

    (token, mass), = torch_output_distribution(fn, P, Q).items()
    assert mass == 1
    return [(token // 1000 ** i) % 1000 - 100 for i in range(len(values[0]))]


def test_kernels_compute_what_triton_s_interpreter_computes() -> None:
    cases: list[tuple[str, list[object], list[str | None]]] = []
    V = 5
    for seed in range(6):
        gen = torch.Generator().manual_seed(seed)
        p = torch.softmax(torch.randn(V, generator=gen) * 3, 0)   # rows as engines have them
        q = torch.softmax(torch.randn(V, generator=gen) * 3, 0)
        p[seed % V] = 0.0                                          # and a zero
        draft = torch.multinomial(q, 1, generator=gen).tolist()
        u, u2 = torch.rand(1, generator=gen), torch.rand(2, generator=gen)
        e = torch.empty(V).exponential_(generator=gen)
        f32 = "float32"
        cases.append(("race_kernel", [draft, p.tolist(), q.tolist(), u.tolist(), e.tolist(),
                                      V, 8, False], ["int64", f32, f32, f32, f32, None, None,
                                                     None]))
        cases.append(("cdf_kernel", [draft, p.tolist(), q.tolist(), u2.tolist(), V, 8, True],
                      ["int64", f32, f32, f32, None, None, None]))
    cases.append(("arithmetic_kernel", [[0, 0], [0.0, 0.0], -7, 2, 1.0],
                  ["int64", "float32", None, None, None]))
    real = _interpreted(cases)
    assert real[-1] == [-3, -1]
    assert [_exact(*case) for case in cases] == real


def test_tl_maximum_drops_a_nan_unless_asked_to_propagate_it() -> None:
    assert dict(torch_output_distribution(k.nan_maximum(False), P, Q).items()) == {1: F(1)}
    assert dict(torch_output_distribution(k.nan_maximum(True), P, Q).items()) == {0: F(1)}


def test_heuristics_are_honoured_and_a_many_config_autotune_is_refused() -> None:
    assert dict(torch_output_distribution(k.heuristic_copy, P, Q).items()) == {456: F(1)}
    with pytest.raises(UnsupportedOperation, match=r"@triton.autotune kernel "
                                                   r"tuned_copy_kernel with 2 configs"):
        torch_output_distribution(k.tuned_copy, P, Q)
