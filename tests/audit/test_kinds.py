"""The audit layer: the uniform as one value, each kind one record, one policy."""

from __future__ import annotations

import pytest

from specexact import InvalidArgument, Uniform
from specexact.audit import (
    CROSS_VOCAB,
    FLOAT,
    KINDS,
    SAMPLER,
    STEP,
    AuditOptions,
    Kind,
    audit,
    get_kind,
    kind_of,
    register_kind,
    selectable_kinds,
)
from specexact.counterexamples.samplers import textbook
from specexact.uniform import CONTINUOUS, DEFAULT, FLOAT32


def test_the_uniform_is_one_value_with_its_own_words():
    assert Uniform.grid(24) == FLOAT32 and Uniform.continuous() == CONTINUOUS
    assert DEFAULT.rechecks == (24, 53) and DEFAULT.without_rechecks() == CONTINUOUS
    assert repr(Uniform.rechecked_on((8,))) == "Uniform.rechecked_on((8,))"
    assert "k/2^8 (0 included)" in Uniform.rechecked_on((8,)).recheck_note()
    assert CONTINUOUS.recheck_note() == ""
    with pytest.raises(InvalidArgument, match="bits"):
        Uniform(0)
    with pytest.raises(InvalidArgument, match="rechecks"):
        Uniform(None, [24])  # type: ignore[arg-type]


@pytest.mark.parametrize(("kind", "bits", "expected"), [
    (SAMPLER, 8, Uniform.grid(8)),          # the law judged on the grid
    (FLOAT, 8, Uniform.grid(8)),
    (CROSS_VOCAB, 8, Uniform.grid(8)),
    (STEP, 8, Uniform.rechecked_on((8,))),  # a step has no rounding tolerance
])
def test_what_a_k_bit_uniform_means_is_each_kinds_own(kind, bits, expected):
    options = AuditOptions(kind="sampler" if kind is FLOAT else kind.name,
                           floats="float64" if kind is FLOAT else None, uniform_bits=bits)
    assert kind_of(options) is kind
    assert kind.uniform(options) == expected


def test_the_defaults_and_the_older_spellings():
    assert SAMPLER.uniform(AuditOptions()) == DEFAULT
    assert SAMPLER.uniform(AuditOptions(grid_check=False)) == CONTINUOUS
    assert FLOAT.uniform(AuditOptions(floats="float32")) == CONTINUOUS
    assert SAMPLER.uniform(AuditOptions(uniform=FLOAT32)) == FLOAT32


@pytest.mark.parametrize(("options", "message"), [
    ({"horizon": 3}, "horizon applies to step and cross-vocab, not to kind='sampler'"),
    ({"kind": "cross-vocab", "stateful": True}, "stateful applies to step"),
    ({"kind": "step", "floats": "float64"}, "floats applies to float audits"),
    ({"processors": None, "kind": "bogus"}, "is not a kind"),
])
def test_an_option_of_another_kind_is_refused_when_the_options_are_made(options, message):
    with pytest.raises(InvalidArgument, match=message):
        AuditOptions(**options)


def test_every_kind_the_command_names_is_a_record():
    assert set(selectable_kinds()) == {"sampler", "step", "cross-vocab"}
    assert all(get_kind(name).selectable for name in selectable_kinds())
    assert not FLOAT.selectable and set(KINDS) >= {"sampler", "step", "cross-vocab", "float"}


def test_one_policy_judges_a_registered_kind():
    def drafted(fn):
        def sampler(p, q, rng):
            return fn(p, q, rng.categorical(q), rng)
        return sampler

    verifier = register_kind(Kind(
        name="test-verifier", reported="verifier", arguments=("p", "q", "x", "rng"),
        default_sizes=(2, 3), options=frozenset(), bits_mean=Uniform.grid,
        default_uniform=DEFAULT,
        search=lambda fn, o, u, variants, common: SAMPLER.search(
            drafted(fn), o, u, tuple((drafted(v), b) for v, b in variants), common),
        judge=lambda fn, w, o, u: SAMPLER.judge(drafted(fn), w, o, u),  # type: ignore[misc]
        witness_lines=SAMPLER.witness_lines, witness_json=SAMPLER.witness_json))
    assert register_kind(verifier) is verifier  # registering the same record again is fine

    def resample_from_p(p, q, x, rng):  # wrong: resamples from p after a rejection
        return x if rng.random() * q[x] < p[x] else rng.categorical(p)

    result = audit(resample_from_p, AuditOptions(kind="test-verifier", examples=5))
    assert not result.passed and result.counterexample is not None
    assert result.counterexample.tv == pytest.approx(0.25)
    assert audit(lambda p, q, x, rng: textbook(p, q, rng),
                 AuditOptions(kind="test-verifier", examples=5)).passed
    with pytest.raises(InvalidArgument, match="registered already"):
        register_kind(Kind(**{**verifier.__dict__}))
