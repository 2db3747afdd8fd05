"""Real engine code, unmodified, audited with defaults (issue 22).

The functions are compiled from git mirrors of their repositories at a fixed
commit (see upstream_load.py; no upstream source is kept here) and reach
specexact through the thin adapters of upstream_engines.py.  Verdicts, as the
audit gives them with defaults:

* feifeibear speculative_sampling / _v2: FAIL, crash: ``sample`` raises a bare
  RuntimeError whenever it draws token 0 (sampling/utils.py:53); with token 0
  never drawn the rule is exact (continuous uniform) and the inclusive test
  ``r > p/q`` is a 2^-24 grid deviation;
* romsto speculative_generate: FAIL, support 2^-24 (the inclusive test on
  torch.rand's float32 grid accepts a p = 0 draft when u = 0); exact otherwise;
  with max_gen_len = 2 it crashes (ZeroDivisionError: its acceptance rate is 0 / 0);
* EAGLE evaluate_posterior: FAIL, support 2^-53 (``random.random() <= p``);
* Medusa nucleus posterior: FAIL, structural (a rejected candidate is followed by
  a fresh draw from the same row: p(c) + (1 - p(c)) p(c) for the candidate c);
* Medusa typical posterior: FAIL, structural (the entropy ``p * log(p + 1e-5)`` and
  its threshold are decided exactly: the top draft clearing it is always emitted); its
  ``fast=False`` branch crashes with a TypeError (utils.py:504 passes 6 arguments to
  a 5-argument function).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
import upstream_engines as engines

from specexact.errors import SamplerRaised
from specexact.steps.models import TableModel
from specexact.torch import check_torch_sampler
from specexact.torch.decode import check_torch_decode

F = Fraction

P, Q = ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]


def _no_zero_pair() -> tuple[TableModel, TableModel]:
    """Context-dependent models over 3 tokens that never draw token 0."""
    target = TableModel({(1,): [0, F(1, 4), F(3, 4)], (1, 1): [0, F(2, 3), F(1, 3)],
                         (1, 2): [0, F(1, 2), F(1, 2)]}, default=[0, F(1, 3), F(2, 3)])
    draft = TableModel({(1,): [0, F(3, 4), F(1, 4)]}, default=[0, F(1, 2), F(1, 2)])
    return target, draft


def test_feifeibear_crashes_on_token_zero_and_names_the_line() -> None:
    cached, v2 = engines.feifeibear()
    target = TableModel({}, default=[F(1, 2), F(1, 2)])
    for loop in (cached, v2):
        with pytest.raises(SamplerRaised,
                           match=r"RuntimeError \(no message\) \(at feifeibear/"
                                 r"LLMSpeculativeSampling@59a209d:sampling/utils\.py:53\)"):
            check_torch_decode(loop, target, target, max_new_tokens=2, prompt=(1,))


def test_feifeibear_is_exact_when_token_zero_is_never_drawn() -> None:
    cached, v2 = engines.feifeibear()
    target, draft = _no_zero_pair()
    for loop in (cached, v2):
        assert check_torch_decode(loop, target, draft, max_new_tokens=2, prompt=(1,)).equal
        grid = check_torch_decode(loop, target, draft, max_new_tokens=2, prompt=(1,),
                                  uniform="dtype")
        assert not grid.equal and grid.tv < F(1, 2 ** 24)


def test_romsto_accepts_a_p_zero_draft_on_the_float32_grid() -> None:
    generate = engines.romsto()
    target, draft = _no_zero_pair()
    assert check_torch_decode(generate, target, draft, max_new_tokens=3, prompt=(1,)).equal
    # the audit's minimal witness: the draft always proposes token 0, which p never emits
    target = TableModel({}, default=[0, 1])
    draft = TableModel({}, default=[1, 0])
    grid = check_torch_decode(generate, target, draft, max_new_tokens=3, prompt=(0,),
                              uniform="dtype")
    assert grid.tv == F(1, 2 ** 24)


def test_romsto_divides_by_zero_when_no_draft_fits() -> None:
    # max_gen_len = 2: the target's first token, then no room for a draft, so the
    # acceptance rate it returns is 0 / 0 drafts
    target, draft = _no_zero_pair()
    with pytest.raises(SamplerRaised, match=r"ZeroDivisionError.*speculative_decoding\.py:189"):
        check_torch_decode(engines.romsto(), target, draft, max_new_tokens=2, prompt=(1,))


def test_eagle_accepts_a_p_zero_candidate_when_random_returns_zero() -> None:
    verdict = check_torch_sampler(engines.eagle(), ["0", "1/2", "1/2"], ["1/2", "1/4", "1/4"])
    assert not verdict.passed
    assert [f.kind for f in verdict.findings] == ["support"]
    law = verdict.grid_law
    assert law is not None and dict(law.items())[0] == F(1, 2 ** 53)
    assert check_torch_sampler(engines.eagle(), P, Q).passed


def test_medusa_nucleus_is_structurally_biased() -> None:
    verdict = check_torch_sampler(engines.medusa()["nucleus"], P, Q)
    assert not verdict.passed and verdict.findings[0].kind == "structural"
    law = verdict.exact_law
    assert law is not None and dict(law.items())[2] == F(1, 4) + F(3, 4) * F(1, 4)


def test_medusa_typical_is_structurally_biased_and_its_slow_branch_crashes() -> None:
    # the entropy p * log(p + 1e-5) and exp(-entropy) * alpha are decided exactly: the
    # draft's top token (2, p = 1/4) clears min(0.09, 0.3 e^-H) and is always emitted
    verdict = check_torch_sampler(engines.medusa()["typical"], P, Q)
    assert not verdict.passed and verdict.finding_class == "structural"
    assert dict(verdict.exact_law.items()) == {2: 1}  # type: ignore[union-attr]
    verdict = check_torch_sampler(engines.medusa()["typical_slow"], P, Q)
    assert verdict.findings[0].kind == "crash"
    assert "medusa/model/utils.py:504" in verdict.findings[0].message


# -- real torch confirms each FAIL that sampling can show ---------------------------


def _five_sigma(hits: int, n: int, p: float) -> bool:
    """Whether ``hits`` of ``n`` draws lie outside the 5-sigma band of probability p."""
    return abs(hits / n - p) > 5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.slow
def test_real_torch_confirms_medusa_nucleus_bias() -> None:
    nucleus = engines.medusa()["nucleus"]
    p, q = torch.tensor([0.5, 0.25, 0.25]), torch.tensor([0.25, 0.25, 0.5])
    torch.manual_seed(0)
    n = 20_000
    hits = sum(int(nucleus(p, q)) == 2 for _ in range(n))
    assert _five_sigma(hits, n, 0.25)
    assert not _five_sigma(hits, n, 7 / 16)


@pytest.mark.slow
def test_real_torch_confirms_feifeibear_crash() -> None:
    _, v2 = engines.feifeibear()
    model = engines.RealLM([0.5, 0.5])
    torch.manual_seed(0)
    with pytest.raises(RuntimeError):
        for _ in range(100):  # token 0 is drawn with probability 1/2 per sample
            v2(torch.tensor([[1]]), model, model, 2)
