"""The planted witness-class rule of issue 25: a torch kernel that accepts drafts with
q < 0.1 outright has a structural witness (q well under 0.1) and one that exists only
because the float32 rounding of the constant 0.1 is compared with an exact 1/10 (TV of
about 2^-28).  The default audit must report the structural one, at every seed."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.helpers import run_cli_json

LOW_Q = '''
import torch

def lowq(p, q):
    x = torch.multinomial(q, 1)
    if q[x] < 0.1:  # a draft the target "cannot refuse": accepted outright
        return x
    if torch.rand(1) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    if r.sum() == 0:
        r = p
    return torch.multinomial(r / r.sum(), 1)
'''


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_the_structural_witness_is_preferred_at_every_seed(tmp_path: Path, seed: int) -> None:
    (tmp_path / "lowq.py").write_text(LOW_Q)
    code, report = run_cli_json("audit", f"{tmp_path / 'lowq.py'}:lowq", "--torch",
                                "--seed", str(seed))
    assert code == 1 and report["verdict"] == "fail"
    found = report["counterexample"]
    assert found["class"] == "structural"
    assert Fraction(found["tv"]) > Fraction(1, 1000)  # not the rounding of 0.1
    assert min(Fraction(v) for v in found["q"]) < Fraction(1, 10)
