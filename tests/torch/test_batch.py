"""The batch audit (--signature batch): each property decided exactly on the panel."""

from __future__ import annotations

from fractions import Fraction

import pytest

from specexact.counterexamples import batch_kernels as bk
from specexact.properties.batch_search import search_batch
from specexact.torch.batch import BatchKernel


def _statuses(fn, k):
    result = search_batch(BatchKernel(fn, k=k, faithful=False), vocab_sizes=(2, 2))
    if result.witness is None:  # undecided
        return result, {}
    report = result.witness.report
    return result, {name: report.status(name) for name in report.names}


@pytest.mark.slow
def test_vllm_idiom_passes_every_property() -> None:
    result, statuses = _statuses(bk.vllm_rejection, 2)
    assert result.status == "pass"
    assert set(statuses.values()) == {"pass"}


@pytest.mark.parametrize(("fn", "failed"), [
    (bk.shared_stream, "independence"),
    (bk.ignored_seeds, "seeds"),
    (bk.placeholder_accepted, "padding"),
])
@pytest.mark.slow
def test_each_bug_fails_its_property(fn, failed) -> None:
    result, statuses = _statuses(fn, 2 if fn is bk.placeholder_accepted else 1)
    assert result.status == "fail"
    assert statuses[failed] == "fail"


# ---- engine idioms, each next to its buggy twin ----------------------------------


@pytest.mark.parametrize("fn", [bk.hf_batched, bk.vllm_flat, bk.compacted_rows],
                         ids=lambda fn: fn.__name__)
@pytest.mark.slow
def test_engine_idioms_pass_every_property(fn) -> None:
    result, statuses = _statuses(fn, 2)
    assert result.status == "pass", result.covered
    assert set(statuses.values()) == {"pass"}


@pytest.mark.parametrize(("fn", "failed", "held"), [
    # rows cut to the batch's fewest matches: a row's law depends on its neighbour
    (bk.hf_batched_fewest_matches, "row law", "padding"),
    # uniforms read from the row index, not the token offset: a shared stream
    (bk.vllm_flat_row_offset, "independence", "row law"),
    # generators taken by the compacted row number: another request's generator
    (bk.compacted_generators, "seeds", "row law"),
], ids=lambda x: getattr(x, "__name__", x))
@pytest.mark.slow
def test_each_twin_fails_its_property(fn, failed, held) -> None:
    result, statuses = _statuses(fn, 2)
    assert result.status == "fail"
    assert statuses[failed] == "fail"
    assert statuses[held] == "pass"  # the finding is the property named, not any breakage


@pytest.mark.slow


def test_row_offset_twin_shares_a_stream_from_two_drafts() -> None:
    # With one draft per row the row index is the token offset (unless a padding-only row
    # comes first: then a seeded row reads a global uniform, which the coupled seeds run
    # cannot replay, so it says undecided, never pass).
    result, statuses = _statuses(bk.vllm_flat_row_offset, 1)
    assert result.status == "undecided" and statuses == {}
    result, statuses = _statuses(bk.vllm_flat_row_offset, 2)
    verdict = result.witness.verdict
    assert verdict.property == "independence" and verdict.run.k == 2
    assert statuses["seeds"] in ("fail", "undecided")


# ---- block verification: one uniform per request --------------------------------


@pytest.mark.slow
def test_shared_uniform_block_verification_fails_at_v2_with_its_tv() -> None:
    result, statuses = _statuses(bk.block_verification_shared_uniform, 2)
    assert result.status == "fail" and statuses["row law"] == "fail"
    verdict = result.witness.verdict
    assert verdict.run.k == 2 and verdict.case.vocab == 2
    assert verdict.tv == Fraction(2, 25)
    assert verdict.case.rows[0].label == "overconfident draft"
    # the correct block verification on the same panel
    result, statuses = _statuses(bk.block_verification, 2)
    assert result.status == "pass"


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [3, 4])
def test_block_verification_at_larger_gamma(gamma) -> None:
    assert _statuses(bk.block_verification, gamma)[0].status == "pass"
    if gamma == 3:
        result, _ = _statuses(bk.block_verification_shared_uniform, gamma)
        assert result.status == "fail" and result.witness.verdict.tv > 0


# ---- joint laws are enumerated once per batch -----------------------------------


@pytest.mark.slow
def test_shared_joint_laws_give_the_verdicts_of_case_by_case() -> None:
    from specexact.properties.batch_search import batch_cases
    from specexact.torch.batch_check import BatchRun, JointLaws, check_batch_case

    for fn in (bk.vllm_rejection, bk.shared_stream, bk.ignored_seeds):
        laws = JointLaws(fn)
        run = BatchRun(k=1)
        for case in batch_cases(1, 2):
            shared = check_batch_case(fn, case, run, laws)
            alone = check_batch_case(fn, case, run)
            assert (shared.passed, shared.reason, shared.tv) == \
                (alone.passed, alone.reason, alone.tv)
        assert 0 < laws.enumerated < laws.asked  # some batch was reused


# ---- batched chain and hf functions (--signature chain|hf --batched) ---------------


def _convention_statuses(fn, convention, k=1):
    kernel = BatchKernel(fn, k=k, faithful=False, convention=convention)
    result = search_batch(kernel, vocab_sizes=(2, 2))
    report = result.witness.report
    return result, {name: report.status(name) for name in report.names}


