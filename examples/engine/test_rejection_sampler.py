"""The histogram test of the sampler, in the idiom of vLLM's
``test_rejection_sampling_approximates_target_distribution``: the L2 distance of the
output histogram to the target (V = 10) must shrink with the number of samples much
faster than its distance to 100 random reference distributions."""

import torch
import torch.nn.functional as F
from rejection_sampler import rejection_sample


def estimate_rejection_sampling_pdf(draft_probs, target_probs, k, vocab_size, num_samples):
    """The histogram of the emitted (non-bonus) tokens over num_samples rows."""
    draft_probs = draft_probs.reshape(1, 1, vocab_size).repeat(num_samples, k, 1)
    target = target_probs.reshape(1, 1, vocab_size).repeat(num_samples, k + 1, 1)
    draft_token_ids = torch.multinomial(draft_probs[:, 0, :], num_samples=k,
                                        replacement=True).reshape(num_samples, k)
    output_token_ids = rejection_sample(draft_token_ids, draft_probs, target)
    # The bonus column is left out, as vLLM's test does.
    output_token_ids = output_token_ids[:, :-1].flatten()
    hist = torch.histogram(output_token_ids.to(dtype=torch.float), bins=vocab_size,
                           range=(0, vocab_size), density=True)
    return hist.hist


def test_rejection_sampling_approximates_target_distribution():
    torch.manual_seed(0)
    vocab_size = 10
    k = 2
    num_reference_probs = 100
    draft_probs = F.softmax(torch.rand(vocab_size, dtype=torch.float32), dim=-1)
    target_probs = F.softmax(torch.rand(vocab_size, dtype=torch.float32), dim=-1)
    reference_probs = F.softmax(torch.rand(num_reference_probs, vocab_size), dim=-1)

    distance_wrt_reference = []
    distance_wrt_target = []
    for num_samples in [10, 100, 1_000, 10_000, 100_000]:
        rej_sample_probs = estimate_rejection_sampling_pdf(
            draft_probs, target_probs, k, vocab_size, num_samples)
        distance_wrt_reference.append(
            torch.dist(reference_probs, rej_sample_probs).item() / num_reference_probs)
        distance_wrt_target.append(torch.dist(target_probs, rej_sample_probs).item())

    relative_change_in_distance_wrt_target = distance_wrt_target[0] / distance_wrt_target[-1]
    relative_change_in_distance_wrt_reference = (
        distance_wrt_reference[0] / distance_wrt_reference[-1])
    expected_improvement_multiplier = 20
    assert (relative_change_in_distance_wrt_target
            > relative_change_in_distance_wrt_reference * expected_improvement_multiplier)


if __name__ == "__main__":
    test_rejection_sampling_approximates_target_distribution()
