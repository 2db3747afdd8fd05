"""Batched statistical audits: fn(P, Q, generator) on [N, V] batches, and chain steps."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest

from specexact import InvalidArgument, Undecided
from specexact.frontends.cli import main
from specexact.statistical.batched import batched_statistical_audit, detect_array_kind
from specexact.statistical.batched_chain import batched_chain_audit, default_chain_panel

np = pytest.importorskip("numpy")
pytest.importorskip("scipy")

FAST = 2000


def _cat(w: Any, u: Any) -> Any:
    """Inverse-CDF draw per row of weights ``w`` [n, V] with uniforms ``u`` [n]."""
    c = w.cumsum(axis=-1)
    x = (c <= (u * c[..., -1])[..., None]).sum(axis=-1)
    return np.minimum(x, w.shape[-1] - 1)


def _textbook(floor: float = 0.0, fallback_p: bool = False, one_uniform: bool = False
              ) -> Any:
    def sampler(P: Any, Q: Any, rng: Any) -> Any:
        n = len(P)
        rows = np.arange(n)
        x = _cat(Q, rng.random(n))
        u = rng.random(n)
        accept = u * Q[rows, x] < P[rows, x]
        residual = P.copy() if fallback_p else np.maximum(P - Q, floor)
        residual[accept] = P[accept]  # rows that accepted: any valid weights
        # The reused uniform is the acceptance test's own u: after a rejection it is
        # at least p(x)/q(x), so the inverse-CDF fallback favours later ids.
        v = u if one_uniform else rng.random(n)
        return np.where(accept, x, _cat(residual, v))
    return sampler


textbook = _textbook()
naive_fallback = _textbook(fallback_p=True)
residual_floor = _textbook(floor=1e-3)
reused_uniform = _textbook(one_uniform=True)


def test_batched_numpy_textbook_passes_and_says_what_a_pass_means() -> None:
    report = batched_statistical_audit(textbook, samples=FAST, seed=0)
    assert report.passed, report.format()
    head = report.format().splitlines()[0]
    assert head.startswith("PASS (statistical): no bias detected at TV >= ")
    assert "99% power" in head and "not a proof" in head
    assert "batched, numpy arrays" in report.format()


@pytest.mark.parametrize("fn", [naive_fallback, residual_floor, reused_uniform],
                         ids=["naive fallback", "residual floor 1e-3", "reused uniform"])
def test_batched_numpy_bugs_fail(fn: Any) -> None:
    report = batched_statistical_audit(fn, samples=FAST, seed=0)
    assert not report.passed
    assert report.exit_code == 1


def test_the_residual_floor_fails_for_certain_where_p_is_zero() -> None:
    report = batched_statistical_audit(residual_floor, samples=FAST, seed=0)
    disjoint = next(r for r in report.cases if r.case.name == "disjoint supports")
    # Floored mass lands on token 2 (p = 0) and on the batch's padded lanes (ids
    # outside the case's vocabulary of 3): both certain.
    assert disjoint.rejected and disjoint.p_value == 0
    assert disjoint.support_violation + disjoint.invalid > 0


def test_every_batch_mixes_the_cases_of_the_panel() -> None:
    shapes: list[tuple[int, int]] = []
    seen_rows: list[Any] = []

    def spy(P: Any, Q: Any, rng: Any) -> Any:
        shapes.append(P.shape)
        seen_rows.append(np.hstack([P[:16], Q[:16]]))
        return textbook(P, Q, rng)

    batched_statistical_audit(spy, samples=100, seed=0, batch_rows=800, array="numpy")
    assert shapes[0] == (800, 7) and len(shapes) == 2  # 16 cases x 50 rows, twice
    assert len({tuple(r) for r in seen_rows[0].tolist()}) == 16  # 16 different cases


def test_a_seed_reproduces_the_counts_and_global_generator_code_is_seeded() -> None:
    def global_numpy(P: Any, Q: Any, rng: Any) -> Any:
        return textbook(P, Q, np.random.mtrand._rand)  # ignores rng: the global generator

    before = np.random.get_state()[1].copy()
    a = batched_statistical_audit(global_numpy, samples=300, seed=3, array="numpy")
    b = batched_statistical_audit(global_numpy, samples=300, seed=3, array="numpy")
    c = batched_statistical_audit(global_numpy, samples=300, seed=4, array="numpy")
    assert [r.counts for r in a.cases] == [r.counts for r in b.cases]
    assert [r.counts for r in a.cases] != [r.counts for r in c.cases]
    assert (np.random.get_state()[1] == before).all()  # the global state is restored


def test_certain_failures_need_no_statistics() -> None:
    def raises(P: Any, Q: Any, rng: Any) -> Any:
        raise RuntimeError("kernel launch failed")

    def floats(P: Any, Q: Any, rng: Any) -> Any:
        return textbook(P, Q, rng).astype(float)

    def short(P: Any, Q: Any, rng: Any) -> Any:
        return textbook(P, Q, rng)[:-1]

    def padded_lane(P: Any, Q: Any, rng: Any) -> Any:
        out = textbook(P, Q, rng)
        out[::97] = P.shape[1] - 1  # the batch's last lane: outside small vocabularies
        return out

    for fn, text in ((raises, "RuntimeError: kernel launch failed"), (floats, "float64"),
                     (short, "shape"), (padded_lane, "vocabulary")):
        report = batched_statistical_audit(fn, samples=500, seed=0, array="numpy")
        assert not report.passed
        assert any(r.p_value == 0 and text in r.reason for r in report.failures), \
            report.format()


def test_the_time_limit_gives_no_verdict() -> None:
    def slow(P: Any, Q: Any, rng: Any) -> Any:
        time.sleep(0.05)
        return textbook(P, Q, rng)

    with pytest.raises(Undecided, match="max_seconds"):
        batched_statistical_audit(slow, samples=10_000, batch_rows=160, max_seconds=0.2,
                                  array="numpy")


@pytest.mark.parametrize("kwargs", [{"samples": 0}, {"seed": -1}, {"alpha": 1},
                                    {"max_seconds": 0}, {"array": "jax"},
                                    {"generators": "each"}, {"device": "tpu"},
                                    {"array": "numpy", "device": "cuda"},
                                    {"batch_rows": 0}, {"cases": []}])
def test_bad_options_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        batched_statistical_audit(textbook, **kwargs)


# -- torch -------------------------------------------------------------------------------


torch = pytest.importorskip("torch")


def torch_textbook(P: Any, Q: Any, generator: Any) -> Any:
    n = P.shape[0]
    rows = torch.arange(n)
    x = torch.multinomial(Q, 1, generator=generator).squeeze(1)
    u = torch.rand(n, generator=generator, dtype=P.dtype)
    accept = u * Q[rows, x] < P[rows, x]
    residual = torch.clamp(P - Q, min=0)
    residual[accept] = P[accept]
    y = torch.multinomial(residual, 1, generator=generator).squeeze(1)
    return torch.where(accept, x, y)


def _race(fill_unseeded: bool) -> Any:
    """Gumbel-style exponential race over p with vLLM's per-row generators."""
    def race(P: Any, Q: Any, generators: Any) -> Any:
        e = torch.empty_like(P)
        seeded = [i for i, g in enumerate(generators) if g is not None]
        for i in seeded:
            e[i].exponential_(generator=generators[i])
        if fill_unseeded:
            mask = torch.ones(P.shape[0], dtype=torch.bool)
            mask[seeded] = False
            e[mask] = torch.empty_like(e[mask]).exponential_()
        return torch.argmax(P / e, dim=1)
    return race