def test_a_batched_chain_function_without_generators_passes_what_applies() -> None:
    result, statuses = _convention_statuses(bk.chain_global, "chain")
    assert result.status == "pass", result.covered
    assert statuses == {"row law": "pass", "independence": "pass",
                        "padding": "not applicable", "batch invariance": "pass",
                        "seeds": "not applicable"}
    assert "padding not applicable (every row of the chain shape drafts k tokens)" \
        in result.covered


def test_a_batched_chain_function_sharing_uniforms_fails_independence() -> None:
    result, statuses = _convention_statuses(bk.chain_global_shared_row, "chain")
    assert result.status == "fail"
    assert statuses["independence"] == "fail"
    assert statuses["row law"] == "pass"


def test_a_chain_function_taking_generators_is_judged_on_seeds() -> None:
    def seeded_chain(draft_token_ids, draft_probs, target_probs, generators):
        return bk.vllm_rejection(draft_token_ids, draft_probs, target_probs, generators)

    _, statuses = _convention_statuses(seeded_chain, "chain")
    assert statuses["seeds"] == "pass"
    assert statuses["padding"] == "not applicable"


def test_a_batched_hf_function_is_read_by_its_n_matches() -> None:
    result, statuses = _convention_statuses(bk.hf_speculative_sampling_batched, "hf", k=2)
    assert result.status == "pass", result.covered
    assert statuses["seeds"] == "not applicable"


def test_an_hf_port_that_counts_the_whole_batch_fails() -> None:
    result, statuses = _convention_statuses(bk.hf_speculative_sampling_batch_sum, "hf", k=2)
    assert result.status == "fail"
    assert "n_matches[0] = 2, outside 0..1" in result.witness.verdict.reason
    assert statuses["batch invariance"] == "fail"


def test_transformers_batch_one_function_is_not_batch_safe() -> None:
    # transformers' own _speculative_sampling indexes q[:, arange(k), ids] and sums
    # n_matches over everything: right at B = 1, not a batched function.
    from tests.torch.test_steps import hf_speculative_sampling

    result, statuses = _convention_statuses(hf_speculative_sampling, "hf")
    assert result.status == "fail"
    assert statuses["batch invariance"] in ("fail", "undecided")


def test_an_unknown_convention_is_a_clear_error() -> None:
    from specexact.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="one of batch, chain, hf"):
        BatchKernel(bk.chain_global, convention="single")


# ---- a crash is one finding ----------------------------------------------------------


def test_a_kernel_that_raises_everywhere_fails_once_and_leaves_the_rest_undecided() -> None:
    def crashing(draft_token_ids, draft_probs, target_probs, generators):
        raise RuntimeError("kernel assertion")

    result, statuses = _statuses(crashing, 1)
    assert result.status == "fail"
    assert statuses["row law"] == "fail"
    assert {statuses[n] for n in ("independence", "padding", "batch invariance",
                                  "seeds")} == {"undecided"}
    report = result.witness.report
    assert "not judged: the kernel raised as reported for row law" \
        in str(report.undecided["seeds"])


def test_a_crash_on_some_batches_only_fails_where_it_is_raised() -> None:
    # raises only when the batch holds a seeded row: seeds fails (with the crash), and
    # so may row law's seeded pairs, but an unseeded independence case still passes
    def seeded_crash(draft_token_ids, draft_probs, target_probs, generators):
        if any(g is not None for g in generators):
            raise RuntimeError("seeded rows are not supported")
        return bk.vllm_rejection(draft_token_ids, draft_probs, target_probs, generators)

    result, statuses = _statuses(seeded_crash, 1)
    assert result.status == "fail"
    assert statuses["row law"] == "fail"
    assert statuses["padding"] == "pass"
    assert statuses["batch invariance"] == "pass"


# ---- the command line -----------------------------------------------------------------


def _cli(argv):
    import io

    from specexact.frontends.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


_KERNELS = "specexact.counterexamples.batch_kernels:"


def test_cli_batched_chain_reports_what_does_not_apply_in_json() -> None:
    import json

    code, out, _ = _cli(["audit", _KERNELS + "chain_global_shared_row", "--torch",
                         "--signature", "chain", "--batched", "--gamma", "1",
                         "--vocab-sizes", "2", "--uniform", "continuous", "--json"])
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail"
    properties = data["properties"]
    assert properties["independence"]["verdict"] == "fail"
    assert properties["padding"] == {"verdict": "not applicable", "cases": 0,
                                     "why": "every row of the chain shape drafts k tokens"}
    assert properties["seeds"]["why"] == "the chain function takes no generators"


@pytest.mark.parametrize(("argv", "said"), [
    (["--signature", "single", "--batched"], "applies to --signature batch, chain, hf"),
    (["--batched"], "applies to --signature batch, chain, hf"),
])
def test_cli_batched_without_statistical_needs_a_batched_signature(argv, said) -> None:
    code, _, err = _cli(["audit", _KERNELS + "chain_global", "--torch", *argv])
    assert code == 2 and said in err and "Traceback" not in err


def test_cli_batched_without_torch_is_still_a_statistical_option() -> None:
    code, _, err = _cli(["audit", _KERNELS + "chain_global", "--batched"])
    assert code == 2 and "--batched applies to --statistical audits" in err
