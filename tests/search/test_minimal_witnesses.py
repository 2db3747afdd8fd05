"""Issue 13: witnesses minimal in (vocabulary size, largest denominator), said when proven."""

from __future__ import annotations

from fractions import Fraction

from specexact import check_sampler
from specexact.counterexamples import get
from specexact.properties import search_sampler
from specexact.properties.minimal import farey, minimise_pair, rows_with_denominators


def test_farey_and_rows_are_complete():
    assert farey(3) == [Fraction(x) for x in ("0", "1/3", "1/2", "2/3", "1")]
    rows = rows_with_denominators(3, 2)
    assert rows is not None and len(rows) == 6  # three one-hot rows, three halves
    assert all(sum(r) == 1 for r in rows)
    assert rows_with_denominators(4, 12, limit=10) is None


def test_greedy_witness_is_replaced_by_the_minimal_one():
    rule = get("naive-resample").rule

    def fails(pair):
        return not check_sampler(rule, *pair).passed

    greedy = ((Fraction(1, 3), Fraction(2, 3)), (Fraction(0), Fraction(1)))
    assert fails(greedy)
    pair, minimality = minimise_pair(greedy, fails, low=2)
    assert pair == ((Fraction(1, 2), Fraction(1, 2)), (Fraction(0), Fraction(1)))
    assert minimality is not None and minimality.proven
    assert "proven minimal" in str(minimality)


def test_a_witness_above_the_smallest_size_is_minimal_in_its_denominator_only():
    entry = get("argmax-residual")  # wrong only from vocabulary 3
    result = search_sampler(entry.rule)
    assert result.status == "fail" and len(result.witness.p) == 3
    minimality = result.minimality
    assert minimality is not None and not minimality.proven
    assert "sizes 2..2 with denominators up to" in minimality.text
    # Nothing of size 3 with a smaller largest denominator fails: checked here again.
    d = max(x.denominator for x in (*result.witness.p, *result.witness.q))
    rows = rows_with_denominators(3, d - 1) or []
    assert all(check_sampler(entry.rule, p, q).passed for p in rows for q in rows)


def test_a_witness_too_large_to_enumerate_says_so():
    def fails(pair):
        return True

    big = ((Fraction(1, 97), Fraction(96, 97)), (Fraction(1), Fraction(0)))
    assert minimise_pair(big, fails, low=2) == (big, None)
    floats = ((Fraction(0.1), Fraction(0.9)), (Fraction(1), Fraction(0)))
    assert minimise_pair(floats, fails, low=2) == (floats, None)  # rows not summing to 1
