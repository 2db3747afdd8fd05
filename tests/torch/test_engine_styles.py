"""Torch samplers written in engine styles the project had not seen: NaN in unused lanes,
thirds in float32, chains on the float32 grid, non-token return values.

Regressions from a review: each test names the bug it guards.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from specexact import assert_torch_preserves_target, check_torch_sampler  # noqa: E402


def textbook(p, q, generator):
    x = torch.multinomial(q, 1, generator=generator)
    if torch.rand(1, generator=generator) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1, generator=generator)


def normalised_race(p, q, generator=None):
    """vLLM style: the residual is normalised before an exponential race and picked with
    torch.where; at p = q it is 0/0 = NaN, a value computed and never used."""
    target_probs, draft_probs = p.unsqueeze(0), q.unsqueeze(0)
    draft_ids = torch.multinomial(draft_probs, 1, generator=generator)
    tp = target_probs.gather(-1, draft_ids)
    dp = draft_probs.gather(-1, draft_ids)
    accepted = torch.rand(1, 1, generator=generator) < tp / dp
    recovered_probs = torch.clamp(target_probs - draft_probs, min=0)
    recovered_probs = recovered_probs / recovered_probs.sum(dim=-1, keepdim=True)
    e = torch.empty_like(recovered_probs).exponential_(generator=generator)
    recovered = recovered_probs.div_(e).argmax(dim=-1, keepdim=True)
    return torch.where(accepted, draft_ids, recovered).view(-1)


def test_thirds_do_not_make_a_correct_rule_look_biased():
    # float32 cannot hold 1/3: rounding the inputs first left q summing to 1 - 1.5e-8.
    verdict = check_torch_sampler(textbook, ["0", "1/2", "1/2", "0"],
                                  ["0", "1/3", "1/3", "1/3"])
    assert verdict.passed, verdict.format()


def test_the_pytest_helper_passes_the_readme_example_on_its_default_sizes():
    assert_torch_preserves_target(textbook)


def test_an_unused_nan_mixed_with_exponential_noise_is_not_a_finding():
    verdict = check_torch_sampler(normalised_race, ["1/2", "1/2"], ["1/2", "1/2"])
    assert verdict.passed, verdict.format()
    assert check_torch_sampler(normalised_race, ["1/5", "1/2", "3/10"],
                               ["1/2", "3/10", "1/5"]).passed


def test_the_normalised_race_still_fails_when_it_is_wrong():
    def recover_from_p(p, q, generator=None):
        x = torch.multinomial(q, 1, generator=generator)
        accepted = torch.rand(1, generator=generator) < p[x] / q[x]
        e = torch.empty_like(p).exponential_(generator=generator)
        y = (p / p.sum() / e).argmax().view(1)
        return torch.where(accepted, x, y)

    assert not check_torch_sampler(recover_from_p, ["1/5", "1/2", "3/10"],
                                   ["1/2", "3/10", "1/5"]).passed


def strict_chain(ids, draft_probs, target_probs, *, inclusive=False):
    k = ids.shape[1]
    out = torch.full((1, k + 1), -1, dtype=torch.long)
    for i in range(k):
        x = ids[0, i]
        u = torch.rand(1)
        ratio = target_probs[0, i, x] / draft_probs[0, i, x]
        if (u <= ratio) if inclusive else (u < ratio):
            out[0, i] = x
        else:
            r = torch.clamp(target_probs[0, i] - draft_probs[0, i], min=0)
            out[0, i] = torch.multinomial(r, 1)[0]
            return out
    out[0, k] = torch.multinomial(target_probs[0, k], 1)[0]
    return out


def inclusive_chain(ids, draft_probs, target_probs):
    return strict_chain(ids, draft_probs, target_probs, inclusive=True)


def test_the_pytest_helper_judges_chains_on_the_float32_grid_by_default():
    assert_torch_preserves_target(strict_chain, signature="chain", vocab_sizes=(2, 2),
                                  horizon=2, examples=2)
    with pytest.raises(AssertionError, match=r"actual \{0: Fraction\(16777215, 16777216\)"):
        assert_torch_preserves_target(inclusive_chain, signature="chain", vocab_sizes=(2, 2),
                                      horizon=2, examples=2)
    # the ideal uniform hides it, as documented
    assert_torch_preserves_target(inclusive_chain, signature="chain", vocab_sizes=(2, 2),
                                  horizon=2, examples=2, uniform="continuous")


# -- third review: what the report says about code that returns the wrong thing ---------


def test_a_float_tensor_returned_reads_as_one_description():
    from fractions import Fraction

    from specexact.torch import torch_output_distribution

    def returns_float(p, q, generator):
        return torch.rand(1, generator=generator)

    law = torch_output_distribution(returns_float, (Fraction(1, 2), Fraction(1, 2)),
                                    (Fraction(1, 2), Fraction(1, 2)))
    (outcome,) = law
    assert repr(outcome) == "<not a token: a one-element torch.float32 tensor>"
