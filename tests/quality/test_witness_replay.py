"""No false FAIL (issue 25): every witness of the catalogue's samplers, found with the
default audit, is re-checked by a second exact path written without specexact's random
source (tests/quality/replay.py): its law must be the one the audit reported, and not p.
A lossless rule's law on the same cases must be p, so the replay is not just agreeing."""

from __future__ import annotations

import pytest

from specexact.audit import AuditOptions, audit
from specexact.counterexamples import catalogue
from tests.quality.replay import Unsupported, replay_law

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


def _witness_matches(entry):
    options = AuditOptions(kind="sampler", uniform_bits=entry.uniform_bits,
                           vocab_sizes=entry.vocab_sizes)
    found = audit(entry.rule, options, name=entry.name).counterexample
    assert found is not None, f"{entry.name}: the audit found no witness"
    verdict = found.verdict
    if verdict.crash is not None:
        return  # a crash is its own evidence (the traceback)
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
