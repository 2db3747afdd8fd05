"""The search drives Hypothesis through its public API only: seed, settings, databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import InMemoryExampleDatabase

from specexact.counterexamples import samplers
from specexact.properties import search_sampler
from specexact.properties.runner import KeyedDatabase

ROOT = Path(__file__).resolve().parents[2]


def needle(p, q, rng):
    """Wrong only when p(0) = 3/7 exactly: edge cases miss it, so Hypothesis must find it."""
    if p[0] * 7 == 3:
        return 0
    return samplers.textbook(p, q, rng)


SEARCH = {"seed": 1, "vocab_sizes": (2, 3)}


def test_no_private_hypothesis_attribute_is_set() -> None:
    for folder in ("properties", "verifier"):
        paths = list((ROOT / folder).rglob("*.py"))
        assert paths, ROOT / folder
        for path in paths:
            assert "_hypothesis_internal" not in path.read_text(), path


@pytest.mark.slow
def test_failures_are_stored_under_the_rule_s_own_key() -> None:
    db = InMemoryExampleDatabase()
    first = search_sampler(needle, **SEARCH, settings=settings(database=db, max_examples=2000))
    assert first.status == "fail"
    keys = list(db.data)
    assert keys, "the failure was not stored"
    assert all(k.startswith(f"{needle.__module__}.needle|".encode()) for k in keys)
    # Another rule sharing the database does not replay this rule's failure.
    again = search_sampler(samplers.textbook, seed=3, vocab_sizes=(2, 4), examples=20,
                           settings=settings(database=db, max_examples=20))
    assert again.status == "pass"


def test_keyed_database_is_a_prefixed_view() -> None:
    inner = InMemoryExampleDatabase()
    view = KeyedDatabase(inner, b"r")
    view.save(b"a", b"1")
    view.save(b"b", b"2")
    view.move(b"b", b"a", b"2")
    assert sorted(view.fetch(b"a")) == [b"1", b"2"] and list(view.fetch(b"b")) == []
    view.delete(b"a", b"1")
    assert list(inner.fetch(b"r.a")) == [b"2"]
