"""The catalogue: its contract, its size, and every stored witness re-verified exactly."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from specexact import check_crossvocab_step, check_sampler, check_step, counterexamples
from specexact.counterexamples import Entry, catalogue, get

ENTRIES = catalogue()
WITH_WITNESS = [e for e in ENTRIES if e.witness is not None]


def test_catalogue_holds_what_the_issue_asks_for():
    wrong = [e for e in ENTRIES if not e.lossless and not e.lossy_by_design]
    lossless = [e for e in ENTRIES if e.lossless]
    lossy = [e for e in ENTRIES if e.lossy_by_design]
    assert len(wrong) >= 20 and len(lossless) >= 8 and len(lossy) >= 3
    assert {e.kind for e in wrong} == {"sampler", "step", "cross-vocab", "batch"}
    names = {e.name for e in ENTRIES}
    assert len(names) == len(ENTRIES), "names must be unique"
    # The wasteful-but-lossless variants of section 2.
    assert {"chain-gamma1-no-bonus", "one-hot-verification", "exact-match-verification"} \
        <= {e.name for e in lossless}
    # Tree and multi-draft failures.
    assert {"multiround-original-p", "rrs-plain-q", "specinfer-original-p",
            "block-no-ptau", "spectr-rho-one"} <= {e.name for e in wrong}


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_entry_contract(entry: Entry):
    assert entry.kind in ("sampler", "step", "cross-vocab", "batch")
    assert callable(entry.rule)
    assert isinstance(entry.summary, str) and len(entry.summary) > 40
    assert entry.source is None or isinstance(entry.source, str)
    # A batch entry's witness is the audit's own (the smallest failing case of the panel).
    assert (entry.witness is None) == (entry.lossless or entry.kind == "batch")
    if entry.lossy_by_design:
        assert not entry.lossless and isinstance(entry.max_tv, Fraction) and entry.max_tv > 0
    else:
        assert entry.max_tv is None
    if entry.kind == "sampler" and entry.witness is not None:
        assert hasattr(entry.witness, "p") and hasattr(entry.witness, "q")
    if entry.kind == "step" and entry.witness is not None:
        assert {"target", "draft", "horizon"} <= set(dir(entry.witness))


@pytest.mark.parametrize("entry", WITH_WITNESS, ids=lambda e: e.name)
def test_every_witness_refutes_its_rule(entry: Entry):
    w = entry.witness
    if entry.kind == "sampler":
        verdict = check_sampler(entry.rule, w.p, w.q, uniform_bits=entry.uniform_bits)
        assert not verdict.passed
        if entry.lossy_by_design:
            assert verdict.tv == entry.max_tv
        # Minimal: at most three tokens, small denominators.
        assert len(w.p) <= 3
        assert math.lcm(*(x.denominator for x in (*w.p, *w.q))) <= 15
    elif entry.kind == "cross-vocab":
        verdict = check_crossvocab_step(entry.rule, w.target, w.draft, w.horizon)
        assert not verdict.passed
        assert w.horizon <= 3
    else:
        verdict = check_step(entry.rule, w.target, w.draft, w.horizon,
                             processors=entry.processors)
        assert not verdict.passed
        assert w.horizon <= 3


def test_sampler_witnesses_are_not_failures_of_the_textbook_rule():
    # The witness shows the rule's bug, not a quirk of the inputs.
    textbook = get("textbook").rule
    for entry in WITH_WITNESS:
        if entry.kind == "sampler":
            w = entry.witness
            uniform_bits = entry.uniform_bits
            if uniform_bits is None:
                assert check_sampler(textbook, w.p, w.q).passed, entry.name


def test_inclusive_uniform_needs_the_grid():
    entry = get("inclusive-uniform")
    w = entry.witness
    assert check_sampler(entry.rule, w.p, w.q).passed
    verdict = check_sampler(entry.rule, w.p, w.q, uniform_bits=entry.uniform_bits)
    assert verdict.comparison is not None and verdict.comparison.support_violation > 0
    textbook = check_sampler(get("textbook").rule, w.p, w.q, uniform_bits=entry.uniform_bits)
    assert textbook.passed


def test_get_finds_entries_and_suggests_near_misses():
    assert get("naive-resample").kind == "sampler"
    assert get("shared-uniform").kind == "step"
    with pytest.raises(KeyError, match="naive-resample"):
        get("naive-resampel")


def test_lossless_first_and_lossy_by_design_last():
    order = [(not e.lossless, e.lossy_by_design) for e in ENTRIES]
    assert order == sorted(order)


def test_catalogue_exports():
    assert counterexamples.catalogue is catalogue
