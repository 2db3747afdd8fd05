"""No false FAIL (issue 25): every witness of the catalogue's samplers and steps, found
with the default audit, is re-checked by a second exact path written without specexact's
random source or decode (tests/quality/replay.py): its law must be the one the audit
reported, and not the target's.  A lossless rule's law on other cases must be the
target's, so the replay is not just agreeing."""

from __future__ import annotations

from fractions import Fraction

import pytest

from specexact.audit import AuditOptions, audit
from specexact.counterexamples import catalogue
from specexact.crossvocab import table_model, target_text_law
from tests.quality.replay import (
    Rows,
    Unsupported,
    replay_crossvocab_law,
    replay_law,
    replay_step_law,
    spec_models,
    target_sequence_law,
)

SAMPLERS = [e for e in catalogue() if e.kind == "sampler"]
WRONG = [e for e in SAMPLERS if not e.lossless]
LOSSLESS = [e for e in SAMPLERS if e.lossless]
#: In the default run (the default suite keeps to 4 CPU min); the slow run replays all.
FAST = ("naive-resample", "residual-floor", "inclusive-uniform", "zero-uniform-accepts-all",
        "shared-uniform-fallback")


def _replayed(entry, p, q):
    """The replay's laws on the continuous uniform and on the float32 and float64 grids
    (a float-only finding is one the continuous uniform cannot show)."""
    bits = (entry.uniform_bits,) if entry.uniform_bits is not None else (None, 24, 53)
    try:
        return {b: replay_law(entry.rule, p, q, b) for b in bits}
    except Unsupported as exc:
        pytest.skip(f"the replay does not model {entry.name}: {exc}")


def _found(entry, options):
    """The default audit's counterexample, or None when it is a crash (a crash is its
    own evidence: the traceback)."""
    found = audit(entry.rule, options, name=entry.name).counterexample
    assert found is not None, f"{entry.name}: the audit found no witness"
    return None if found.verdict.crash is not None else found


def _witness_matches(entry):
    found = _found(entry, AuditOptions(kind="sampler", uniform_bits=entry.uniform_bits,
                                       vocab_sizes=entry.vocab_sizes))
    if found is None:
        return
    verdict = found.verdict
    laws = _replayed(entry, verdict.p, verdict.q)
    expected = dict(enumerate(verdict.p))
    expected = {k: v for k, v in expected.items() if v}
    actual = dict(verdict.actual)
    assert any(law == actual for law in laws.values()), (entry.name, actual, laws)
    assert actual != expected


@pytest.mark.parametrize("entry", [e for e in WRONG if e.name in FAST], ids=lambda e: e.name)
def test_a_few_sampler_witnesses_are_confirmed_by_the_replay(entry):
    _witness_matches(entry)


@pytest.mark.slow
@pytest.mark.parametrize("entry", WRONG, ids=lambda e: e.name)
def test_every_sampler_witness_is_confirmed_by_the_replay(entry):
    _witness_matches(entry)


@pytest.mark.parametrize("entry", LOSSLESS, ids=lambda e: e.name)
def test_the_replay_gives_p_for_lossless_rules(entry):
    from fractions import Fraction as F

    for p, q in [((F(1, 3), F(2, 3)), (F(3, 4), F(1, 4))),
                 ((F(1, 2), F(1, 4), F(1, 4)), (F(0), F(1, 2), F(1, 2))),
                 ((F(1), F(0), F(0)), (F(0), F(1, 3), F(2, 3)))]:
        laws = _replayed(entry, p, q)
        assert laws[entry.uniform_bits] == {i: v for i, v in enumerate(p) if v}, entry.name


# ---- steps -------------------------------------------------------------------------

STEPS = [e for e in catalogue() if e.kind == "step" and not e.stateful]
WRONG_STEPS = [e for e in STEPS if not e.lossless]
LOSSLESS_STEPS = [e for e in STEPS if e.lossless]
FAST_STEPS = ("greedy-verify-sampled", "penalties-ignored")


def _step_options(entry):
    return AuditOptions(kind="step", uniform_bits=entry.uniform_bits,
                        one_hot_target=entry.target_kind == "one-hot",
                        processors=entry.processors, vocab_sizes=entry.vocab_sizes)


