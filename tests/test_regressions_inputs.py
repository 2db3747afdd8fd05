"""Regressions: inputs that are not probability vectors get a clear error, never a verdict."""

from __future__ import annotations

import pytest

from counterexamples.samplers import textbook
from verifier import InvalidArgument, InvalidDistribution, output_distribution
from verifier.pipelines import Temperature, TopK


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


def test_prove_on_a_step_is_a_usage_error(capsys):
    from verifier.doors.cli import main

    code = main(["prove", "counterexamples.chain_steps:chain", "--vocab-size", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert "is a decoding step" in err
    assert "specexact audit counterexamples.chain_steps:chain" in err


@pytest.mark.parametrize("target", ["counterexamples.samplers:naive_resample",
                                    "counterexamples.samplers:textbook"])
def test_jobs_never_change_the_report(target, capsys):
    from verifier.doors.cli import main

    reports = []
    for jobs in ("1", "3"):
        code = main(["audit", target, "--json", "--examples", "20", "--jobs", jobs])
        reports.append((code, capsys.readouterr().out))
    assert reports[0] == reports[1]