def test_batched_torch_textbook_passes() -> None:
    assert detect_array_kind(torch_textbook) == "torch"
    report = batched_statistical_audit(torch_textbook, samples=FAST, seed=0)
    assert report.passed, report.format()
    assert "torch float32 tensors on cpu" in report.mode


def test_unseeded_rows_reading_uninitialised_memory_fail() -> None:
    ok = batched_statistical_audit(_race(True), samples=1000, seed=0, generators="per-row",
                                   batch_rows=4096)
    assert ok.passed, ok.format()
    assert sum("[seeded rows]" in r.case.name for r in ok.cases) == 16
    bad = batched_statistical_audit(_race(False), samples=1000, seed=0,
                                    generators="per-row", batch_rows=4096)
    assert not bad.passed
    assert all("[global-generator rows]" in r.case.name for r in bad.failures)


def test_seeded_dict_layout_passes_the_generators_of_the_seeded_rows() -> None:
    seen: list[Any] = []

    def spy(P: Any, Q: Any, generators: Any) -> Any:
        seen.append(generators)
        full = [generators.get(i) for i in range(P.shape[0])]
        return _race(True)(P, Q, full)

    report = batched_statistical_audit(spy, samples=200, seed=0, generators="seeded-dict")
    assert report.passed
    assert isinstance(seen[0], dict) and sorted(seen[0]) == list(range(0, 6400, 2))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch reports no CUDA device")