def _nonzero(law):
    return {k: v for k, v in dict(law).items() if v}


def _step_witness_matches(entry):
    found = _found(entry, _step_options(entry))
    if found is None:
        return
    verdict = found.verdict
    target, draft = spec_models(found.witness.spec)
    try:
        law = replay_step_law(entry.rule, target, draft, found.witness.horizon,
                              entry.uniform_bits, entry.processors)
    except Unsupported as exc:
        pytest.skip(f"the replay does not model {entry.name}: {exc}")
    assert law == _nonzero(verdict.comparison.actual), entry.name
    assert law != _nonzero(verdict.comparison.expected), entry.name


@pytest.mark.parametrize("entry", [e for e in WRONG_STEPS if e.name in FAST_STEPS],
                         ids=lambda e: e.name)
def test_a_few_step_witnesses_are_confirmed_by_the_replay(entry):
    _step_witness_matches(entry)


@pytest.mark.slow
@pytest.mark.parametrize("entry", WRONG_STEPS, ids=lambda e: e.name)
def test_every_step_witness_is_confirmed_by_the_replay(entry):
    _step_witness_matches(entry)


#: In the default run (the default suite keeps to 4 CPU min); the slow run replays all.
FAST_LOSSLESS_STEPS = ("chain-gamma2", "specinfer-multiround", "block-verification")


@pytest.mark.parametrize("entry", [
    e if e.name in FAST_LOSSLESS_STEPS else pytest.param(e, marks=pytest.mark.slow)
    for e in LOSSLESS_STEPS if e.processors is None and e.target_kind == "any"],
    ids=lambda e: e.name)
def test_the_replay_gives_the_target_law_for_lossless_steps(entry):
    third, half = Fraction(1, 3), Fraction(1, 2)
    p, q = (third, half, Fraction(1, 6)), (half, Fraction(0), half)
    target = Rows(p, {(0,): (half, half, Fraction(0))})
    draft = Rows(q, {(0,): (Fraction(0), third, 2 * third)})
    law = replay_step_law(entry.rule, target, draft, 3, entry.uniform_bits)
    assert law == target_sequence_law(target, 3, 3), entry.name


# ---- cross-vocabulary steps --------------------------------------------------------

CROSS = [e for e in catalogue() if e.kind == "cross-vocab"]
WRONG_CROSS = [e for e in CROSS if not e.lossless]
#: Over 2 s to find with defaults: the slow run only.
SLOW_CROSS = {"slem-retokenized-target-context", "slem-compares-draft-ids",
              "slrs-canonical-draft-probability", "slrs-drops-partial-token"}


def _crossvocab_witness_matches(entry):
    found = _found(entry, AuditOptions(kind="cross-vocab", uniform_bits=entry.uniform_bits,
                                       vocab_sizes=entry.vocab_sizes))
    if found is None:
        return
    verdict = found.verdict
    witness = found.witness
    law = replay_crossvocab_law(entry.rule, witness.target, witness.draft, witness.horizon,
                                entry.uniform_bits)
    assert law == _nonzero(verdict.comparison.actual), entry.name
    assert law != _nonzero(verdict.comparison.expected), entry.name


@pytest.mark.parametrize("entry", [pytest.param(e, marks=pytest.mark.slow)
                                   if e.name in SLOW_CROSS else e for e in WRONG_CROSS],
                         ids=lambda e: e.name)
def test_every_crossvocab_witness_is_confirmed_by_the_replay(entry):
    _crossvocab_witness_matches(entry)


@pytest.mark.parametrize("entry", [e for e in CROSS if e.lossless], ids=lambda e: e.name)
def test_the_replay_gives_the_target_text_law_for_lossless_crossvocab_steps(entry):
    target = table_model(("a", "b", "ab"), {(0,): ("1/4", "1/4", "1/2")},
                         default=("1/2", "1/6", "1/3"))
    draft = table_model(("a", "b", "ba"), {(2,): ("1", "0", "0")},
                        default=("1/3", "1/3", "1/3"))
    law = replay_crossvocab_law(entry.rule, target, draft, 3, entry.uniform_bits)
    assert law == _nonzero(target_text_law(target, 3)), entry.name
