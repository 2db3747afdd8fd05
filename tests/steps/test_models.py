"""Toy language models: exact tables, recorders, and the stateful cache."""

from __future__ import annotations

from fractions import Fraction as F
from typing import Any

import pytest

from specexact import (
    CachedModel,
    ContextFreeModel,
    InvalidArgument,
    InvalidDistribution,
    RaisingModel,
    RandomModel,
    RecordingModel,
    TableModel,
    decode_distribution,
    random_model_pair,
)
from specexact.steps.models import MODEL_KINDS, format_prefix


def test_context_free_model_ignores_the_prefix() -> None:
    m = ContextFreeModel(["1/3", "2/3"])
    assert m(()) == m((1, 0, 1)) == (F(1, 3), F(2, 3))
    with pytest.raises(InvalidDistribution):
        ContextFreeModel(["1/3", "1/3"])


def test_table_model_lookup_and_missing_prefix() -> None:
    m = TableModel({(0,): ["1", "0"]}, default=["1/2", "1/2"])
    assert m((0,)) == (1, 0) and m((1,)) == (F(1, 2), F(1, 2))
    strict = TableModel({(): ["1", "0"]})
    with pytest.raises(KeyError, match=r"\(1,\)"):
        strict((1,))
    with pytest.raises(InvalidDistribution, match="different lengths"):
        TableModel({(): ["1", "0"]}, default=["1"])


def test_random_model_is_deterministic_normalised_and_context_dependent() -> None:
    a, b = RandomModel(4, seed=3), RandomModel(4, seed=3)
    rows = [a(s) for s in [(), (0,), (1,), (0, 1), (2, 2)]]
    assert rows == [b(s) for s in [(), (0,), (1,), (0, 1), (2, 2)]]
    assert all(sum(r) == 1 and len(r) == 4 and min(r) > 0 for r in rows)
    assert len(set(rows)) > 1
    assert all(x.denominator <= 16 for r in rows for x in r)
    hot = RandomModel(3, seed=1, one_hot=True)
    assert all(sorted(hot(s)) == [0, 0, 1] for s in [(), (0,), (2, 1)])


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_model_pairs_have_their_kind(kind: str) -> None:
    target, draft = random_model_pair(3, 5, kind=kind)
    prefixes = [(), (0,), (1,), (2, 0)]
    for s in prefixes:
        p, q = target(s), draft(s)
        assert sum(p) == 1 and sum(q) == 1 and len(p) == len(q) == 3
        if kind == "equal":
            assert p == q
        if kind == "disjoint":
            assert all(a == 0 or b == 0 for a, b in zip(p, q, strict=True))
        if kind == "one-hot":
            assert sorted(p) == [0, 0, 1] and sorted(q) == [0, 0, 1]
        if kind == "context-free":
            assert p == target(())
    if kind == "zeros":
        found = [s for s in [(), (0,), (1,), (2,), (0, 0), (1, 2)]
                 if any(a > 0 and b == 0 for a, b in zip(target(s), draft(s), strict=True))]
        assert found
    with pytest.raises(InvalidArgument, match="kind"):
        random_model_pair(3, kind="bogus")


def test_recording_model_records_validates_and_copies() -> None:
    rec = RecordingModel(ContextFreeModel(["1/4", "3/4"]), name="target")
    row = rec((1, 0))
    row[0] = F(1)  # editing the handed list must not change the model
    assert rec((1, 0)) == [F(1, 4), F(3, 4)]
    assert set(rec.asked) == {(1, 0)}
    bad = RecordingModel(lambda s: ["1/2", "1/3"], name="draft")
    with pytest.raises(InvalidDistribution, match=r"draft's row at prefix \(\)"):
        bad(())
    assert bad.error is not None
    grows = RecordingModel(lambda s: ["1"] * 1 if not s else ["1/2", "1/2"])
    grows(())
    with pytest.raises(InvalidDistribution, match="has 2 entries"):
        grows((0,))


def test_raising_model_names_the_prefix() -> None:
    m = RaisingModel(ContextFreeModel(["1/2", "1/2"]), lambda s: 1 in s, "token 1 seen")
    assert m((0, 0)) == (F(1, 2), F(1, 2))
    with pytest.raises(LookupError, match=r"\(0, 1\).*token 1 seen"):
        m((0, 1))


def test_cached_model_reads_its_own_cache() -> None:
    table = TableModel({(0,): ["1", "0"], (0, 1): ["0", "1"]}, default=["1/2", "1/2"])
    m = CachedModel(table)
    assert m.cache == () and m.next_distribution() == [F(1, 2), F(1, 2)]
    m.append(0)
    assert m.next_distribution() == [1, 0]
    m.extend([1])
    assert m.cache == (0, 1) and m.next_distribution() == [0, 1]
    m.rollback(1)
    assert m.cache == (0,)
    m.truncate(0)
    assert m.cache == () and len(m) == 0
    with pytest.raises(IndexError):
        m.truncate(3)
    m.reset((1, 1))
    assert m.cache == (1, 1)
    assert m((0,)) == [1, 0]  # the stateless view ignores the cache
    with pytest.raises(IndexError, match=r"rollback\(3\) on a cache of 2 tokens"):
        m.rollback(3)  # named as called, not as the truncate it becomes
    clone = m.with_model(ContextFreeModel(["1", "0"]))
    assert clone.cache == () and type(clone) is CachedModel


def test_deferred_rows_fix_lazy_tokens_only_when_read() -> None:
    seen: list[tuple[int, ...]] = []

    def model(prefix: tuple[int, ...]) -> tuple[Any, ...]:
        seen.append(prefix)
        return (F(1, 2), F(1, 2))

    def step(target: Any, draft: Any, prefix: Any, rng: Any) -> Any:
        x = rng.categorical(target(prefix))
        later = target((*prefix, x))  # never read: must not branch on x
        assert len(later) == 2
        return (x,)

    law = decode_distribution(step, model, model, 1)
    assert law == {(0,): F(1, 2), (1,): F(1, 2)}
    assert all(len(s) == 0 for s in seen)


def test_format_prefix() -> None:
    assert format_prefix(()) == "" and format_prefix((0, 12)) == "0,12"


def test_a_deferred_list_is_looked_up_once_on_first_use_and_behaves_as_a_list():
    from specexact.steps import DeferredList

    loads = []

    class Counted(DeferredList[int]):
        __slots__ = ("known",)

        def __init__(self, known: int | None) -> None:
            self._items = None
            self.known = known

        def _load(self) -> list[int]:
            loads.append(1)
            return [1, 2, 3]

        def _known_length(self) -> int | None:
            return self.known

    row = Counted(3)
    assert len(row) == 3 and not loads  # the length without a lookup
    assert row[0] == 1 and list(row) == [1, 2, 3] and len(loads) == 1
    row[0] = 7
    row.insert(0, 0)
    del row[1]
    row.append(4)
    assert row.copy() == [0, 2, 3, 4] and row + [5] == [0, 2, 3, 4, 5]  # noqa: RUF005
    assert [9] + row == [9, 0, 2, 3, 4]  # noqa: RUF005 (the operators are under test)
    assert repr(row) == "[0, 2, 3, 4]" and len(loads) == 1
    unknown = Counted(None)
    assert len(unknown) == 3 and len(loads) == 2  # no known length: looked up
    with pytest.raises(TypeError):
        hash(unknown)
