"""Strategies: exact distributions, p/q families, toy models, shrinking towards simple cases."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from specexact import InvalidArgument
from specexact.properties import (
    PAIR_FAMILIES,
    distributions,
    model_pairs,
    model_specs,
    pq_pairs,
    sampler_edge_cases,
    step_edge_cases,
    vocab_range,
)
from specexact.properties.step_strategies import ModelSpec
from specexact.steps.models import CachedModel, ContextFreeModel, TableModel

FAST = settings(max_examples=80, deadline=None)


def is_distribution(p):
    return all(type(x) is F and x >= 0 for x in p) and sum(p) == 1


@FAST
@given(distributions(vocab_sizes=(2, 5)))
def test_distributions_are_exact_and_sized(p):
    assert is_distribution(p) and 2 <= len(p) <= 5


@FAST
@given(distributions(vocab_sizes=3, allow_zeros=False))
def test_allow_zeros_false_gives_full_support(p):
    assert len(p) == 3 and all(x > 0 for x in p)


@pytest.mark.parametrize("family", PAIR_FAMILIES)
def test_each_family_has_its_defining_property(family):
    check = {
        "independent": lambda p, q: True,
        "equal": lambda p, q: p == q,
        "zeros-in-q": lambda p, q: any(b == 0 < a for a, b in zip(p, q, strict=True)),
        "disjoint": lambda p, q: all(a == 0 or b == 0 for a, b in zip(p, q, strict=True)),
        "nearly-equal": lambda p, q: p != q and sum(abs(a - b) for a, b in
                                                    zip(p, q, strict=True)) / 2 <= F(1, 2),
        "one-hot": lambda p, q: 1 in p or 1 in q,
        "masked": lambda p, q: [a > 0 for a in p] == [b > 0 for b in q] and 0 in p,
        "relations": lambda p, q: True,  # its patterns: test_relations_reach_rare_patterns
    }[family]

    @FAST
    @given(pq_pairs(vocab_sizes=(2, 4), families=[family]))
    def run(pair):
        p, q = pair
        assert is_distribution(p) and is_distribution(q) and len(p) == len(q)
        assert check(p, q)

    run()


def test_relations_reach_rare_patterns():
    """The patterns random rows almost never produce come up in the relations family."""
    seen = set()

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(pq_pairs(vocab_sizes=4, families=["relations"]))
    def run(pair):
        p, q = pair
        residual = [a - b for a, b in zip(p, q, strict=True) if a > b]
        if sum(b == 0 for b in q) == 1 and len(residual) == 3:
            seen.add("one zero in q, three residual entries")
        support_p = [a > 0 for a in p]
        if support_p == [b > 0 for b in q] and 2 <= sum(support_p) < 4 and p != q:
            seen.add("shared smaller support")
        if p != q and any(a == b > 0 for a, b in zip(p, q, strict=True)):
            seen.add("partial tie")

    run()
    assert seen == {"one zero in q, three residual entries", "shared smaller support",
                    "partial tie"}


def test_families_include_the_special_cases():
    seen = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(pq_pairs())
    def run(pair):
        p, q = pair
        if p == q:
            seen.add("equal")
        if any(b == 0 < a for a, b in zip(p, q, strict=True)):
            seen.add("zeros")
        if all(a == 0 or b == 0 for a, b in zip(p, q, strict=True)):
            seen.add("disjoint")
        if 1 in p:
            seen.add("one-hot")
        if len(p) == 3:
            seen.add("vocab 3")

    run()
    assert seen == {"equal", "zeros", "disjoint", "one-hot", "vocab 3"}


def test_shrinking_goes_to_short_vocabularies_and_small_denominators():
    # Any pair with p != q at vocabulary 3 or more shrinks to vocabulary 3 and small
    # denominators (Hypothesis alone; the search's exact shrinker then goes further).
    for _ in range(3):
        p, q = find(pq_pairs(vocab_sizes=(2, 6)), lambda pq: len(pq[0]) >= 3 and pq[0] != pq[1],
                    settings=settings(database=None))
        assert len(p) == 3
        assert max(x.denominator for x in (*p, *q)) <= 6
    p = find(distributions(vocab_sizes=(2, 6)), lambda p: max(p) < 1,
             settings=settings(database=None))
    assert p == (F(1, 2), F(1, 2))


def test_vocabulary_one_only_allows_the_trivial_pair():
    assert find(pq_pairs(vocab_sizes=1), lambda pq: True) == ((F(1),), (F(1),))


@pytest.mark.parametrize("bad", [0, (3, 2), (0, 2), "2", (1, 2, 3), True])
def test_bad_vocabulary_sizes_are_rejected(bad):
    with pytest.raises(InvalidArgument):
        vocab_range(bad)


def test_bad_strategy_options_are_rejected():
    with pytest.raises(InvalidArgument):
        distributions(max_weight=0)
    with pytest.raises(InvalidArgument):
        pq_pairs(families=["equal", "nonsense"])
    with pytest.raises(InvalidArgument):
        model_specs(kinds=[])


def test_edge_cases_cover_the_sheet_and_vocabulary_three():
    cases = sampler_edge_cases(2, 4)
    assert cases[0] == ((F(1, 5), F(1, 2), F(3, 10)), (F(1, 2), F(3, 10), F(1, 5)))
    assert any(p == q for p, q in cases)
    assert any(b == 0 < a for p, q in cases for a, b in zip(p, q, strict=True))
    assert any(all(a == 0 or b == 0 for a, b in zip(p, q, strict=True)) for p, q in cases)
    assert {len(p) for p, _ in cases} == {2, 3, 4}
    assert len(set(cases)) == len(cases)
    assert all(len(p) == 2 for p, _ in sampler_edge_cases(2, 2))


@FAST
@given(model_specs(vocab_sizes=(2, 3)), st.lists(st.integers(0, 2), max_size=4))
def test_model_specs_build_exact_models_defined_everywhere(spec, prefix):
    target, draft = spec.models()
    prefix = tuple(t % spec.vocab_size for t in prefix)
    for model in (target, draft):
        row = model(prefix)
        assert len(row) == spec.vocab_size and sum(row) == 1
    for over, a, b in spec.overrides:
        assert target(over) == a and draft(over) == b


def test_context_free_specs_build_context_free_models_and_stateful_wraps():
    spec = ModelSpec(((F(1, 2), F(1, 2)), (F(1), F(0))))
    target, draft = spec.models()
    assert isinstance(target, ContextFreeModel) and isinstance(draft, ContextFreeModel)
    t2, _ = spec.models(stateful=True)
    assert isinstance(t2, CachedModel)
    table = ModelSpec(spec.default, (((0,), (F(1), F(0)), (F(0), F(1))),))
    assert isinstance(table.models()[0], TableModel)
    assert "after (0,)" in table.describe()


@FAST
@given(model_pairs(vocab_sizes=2, one_hot_target=True), st.lists(st.integers(0, 1), max_size=3))
def test_one_hot_targets_have_one_hot_rows(pair, prefix):
    target, _ = pair
    assert sorted(target(tuple(prefix))) == [0, 1]


def test_step_edge_cases_include_context_dependent_pairs():
    specs = step_edge_cases(2, 3)
    assert any(s.context_free for s in specs)
    assert any(not s.context_free for s in specs)
    assert all(s.vocab_size <= 3 for s in step_edge_cases(2, 6))


def test_model_specs_shrink_to_context_free_pairs():
    spec = find(model_specs(vocab_sizes=(2, 3)), lambda s: s.default[0] != s.default[1],
                settings=settings(database=None))
    assert spec.context_free and spec.vocab_size == 2
