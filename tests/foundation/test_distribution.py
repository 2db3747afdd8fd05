"""Distribution, comparisons and the witness table."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from specexact import Distribution, InvalidToken, compare_laws, total_variation
from specexact.counterexamples.samplers import naive_resample
from specexact.exact.verdict import check_sampler


def test_distribution_is_an_immutable_sorted_mapping():
    d = Distribution({2: "1/2", 0: F(1, 4), 1: 0.25, 5: 0})
    assert list(d) == [0, 1, 2]
    assert 5 not in d  # zero-probability outcomes are absent
    assert d[2] == F(1, 2)
    assert d.prob(7) == 0
    assert d.total == 1
    with pytest.raises(TypeError):
        d[0] = F(1)  # type: ignore[index]


def test_distribution_equality_with_sequences_and_mappings():
    d = Distribution.from_probabilities(["1/5", "1/2", "3/10"])
    assert d == [F(1, 5), F(1, 2), F(3, 10)]
    assert d == ("1/5", "1/2", "3/10")
    assert d == {0: F(1, 5), 1: F(1, 2), 2: F(3, 10)}
    assert d == [F(1, 5), F(1, 2), F(3, 10), 0]
    assert d != [F(1, 2), F(1, 5), F(3, 10)]
    assert hash(d) == hash(Distribution({0: F(1, 5), 1: F(1, 2), 2: F(3, 10)}))


def test_difference_and_tv():
    a = Distribution({0: F(13, 50), 1: F(9, 20), 2: F(29, 100)})
    b = Distribution.from_probabilities(["1/5", "1/2", "3/10"])
    assert a.difference(b) == {0: F(3, 50), 1: F(-1, 20), 2: F(-1, 100)}
    assert total_variation(a, b) == F(3, 50)
    assert total_variation(b, b) == 0


def test_marginal_of_a_joint_law():
    joint = Distribution({(0, 0): F(1, 9), (0, 1): F(2, 9), (1, 1): F(2, 3)})
    assert joint.marginal(0) == {0: F(1, 3), 1: F(2, 3)}
    assert joint.marginal(1) == {0: F(1, 9), 1: F(8, 9)}


def test_invalid_tokens_never_merge_with_ints():
    d = Distribution({1: F(1, 2), InvalidToken(1.0): F(1, 4), InvalidToken(True): F(1, 4)})
    assert len(d) == 3
    assert repr(InvalidToken(1.0)) == "<not a token: 1.0 (float)>"


def test_compare_laws_flags():
    c = compare_laws({0: F(1, 2), 1: F(1, 2)}, {0: F(1, 2), 2: F(1, 4), 3: F(1, 4)}, 3)
    assert c.support_violation == F(1, 4)  # token 2 is in the vocabulary, p(2) = 0
    assert c.invalid_mass == F(1, 4)  # token 3 is outside
    assert c.tv == F(1, 2)
    assert not c.equal


def test_verdict_text_shows_exact_witness_table():
    verdict = check_sampler(naive_resample, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"])
    text = str(verdict)
    assert text.startswith("FAIL: biased, TV = 3/50")
    assert "13/50" in text and "+3/50" in text and "-1/100" in text
    assert verdict.tv == F(3, 50)
    assert verdict.expected == [F(1, 5), F(1, 2), F(3, 10)]
