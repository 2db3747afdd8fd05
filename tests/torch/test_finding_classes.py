"""Each finding of ``specexact audit --torch`` is classified, in the text report and in
``--json`` (issue 22): structural, float-only (with the rows as the dtype's values) or
exact-only (a NOTE on a passing audit, exit code 0).

One kernel per float-only class of the issue fails only in its dtype and passes in
exact arithmetic; its correct twin passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.helpers import run_cli, run_cli_json

SOURCE = '''
import torch

TINY = torch.finfo(torch.float32).tiny

def textbook(p, q):
    # 0/0 when the float32 rows round to p <= q everywhere: multinomial raises on NaN
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)

def floored_guard(p, q):
    # the "cannot happen" guard floors an all-zero residual at tiny: a uniform draw
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    if bool(r.sum() == 0):
        r = torch.clamp(r, min=TINY)
    return torch.multinomial(r / r.sum(), 1)

def guarded(p, q):
    # the correct twin: an all-zero float residual means p and q agree; draw from p
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    if bool(r.sum() == 0):
        return torch.multinomial(p, 1)
    return torch.multinomial(r / r.sum(), 1)

def gumbel_argmax(p, q):
    # torch.rand returns 0: -log(-log(0)) = -inf on every token, argmax gives token 0
    return torch.argmax(torch.log(p) - torch.log(-torch.log(torch.rand(p.shape[0]))))

def clamped_gumbel_argmax(p, q):
    u = torch.rand(p.shape[0]).clamp(min=TINY)
    return torch.argmax(torch.log(p) - torch.log(-torch.log(u)))

def inclusive(p, q):
    # accepts on u <= p/q: at u = 0 a draft with p = 0 is accepted
    x = torch.multinomial(q, 1)
    if torch.rand(1) <= p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)

def floored_zero_tokens(p, q):
    # vLLM v0-style: the race's weights floored at tiny (here on the tokens p never
    # emits): exact arithmetic gives them 2^-126-scale mass, float32 never picks them
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    r = torch.where(p == 0, torch.full_like(r, TINY), r)
    e = -torch.log(torch.rand(p.shape[0]).clamp(min=TINY))
    return torch.argmax(r / e)

def naive(p, q):
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    return torch.multinomial(p, 1)
'''

SIZES = ("--vocab-sizes", "2..3", "--examples", "6")


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("classes") / "class_rules.py"
    path.write_text(SOURCE)
    return path


def _audit(module: Path, fn: str, *flags: str) -> tuple[int, str]:
    code, out, err = run_cli("audit", f"{module}:{fn}", "--torch", *SIZES, *flags)
    assert code in (0, 1), err
    return code, out


def _json(module: Path, fn: str, *flags: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, report = run_cli_json("audit", f"{module}:{fn}", "--torch", *SIZES, *flags)
    assert code in (0, 1), report
    return code, report


@pytest.mark.parametrize("fn", ["textbook", "floored_guard", "gumbel_argmax", "inclusive"])
@pytest.mark.slow
def test_each_float_only_class_fails_only_in_its_dtype(module: Path, fn: str) -> None:
    code, out = _audit(module, fn)
    assert code == 1, out
    assert "class: float-only (reachable only through the dtype's rounding)" in out
    assert "rows as the float32 run got them: p = [" in out
    code, report = _json(module, fn)
    assert code == 1 and report["verdict"] == "fail"
    found = report["counterexample"]
    assert found["class"] == "float-only"
    assert found["dtype_rows"]["dtype"] == "float32"
    assert all(isinstance(x, float) for x in found["dtype_rows"]["p"]["values"])
    # exact arithmetic (exact rationals, the ideal uniform) passes it
    assert _audit(module, fn, "--uniform", "continuous")[0] == 0


@pytest.mark.parametrize("fn", ["textbook", "floored_guard"])
@pytest.mark.slow
def test_the_zero_residual_rows_are_the_dtype_s_not_the_exact_ones(module: Path,
                                                                    fn: str) -> None:
    _, report = _json(module, fn)
    rows = report["counterexample"]["dtype_rows"]
    p = rows["p"]["values"]
    q = rows["q"]["values"]
    assert all(a <= b for a, b in zip(p, q, strict=True)) and p != q
    # dtype semantics off: the values are exact rationals, the crash is gone
    assert _audit(module, fn, "--semantics", "exact")[0] == 0


def test_the_float32_zero_of_a_gumbel_race_is_float_only(module: Path) -> None:
    assert _audit(module, "gumbel_argmax", "--semantics", "exact")[0] == 0
    _, report = _json(module, "gumbel_argmax")
    assert report["counterexample"]["support_violation"] == "1/16777216"


@pytest.mark.parametrize("fn", ["guarded", "clamped_gumbel_argmax"])
def test_the_correct_twins_pass_with_no_notes(module: Path, fn: str) -> None:
    code, report = _json(module, fn)
    assert code == 0 and report["verdict"] == "pass", report
    assert report["notes"] == []


@pytest.mark.slow
def test_an_exact_only_finding_is_a_note_not_the_failure(module: Path) -> None:
    # The floor's 2^-126-scale mass on p = 0 tokens in exact arithmetic (one-hot p, a
    # spread q): float32's race never picks them, so the search notes it and goes on.
    # It then finds what float32 does produce: with q = (~5.9e-39, ~1) the float32
    # residual of the p > 0 token is 0, so the floored p = 0 token wins the race.
    code, out = _audit(module, "floored_zero_tokens")
    assert "NOTE  exact-only" in out and "on tokens where p = 0" in out
    _, report = _json(module, "floored_zero_tokens")
    assert report["notes"] and report["notes"][0]["class"] == "exact-only"
    assert report["notes"][0]["support_violation"] != "0"
    assert "dtype_rows" in report["notes"][0]
    if report["verdict"] == "fail":
        assert report["counterexample"]["class"] != "exact-only"
        assert code == 1


def test_a_structural_bias_is_classified_structural(module: Path) -> None:
    code, out = _audit(module, "naive")
    assert code == 1 and "class: structural (shows in exact arithmetic and in the dtype)" \
        in out
    _, report = _json(module, "naive")
    assert report["counterexample"]["class"] == "structural"


def test_without_dtype_semantics_nothing_is_classified(module: Path) -> None:
    code, out = _audit(module, "naive", "--semantics", "exact")
    assert code == 1 and "class:" not in out
    _, report = _json(module, "naive", "--semantics", "exact")
    assert "class" not in report["counterexample"] and "notes" not in report