def test_the_same_audit_runs_on_cuda() -> None:  # pragma: no cover - needs a GPU
    report = batched_statistical_audit(torch_textbook, samples=FAST, device="cuda")
    assert report.passed and "cuda" in report.mode


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_without_a_device_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgument, match="no CUDA device"):
        batched_statistical_audit(torch_textbook, samples=10, device="cuda")


# -- chain steps ---------------------------------------------------------------------------


def _chain(shared_uniform: bool = False) -> Any:
    """The textbook chain rule, batched (numpy); optionally one uniform for every position."""
    def chain(ids: Any, Q: Any, P: Any, rng: Any) -> Any:
        n, k = ids.shape
        rows = np.arange(n)
        out = np.full((n, k + 1), -1)
        alive = np.ones(n, dtype=bool)
        first = rng.random(n)
        for j in range(k):
            x = ids[:, j]
            u = first if shared_uniform else rng.random(n)
            accept = u * Q[rows, j, x] < P[rows, j, x]
            rejected = alive & ~accept
            residual = np.maximum(P[:, j] - Q[:, j], 0)
            residual[~rejected] = 1.0
            y = _cat(residual, rng.random(n))
            out[rejected, j] = y[rejected]
            out[alive & accept, j] = x[alive & accept]
            alive &= accept
        bonus = _cat(P[:, k], rng.random(n))
        out[alive, k] = bonus[alive]
        return out
    return chain


def test_chain_textbook_passes_on_the_joint_law() -> None:
    report = batched_chain_audit(_chain(), gamma=2, samples=FAST, seed=0)
    assert report.passed, report.format()
    assert "joint law of 3 tokens" in report.mode
    assert len(report.cases) == len(default_chain_panel())


def test_chain_with_a_shared_uniform_fails_although_its_first_token_is_right() -> None:
    step = _chain(shared_uniform=True)
    first = batched_chain_audit(step, gamma=2, horizon=1, samples=FAST, seed=0)
    assert first.passed, first.format()  # the first token's marginal is right
    joint = batched_chain_audit(step, gamma=2, samples=FAST, seed=0)
    assert not joint.passed
    assert "outcome" in joint.format()  # the sequences are labelled in the law table


def test_chain_output_that_is_not_a_padded_row_fails_for_certain() -> None:
    def empty(ids: Any, Q: Any, P: Any, rng: Any) -> Any:
        return np.full((ids.shape[0], ids.shape[1] + 1), -1)

    report = batched_chain_audit(empty, gamma=2, samples=50, seed=0)
    assert not report.passed and all(r.invalid == 50 for r in report.cases)
    assert "emitted no token" in report.format()


def test_torch_chain_step_with_the_global_generator() -> None:
    def torch_chain(ids: Any, Q: Any, P: Any, generator: Any) -> Any:
        # Ignores the generator: draws from torch's global one, seeded by the audit.
        out = _chain()(ids.numpy(), Q.double().numpy(), P.double().numpy(),
                       np.random.default_rng(int(torch.randint(0, 2**31, ()).item())))
        return torch.from_numpy(out)

    a = batched_chain_audit(torch_chain, gamma=1, samples=300, seed=5)
    b = batched_chain_audit(torch_chain, gamma=1, samples=300, seed=5)
    assert a.passed and [r.counts for r in a.cases] == [r.counts for r in b.cases]


# -- the command line -------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _cli(argv: list[str], err: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


TARGET = f"{__file__}:"


