"""Quality: the default search finds every wrong catalogue rule and passes every lossless one.

The fast tests cover the hard families (bias only at p = q, only with zeros
in q, only from vocabulary 3, only in the joint law); the full sweep over the
catalogue is marked slow (``pytest -m slow tests/quality``).
"""

from __future__ import annotations

import math

import pytest

from specexact.counterexamples import Entry, catalogue, get
from specexact.properties import largest_tv, search_crossvocab, search_sampler, search_step
from specexact.properties.search import SearchResult


def search(entry: Entry) -> SearchResult:
    """The default search for a catalogue entry, with the options the entry declares."""
    if entry.kind == "sampler":
        return search_sampler(entry.rule, uniform_bits=entry.uniform_bits)
    if entry.kind == "cross-vocab":
        return search_crossvocab(entry.rule)
    return search_step(entry.rule, stateful=entry.stateful,
                       one_hot_target=entry.target_kind == "one-hot",
                       processors=entry.processors)


def test_naive_fallback_is_found_among_the_first_cases():
    result = search(get("naive-resample"))
    assert result.status == "fail" and result.cases <= 40


def test_bias_only_at_p_equal_q_is_found():
    entry = get("residual-normalised-eagerly")
    # Any p != q is fine: the residual is nonzero and normalising it is harmless.
    for p, q in [(("1/5", "1/2", "3/10"), ("1/2", "3/10", "1/5")), (("1/3", "2/3"), ("1", "0"))]:
        from specexact import check_sampler

        assert check_sampler(entry.rule, p, q).passed
    result = search(entry)
    assert result.status == "fail" and result.witness.p == result.witness.q


def test_bias_only_with_zeros_in_q_is_found():
    from specexact import check_sampler

    entry = get("fallback-over-proposed")
    assert check_sampler(entry.rule, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]).passed
    result = search(entry)
    assert result.status == "fail"
    assert any(b == 0 < a for a, b in zip(result.witness.p, result.witness.q, strict=True))


@pytest.mark.parametrize("name", ["argmax-residual", "shared-uniform-fallback",
                                  "draft-filtered-ratio-default"])
@pytest.mark.slow
def test_bias_only_from_vocabulary_three_is_found(name):
    entry = get(name)
    assert search_sampler(entry.rule, vocab_sizes=2, examples=40).status == "pass"
    result = search(entry)
    assert result.status == "fail" and len(result.witness.p) == 3


@pytest.mark.slow
def test_block_verification_bias_from_vocabulary_three_is_found():
    entry = get("block-no-ptau")
    assert search_step(entry.rule, vocab_sizes=2, examples=15).status == "pass"
    result = search(entry)
    assert result.status == "fail" and result.witness.spec.vocab_size == 3


@pytest.mark.slow
def test_bias_only_in_the_joint_law_is_found():
    entry = get("shared-uniform")
    assert search_step(entry.rule, horizon=1, examples=15).status == "pass"
    result = search(entry)
    assert result.status == "fail" and result.witness.horizon >= 2


@pytest.mark.parametrize("name", ["textbook", "one-hot-verification", "multiround-k2"])
@pytest.mark.slow
def test_lossless_samplers_pass(name):
    assert search(get(name)).status == "pass"


# ---- the full catalogue (slow) -----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("entry", [e for e in catalogue() if not e.lossless],
                         ids=lambda e: e.name)
def test_every_wrong_rule_is_found_with_a_small_witness(entry: Entry):
    result = search(entry)
    assert result.status == "fail", result
    if entry.kind == "sampler":
        w = result.witness
        assert len(w.p) <= len(entry.witness.p)
        assert math.lcm(*(x.denominator for x in (*w.p, *w.q))) <= 15
    else:
        assert result.witness.horizon <= 3


@pytest.mark.slow
@pytest.mark.parametrize("entry", [e for e in catalogue() if e.lossless],
                         ids=lambda e: e.name)
def test_every_lossless_rule_passes(entry: Entry):
    result = search(entry)
    assert result.status == "pass", result


@pytest.mark.slow
@pytest.mark.parametrize("entry", [e for e in catalogue() if e.lossy_by_design],
                         ids=lambda e: e.name)
def test_lossy_by_design_max_tv_is_reproduced(entry: Entry):
    # The settings the catalogue figures were computed with.
    tv, witness, _ = largest_tv(entry.rule, examples=1000)
    assert tv == entry.max_tv and witness is not None
