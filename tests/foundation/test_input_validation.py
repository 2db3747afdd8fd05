"""Input validation: what is not a probability vector, an exact number or a valid option
gets a clear error naming the argument and what would be valid, never a verdict."""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

from specexact import (
    Budget,
    InvalidArgument,
    InvalidDistribution,
    check_sampler,
    output_distribution,
    to_fraction,
)
from specexact.counterexamples.samplers import textbook
from specexact.pipelines import Temperature, TopK

# -- regressions: inputs that are not probability vectors ----------------------------------


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


# -- every validation rule ----------------------------------------------------------------


@pytest.mark.parametrize(("p", "q", "fragment"), [
    ([], [], "p is empty"),
    (["1/2", "1/2"], ["1"], "p has 2 entries and q has 1"),
    (["1/2", "1/3"], ["1/2", "1/2"], "p sums to 5/6"),
    (["1/2", "1/2"], ["3/2", "-1/2"], "q[1]=-1/2 is negative"),
    ([math.nan, 1.0], ["1/2", "1/2"], "p[0]=nan is not finite"),
    ([math.inf, 0], ["1/2", "1/2"], "p[0]=inf is not finite"),
    (["1/2", "abc"], ["1/2", "1/2"], "p[1]='abc' is not a number"),
    ([True, 0], [1, 0], "p[0]=True is a bool"),
    ([0.1, 0.2, 0.7], [0.5, 0.25, 0.25], "not exactly 1"),
    ("01", [1], "must be a sequence"),
    ([None, 1], [0, 1], "p[0]=None"),
])
def test_invalid_distributions_are_named(p, q, fragment):
    with pytest.raises(InvalidDistribution, match=fragment.replace("[", r"\[").replace(
            "]", r"\]")) as info:
        output_distribution(textbook, p, q)
    assert isinstance(info.value, ValueError)


def test_check_sampler_validates_too():
    with pytest.raises(InvalidDistribution, match="q sums to"):
        check_sampler(textbook, ["1/2", "1/2"], ["1/2", "1/4"])


def test_to_fraction_is_exact_for_floats():
    assert to_fraction(0.1) == F(3602879701896397, 36028797018963968)
    assert to_fraction("0.3") == F(3, 10)
    with pytest.raises(InvalidArgument, match="not an exact number"):
        to_fraction(object())


def test_invalid_budget():
    with pytest.raises(InvalidArgument, match="max_choices=0 must be a positive integer"):
        Budget(max_choices=0)
