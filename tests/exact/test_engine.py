"""The exact enumeration engine on the reference sheet's examples and edge cases."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from specexact import Budget, Distribution, output_distribution
from specexact.counterexamples.samplers import naive_resample as naive
from specexact.counterexamples.samplers import residual, textbook

P3 = ["1/5", "1/2", "3/10"]
Q3 = ["1/2", "3/10", "1/5"]


def textbook_ratio(p, q, rng):
    x = rng.categorical(q)
    if rng.random() < min(1, p[x] / q[x]):
        return x
    return rng.categorical(residual(p, q))


def labelled(p, q, rng):
    """(0, x) when the draft is accepted, (1, y) when y comes from the fallback."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return (0, x)
    return (1, rng.categorical(residual(p, q)))


def dist(*values):
    return Distribution.from_probabilities([F(v) for v in values])


class TestSeedExample:
    def test_textbook_returns_exactly_p(self):
        assert output_distribution(textbook, P3, Q3) == dist(*P3)

    def test_ratio_form_equals_product_form(self):
        assert output_distribution(textbook_ratio, P3, Q3) == output_distribution(
            textbook, P3, Q3)

    def test_accepted_mass_and_fallback(self):
        law = output_distribution(labelled, P3, Q3)
        accepted = {x: pr for (branch, x), pr in law.items() if branch == 0}
        rejected = {x: pr for (branch, x), pr in law.items() if branch == 1}
        assert accepted == {0: F(1, 5), 1: F(3, 10), 2: F(1, 5)}
        reject_mass = sum(rejected.values())
        assert reject_mass == F(3, 10)
        assert {x: pr / reject_mass for x, pr in rejected.items()} == {1: F(2, 3), 2: F(1, 3)}

    def test_naive_resample_is_biased_exactly(self):
        law = output_distribution(naive, P3, Q3)
        assert law == {0: F(13, 50), 1: F(9, 20), 2: F(29, 100)}
        assert law != dist(*P3)

    def test_same_top_token_low_acceptance(self):
        law = output_distribution(labelled, ["1/2", "3/10", "1/5"], ["9/10", "1/20", "1/20"])
        assert sum(pr for (branch, _), pr in law.items() if branch == 0) == F(3, 5)


class TestEdgeCases:
    def test_p_equals_q_never_falls_back(self):
        # With p = q the residual is all zeros; categorical would reject it, so
        # the fallback must never be reached.
        law = output_distribution(labelled, P3, P3)
        assert law == {(0, 0): F(1, 5), (0, 1): F(1, 2), (0, 2): F(3, 10)}

    def test_zeros_in_q_where_p_has_mass(self):
        p, q = ["1/4", "1/4", "1/2"], ["1/2", "1/2", "0"]
        assert output_distribution(textbook, p, q) == dist(*p)

    def test_disjoint_supports_is_all_fallback(self):
        p, q = ["1/2", "1/2", "0", "0"], ["0", "0", "1/3", "2/3"]
        law = output_distribution(labelled, p, q)
        assert law == {(1, 0): F(1, 2), (1, 1): F(1, 2)}

    def test_one_hot_p_and_q(self):
        assert output_distribution(textbook, [0, 1, 0], [1, 0, 0]) == {1: 1}
        assert output_distribution(textbook, [0, 1, 0], [0, 1, 0]) == {1: 1}

    def test_single_token_vocabulary(self):
        assert output_distribution(textbook, [1], [1]) == {0: 1}

    def test_naive_right_when_p_equals_q_but_wrong_otherwise(self):
        assert output_distribution(naive, P3, P3) == dist(*P3)
        # One-hot p hides the bug (resampling p can only give the right token).
        assert output_distribution(naive, ["0", "1"], ["1/2", "1/2"]) == {1: 1}
        assert output_distribution(naive, ["1/2", "1/2"], ["1", "0"]) == {0: F(3, 4),
                                                                          1: F(1, 4)}

    def test_float_inputs_are_judged_by_their_exact_value(self):
        law = output_distribution(textbook, [0.25, 0.75], [0.5, 0.5])
        assert law == {0: F(1, 4), 1: F(3, 4)}


