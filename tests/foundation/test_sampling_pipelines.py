"""Exact sampling pipelines: temperature 1/m, top-k, top-p, min-p and their composition."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import given, settings

from specexact import InvalidArgument, InvalidDistribution
from specexact.pipelines import MinP, Pipeline, Temperature, TopK, TopP, sampling_pipeline
from specexact.properties import distributions, pipelines


def fs(*xs: str) -> tuple[F, ...]:
    return tuple(F(x) for x in xs)


def test_temperature_is_p_to_the_m_normalised():
    assert Temperature(2)(fs("1/2", "1/3", "1/6")) == fs("9/14", "4/14", "1/14")
    assert Temperature(1)(fs("1/2", "1/2")) == fs("1/2", "1/2")


def test_top_k_keeps_ties_at_the_boundary():
    # The 2nd largest value 1/4 is shared by tokens 1 and 2: both survive (HF, vLLM).
    assert TopK(2)(fs("1/2", "1/4", "1/4")) == fs("1/2", "1/4", "1/4")
    assert TopK(1)(fs("1/2", "1/4", "1/4")) == fs("1", "0", "0")
    assert TopK(2)(fs("1/2", "1/3", "1/6")) == fs("3/5", "2/5", "0")


def test_top_p_engine_rule_removes_tokens_whose_ascending_mass_is_at_most_1_minus_p():
    p = fs("1/2", "3/10", "1/5")
    # Ascending cumulative: 1/5, 1/2, 1. With top_p = 1/2, 1 - top_p = 1/2: the first
    # two cumulative sums are <= 1/2 (the boundary removes), only token 0 survives.
    assert TopP(F(1, 2))(p) == fs("1", "0", "0")
    assert TopP(F(4, 5))(p) == fs("5/8", "3/8", "0")
    assert TopP(F(1))(p) == p


def test_top_p_tie_rule_differs_between_engine_and_nucleus():
    half = fs("1/2", "1/2")
    assert TopP(F(1, 2), "engine")(half) == fs("0", "1")
    assert TopP(F(1, 2), "nucleus")(half) == fs("1", "0")


def test_top_p_nucleus_keeps_the_shortest_prefix_reaching_p():
    p = fs("1/2", "3/10", "1/5")
    assert TopP(F(1, 2), "nucleus")(p) == fs("1", "0", "0")
    assert TopP(F(3, 5), "nucleus")(p) == fs("5/8", "3/8", "0")


def test_min_p_keeps_tokens_above_a_fraction_of_the_max():
    assert MinP(F(1, 2))(fs("1/2", "1/4", "1/5", "1/20")) == fs("2/3", "1/3", "0", "0")


def test_order_matters_and_is_configurable():
    p = fs("1/2", "1/4", "1/4")
    tempered_first = sampling_pipeline(temperature_m=2, top_p=F(4, 5))
    filtered_first = sampling_pipeline(temperature_m=2, top_p=F(4, 5),
                                       order=("top_p", "temperature"))
    # Tempered (4, 1, 1)/6: ascending mass 1/6 <= 1 - 4/5 removes token 1 (lower id first).
    assert tempered_first(p) == fs("4/5", "0", "1/5")
    # On p itself the smallest ascending mass is 1/4 > 1/5: nothing is removed.
    assert filtered_first(p) == fs("2/3", "1/6", "1/6")
    assert str(tempered_first) == "temperature 1/2 -> top-p 4/5 (engine)"


def test_default_parameters_are_the_identity():
    p = fs("1/2", "3/10", "1/5")
    assert sampling_pipeline()(p) == p
    assert str(Pipeline()) == "identity"


@pytest.mark.parametrize("make", [
    lambda: Temperature(0), lambda: Temperature(F(1, 2)), lambda: TopK(0),
    lambda: TopP(F(0)), lambda: TopP(F(3, 2)), lambda: TopP(F(1, 2), "greedy"),
    lambda: MinP(F(2)), lambda: sampling_pipeline(order=("temperature", "top-k")),
    lambda: sampling_pipeline(top_k=2, order=("temperature",)),
])
def test_bad_parameters_are_rejected(make):
    with pytest.raises(InvalidArgument):
        make()


def test_a_pipeline_validates_its_input():
    with pytest.raises(InvalidDistribution):
        Pipeline((TopK(1),))(["1/2", "1/3"])


@settings(max_examples=60, deadline=None)
@given(distributions(vocab_sizes=(1, 5)), pipelines(vocab_size=5))
def test_every_pipeline_returns_a_distribution_keeping_the_most_likely_token(p, pipe):
    out = pipe(p)
    assert sum(out) == 1 and all(x >= 0 for x in out)
    assert any(out[i] > 0 for i in range(len(p)) if p[i] == max(p))
    # Filtering never creates mass where there was none.
    assert all(b == 0 for a, b in zip(p, out, strict=True) if a == 0)
