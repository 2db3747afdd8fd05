"""No verdict without evidence (issue 24): a PASS needs exact cases judged at every
vocabulary size asked for, and a statistical PASS needs the power the report states."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from specexact import Undecided, assert_preserves_target
from specexact.counterexamples.samplers import naive_resample, textbook
from specexact.frontends.cli.main import main
from specexact.properties import search_sampler

NUMPY_TEXTBOOK = '''
import numpy as np
def textbook(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() * q[x] < p[x]:
        return x
    r = np.maximum(p - q, 0)
    return rng.choice(len(p), p=r / r.sum())
'''


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_an_audit_that_judged_no_case_at_a_size_is_undecided_not_a_pass():
    # Before: "PASS ... no violation found in 0 exact cases", exit 0.
    code, out, err = run("audit", "specexact.counterexamples.samplers:naive_resample",
                         "--vocab-sizes", "6", "--examples", "0")
    assert code == 2, out + err
    assert not out.startswith("PASS")
    assert "no exact case was judged at vocabulary size 6" in err


def test_every_size_asked_for_needs_a_case():
    result = search_sampler(textbook, vocab_sizes=(2, 9), examples=0)
    assert result.status == "undecided"
    assert "vocabulary sizes 6..9" in str(result.error)
    # With cases at every size, the same audit passes.
    assert search_sampler(textbook, vocab_sizes=(6, 6), examples=5).status == "pass"


def test_the_python_api_and_the_plugin_say_undecided_too():
    with pytest.raises(Undecided, match="no exact case was judged"):
        assert_preserves_target(naive_resample, vocab_sizes=(6, 6), examples=0)


def test_a_failure_is_evidence_enough():
    result = search_sampler(naive_resample, vocab_sizes=(2, 9), examples=0)
    assert result.status == "fail"


def test_a_statistical_pass_without_power_is_undecided(tmp_path: Path):
    pytest.importorskip("numpy")
    (tmp_path / "np_rules.py").write_text(NUMPY_TEXTBOOK)
    target = f"{tmp_path / 'np_rules.py'}:textbook"
    code, out, _ = run("audit", target, "--statistical", "--samples", "10")
    assert code == 2
    assert out.startswith("UNDECIDED (statistical)")
    code, out, _ = run("audit", target, "--statistical", "--samples", "10", "--json")
    assert code == 2
    assert json.loads(out)["verdict"] == "undecided"