class TestLazyUniform:
    def test_inverse_cdf_with_one_uniform_is_exact(self):
        def inverse_cdf(p, q, rng):
            u = rng.random()
            acc = 0
            for i, w in enumerate(p):
                acc += w
                if u < acc:
                    return i
            raise AssertionError("unreachable")

        p = ["1/7", "0", "2/7", "4/7"]
        assert output_distribution(inverse_cdf, p, p) == dist(*p)

    def test_reusing_one_uniform_for_test_and_fallback_is_biased(self):
        def reuse(p, q, rng):
            x = rng.categorical(q)
            u = rng.random()
            if u < p[x] / q[x]:
                return x
            r = residual(p, q)
            total = sum(r)
            acc = 0
            for i, w in enumerate(r):
                acc += w / total
                if u < acc:
                    return i
            return len(r) - 1

        # Rejected u lies in [p/q, 1), not [0, 1): the fallback is skewed to
        # the tail of the residual's CDF.
        assert output_distribution(reuse, P3, Q3) == {0: F(1, 5), 1: F(13, 30), 2: F(11, 30)}

    @pytest.mark.parametrize("form", [
        lambda u, p, q: u * q < p,
        lambda u, p, q: q * u < p,
        lambda u, p, q: p > u * q,
        lambda u, p, q: u < p / q,
        lambda u, p, q: p / q > u,
        lambda u, p, q: 1 - u > 1 - p / q,
        lambda u, p, q: -u > -p / q,
        lambda u, p, q: u / p < 1 / q,
        lambda u, p, q: u + 1 < p / q + 1,
        lambda u, p, q: not (u >= p / q),
        lambda u, p, q: not (u * q >= p),
    ])
    def test_equivalent_acceptance_forms(self, form):
        def rule(p, q, rng):
            x = rng.categorical(q)
            if form(rng.random(), p[x], q[x]):
                return x
            return rng.categorical(residual(p, q))

        assert output_distribution(rule, P3, Q3) == dist(*P3)

    def test_repeated_comparisons_narrow_the_interval(self):
        def two_thresholds(p, q, rng):
            u = rng.random()
            if u < F(1, 2):
                return 0 if u < F(1, 8) else 1
            return 2 if u < F(3, 4) else 3

        assert output_distribution(two_thresholds, [1], [1]) == {
            0: F(1, 8), 1: F(3, 8), 2: F(1, 4), 3: F(1, 4)}

    def test_comparing_with_floats_is_exact(self):
        def rule(p, q, rng):
            return 0 if rng.random() < 0.1 else 1

        assert output_distribution(rule, [1], [1])[0] == F(0.1)

    def test_two_independent_uniforms(self):
        def both(p, q, rng):
            return (rng.random() < F(1, 3), rng.random() < F(1, 2))

        law = output_distribution(lambda p, q, rng: tuple(int(b) for b in both(p, q, rng)),
                                  [1], [1])
        assert law == {(1, 1): F(1, 6), (1, 0): F(1, 6), (0, 1): F(1, 3), (0, 0): F(1, 3)}


class TestCategoricalAndBernoulli:
    def test_categorical_normalises_implicitly(self):
        assert output_distribution(lambda p, q, rng: rng.categorical([1, 3]), [1], [1]) == {
            0: F(1, 4), 1: F(3, 4)}

    def test_bernoulli(self):
        law = output_distribution(lambda p, q, rng: int(rng.bernoulli(F(2, 7))), [1], [1])
        assert law == {1: F(2, 7), 0: F(5, 7)}

    def test_returned_token_inside_tuple_is_folded(self):
        def pair(p, q, rng):
            x = rng.categorical(q)
            return (x, rng.categorical(p), x)

        law = output_distribution(pair, ["1/3", "2/3"], ["1/2", "1/2"])
        assert law == {(0, 0, 0): F(1, 6), (0, 1, 0): F(1, 3),
                       (1, 0, 1): F(1, 6), (1, 1, 1): F(1, 3)}

    def test_token_comparisons_split_candidates(self):
        def rule(p, q, rng):
            x = rng.categorical(p)
            if x == 0:
                return 10
            if x < 2:
                return 11
            return x  # still lazy over {2, 3}: folded without branching

        law = output_distribution(rule, ["1/10", "2/10", "3/10", "4/10"], [1, 0, 0, 0])
        assert law == {10: F(1, 10), 11: F(1, 5), 2: F(3, 10), 3: F(2, 5)}

    def test_lazy_fallback_keeps_enumeration_linear(self):
        # 2V executions suffice when the returned fallback token is not branched
        # on; eager branching would need about V^2.
        v = 40
        p = [F(1, v)] * v
        q = [F(2, v)] * (v // 2) + [F(0)] * (v // 2)
        law = output_distribution(textbook, p, q, budget=Budget(max_executions=2 * v + 1))
        assert law == dist(*p)

    def test_numpy_integer_results_are_tokens(self):
        np = pytest.importorskip("numpy")
        law = output_distribution(lambda p, q, rng: np.int64(int(rng.categorical(q))),
                                  ["1/2", "1/2"], ["1/2", "1/2"])
        assert law == {0: F(1, 2), 1: F(1, 2)}
