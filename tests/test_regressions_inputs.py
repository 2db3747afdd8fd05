"""Regressions: inputs that are not probability vectors get a clear error, never a verdict."""

from __future__ import annotations

import sys

import pytest

from specexact import InvalidArgument, InvalidDistribution, output_distribution
from specexact.counterexamples.samplers import textbook
from specexact.pipelines import Temperature, TopK


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        # A dict iterates over its keys: {1/2: 0, 1/2: 0} read as keys "sums to 1".
        ({"1/2": 0.0, "1/3": 0.0, "1/6": 0.0}, "dict"),
        ({"1/2", "1/3", "1/6"}, "set"),
        ((x for x in ["1/2", "1/3", "1/6"]), "generator"),
    ],
)
def test_non_sequences_are_rejected_by_name(bad, kind):
    with pytest.raises(InvalidDistribution, match=f"p must be a sequence.*got {kind}"):
        output_distribution(textbook, bad, ["1/3", "1/3", "1/3"])


def test_a_dict_error_says_how_to_pass_it():
    with pytest.raises(InvalidDistribution, match=r"p\.get\(i, 0\) for i in range\(V\)"):
        output_distribution(textbook, {0: "1/2", 1: "1/2"}, ["1/2", "1/2"])


def test_numpy_vectors_are_still_sequences():
    np = pytest.importorskip("numpy")
    law = output_distribution(textbook, np.array([0.5, 0.5]), ["1/2", "1/2"])
    assert dict(law) == {0: 0.5, 1: 0.5}


@pytest.mark.parametrize("make", [Temperature, TopK])
@pytest.mark.parametrize("value", [True, 0, 1.0, "2"])
def test_pipeline_integers_refuse_bools_floats_and_strings(make, value):
    with pytest.raises(InvalidArgument, match=r"must be an integer >= 1"):
        make(value)


def test_prove_on_a_step_without_horizon_says_how_to_prove_it(capsys):
    # Before issue 14 a step could not be proved at all; now it is read from the
    # signature (or --kind step) and needs only --horizon, which the message names.
    from specexact.frontends.cli import main

    code = main(["prove", "specexact.counterexamples.chain_steps:chain", "--vocab-size", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert "is a decoding step" in err
    assert ("specexact prove specexact.counterexamples.chain_steps:chain --kind step "
            "--vocab-size 2 --horizon 2") in err


@pytest.mark.parametrize("target", ["specexact.counterexamples.samplers:naive_resample",
                                    "specexact.counterexamples.samplers:textbook"])
def test_jobs_never_change_the_report(target, capsys):
    from specexact.frontends.cli import main

    reports = []
    for jobs in ("1", "3"):
        code = main(["audit", target, "--json", "--examples", "20", "--jobs", jobs])
        reports.append((code, capsys.readouterr().out))
    assert reports[0] == reports[1]


def test_tiny_support_masses_print_compactly_and_stay_exact_in_json(capsys):
    import json
    from fractions import Fraction

    from specexact.frontends.cli import main
    from specexact.tables import exact_text

    assert exact_text(Fraction(1, 2**126)) == "2^-126 ~ 1.18e-38"
    assert exact_text(Fraction(3, 2**126)) == "3*2^-126 ~ 3.53e-38"
    assert exact_text(Fraction(1, 2**24)) == "1/16777216"  # short ones stay whole
    assert exact_text(Fraction(1, 3**60)) == "~2.36e-29"

    def floor(p, q, rng):  # a residual floor at float32's smallest normal, as an engine has it
        x = rng.categorical(q)
        if rng.random() * q[x] < p[x]:
            return x
        tiny = Fraction(1, 2**126)
        return rng.categorical([max(a - b, tiny) for a, b in zip(p, q, strict=True)])

    import types
    module = types.ModuleType("tiny_floor")
    module.floor = floor
    sys.modules["tiny_floor"] = module
    try:
        assert main(["audit", "tiny_floor:floor", "--examples", "0"]) == 1
        text = capsys.readouterr().out
        # the mass is 1/(2^126 + 1) after normalisation: shown by its value
        assert "mass ~1.18e-38 on tokens where p = 0" in text
        assert "85070591730234615865843651857942052865" not in text.split("TV(actual")[0]
        assert main(["audit", "tiny_floor:floor", "--examples", "0", "--json"]) == 1
        data = json.loads(capsys.readouterr().out)
        assert "/" in data["counterexample"]["support_violation"]
    finally:
        del sys.modules["tiny_floor"]


def test_a_bare_exception_shows_its_type_and_no_empty_columns(capsys):
    import types

    from specexact import SamplerRaised
    from specexact.frontends.cli import main

    def bare(p, q, rng):
        x = rng.categorical(q)
        if x == 1:
            raise RuntimeError()
        return x

    with pytest.raises(SamplerRaised) as info:
        output_distribution(bare, ["1/2", "1/2"], ["1/2", "1/2"])
    assert "raised RuntimeError (no message)" in str(info.value)
    assert "token #1 == 1: True" in str(info.value)  # the choices that led there

    module = types.ModuleType("bare_rule")
    module.bare = bare
    sys.modules["bare_rule"] = module
    try:
        assert main(["audit", "bare_rule:bare", "--examples", "0"]) == 1
        text = capsys.readouterr().out
    finally:
        del sys.modules["bare_rule"]
    assert "RuntimeError (no message)" in text
    assert "RuntimeError: \n" not in text
    assert "(no output law: the code crashed on this input)" in text
    assert "actual - expected" not in text