def test_cli_batched_pass_and_fail() -> None:
    code, out, _ = _cli(["audit", TARGET + "textbook", "--statistical", "--batched",
                         "--samples", "1000"])
    assert code == 0 and out.startswith("PASS (statistical): no bias detected at TV >= ")
    code, out, _ = _cli(["audit", TARGET + "naive_fallback", "--statistical", "--batched",
                         "--samples", "1000", "--json"])
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail" and data["batched"] is True
    assert data["statistical"]["mode"].startswith("batched")


def test_cli_chain_signature() -> None:
    code, out, _ = _cli(["audit", TARGET + "shared_chain", "--statistical", "--batched",
                         "--signature", "chain", "--gamma", "2", "--samples", "1000",
                         "--json"])
    data = json.loads(out)
    assert code == 1 and data["kind"] == "step" and data["counterexample"]["case"]


def test_cli_progress_only_on_a_terminal() -> None:
    argv = ["audit", TARGET + "textbook", "--statistical", "--batched", "--samples", "3000",
            "--batch-rows", "1600"]
    _, _, plain = _cli(argv)
    assert plain == ""
    _, _, shown = _cli(argv, err=_Terminal())
    assert "draws/s" in shown and "cases" in shown


@pytest.mark.parametrize("extra, text", [
    (["--device", "cuda"], "needs torch tensors"),
    (["--generators", "per-row"], "applies to --batched"),
    (["--signature", "hf"], "no statistical mode"),
    (["--max-seconds", "-1"], "positive number of seconds"),
])
def test_cli_refuses_options_that_do_not_fit(extra: list[str], text: str) -> None:
    batched = [] if "per-row" in extra else ["--batched"]
    code, _, err = _cli(["audit", TARGET + "textbook", "--statistical", *batched, *extra])
    assert code == 2 and text in err


def test_cli_batched_needs_statistical() -> None:
    code, _, err = _cli(["audit", TARGET + "textbook", "--batched"])
    assert code == 2 and "--statistical" in err


shared_chain = _chain(shared_uniform=True)


def test_global_generator_code_without_a_generator_parameter() -> None:
    def plain_torch(P: Any, Q: Any) -> Any:  # draws from torch's global generator
        return torch.multinomial(P, 1).squeeze(1)

    a = batched_statistical_audit(plain_torch, samples=500, seed=2)
    b = batched_statistical_audit(plain_torch, samples=500, seed=2)
    assert a.passed and [r.counts for r in a.cases] == [r.counts for r in b.cases]
    assert torch.get_num_threads() >= 1  # restored after the run


def test_cli_per_call_torch_code_on_the_global_generator() -> None:
    argv = ["audit", TARGET + "torch_plain_single", "--statistical", "--samples", "300"]
    code, out, _ = _cli(argv)
    assert code == 0 and out.startswith("PASS (statistical)")
    first = json.loads(_cli([*argv, "--json"])[1])["statistical"]["cases"]
    again = json.loads(_cli([*argv, "--json"])[1])["statistical"]["cases"]
    assert [c["counts"] for c in first] == [c["counts"] for c in again]  # --seed fixes them


def torch_plain_single(p: Any, q: Any) -> Any:
    return torch.multinomial(p, 1)[0]


def test_both_audits_check_fn_and_build_the_backend_in_one_place():
    from specexact.statistical.batched import audit_backend

    def numpy_fn(P: Any, Q: Any, rng: Any) -> Any:
        return np.zeros(len(P), dtype=np.int64)

    backend = audit_backend(numpy_fn, array="numpy", device="cpu", dtype=None, seed=5,
                            generators="per-row")
    assert backend.describe() == "batched, numpy arrays, per-row generator"
    assert backend.seed == 5 and backend.dtype == "float64"
    with pytest.raises(InvalidArgument, match="is not callable"):
        audit_backend(3, array="numpy", device="cpu", dtype=None, seed=0, generators="shared")
    with pytest.raises(InvalidArgument, match="array"):
        audit_backend(numpy_fn, array="jax", device="cpu", dtype=None, seed=0,
                      generators="shared")
    for audit in (batched_statistical_audit,
                  lambda fn, **kw: batched_chain_audit(fn, gamma=1, **kw)):
        with pytest.raises(InvalidArgument, match="is not callable"):
            audit(3, samples=10)
        with pytest.raises(InvalidArgument, match="array"):
            audit(numpy_fn, samples=10, array="jax")
