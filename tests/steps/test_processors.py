"""Processors with state and stopping: each processor kind exactly, the pipeline, and the
engine's reference (the processed target's joint law, sequences ending where they stop)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from specexact import (
    BadWords,
    ContextFreeModel,
    FrequencyPenalty,
    InvalidArgument,
    LogitBias,
    MinNewTokens,
    NoRepeatNGram,
    PresencePenalty,
    ProcessorPipeline,
    ProcessorsExhausted,
    RepetitionPenalty,
    Stopping,
    TableModel,
    TokenGrammar,
    check_step,
    decode_distribution,
    step_law,
    target_distribution,
)
from specexact.pipelines import MinP, TopK

HALF = (F(1, 2), F(1, 2))
THIRDS = (F(1, 3), F(1, 3), F(1, 3))


def plain(target, draft, prefix, rng, processors):
    return (rng.categorical(processors(prefix, target(prefix))),)


def ignores(target, draft, prefix, rng):
    return (rng.categorical(target(prefix)),)


def run_on(pipe, emitted, row=THIRDS):
    return pipe(emitted, row)


# ---- each processor kind -------------------------------------------------------


def test_repetition_presence_and_frequency_penalties_are_rational_factors():
    assert run_on(ProcessorPipeline((RepetitionPenalty(2),)), (0,)) == (F(1, 5), F(2, 5), F(2, 5))
    assert run_on(ProcessorPipeline((PresencePenalty(F(1, 2)),)), (0, 0)) \
        == (F(1, 5), F(2, 5), F(2, 5))
    # Frequency: factor ** count, so two occurrences weigh 1/4.
    assert run_on(ProcessorPipeline((FrequencyPenalty(F(1, 2)),)), (0, 0, 1)) \
        == (F(1, 7), F(2, 7), F(4, 7))


def test_logit_bias_min_p_and_top_k():
    biased = ProcessorPipeline((LogitBias({2: 0, 0: F(2)}),))
    assert run_on(biased, ()) == (F(2, 3), F(1, 3), F(0))
    assert run_on(ProcessorPipeline((MinP(F(1, 2)),)), (), (F(1, 2), F(1, 3), F(1, 6))) \
        == (F(3, 5), F(2, 5), F(0))
    assert run_on(ProcessorPipeline((TopK(1),)), (), (F(1, 2), F(1, 3), F(1, 6))) \
        == (F(1), F(0), F(0))


def test_bad_words_and_no_repeat_ngram_depend_on_the_emitted_tokens():
    bad = ProcessorPipeline((BadWords(((0, 1), (2,))),))
    assert run_on(bad, (1,)) == (F(1, 2), F(1, 2), F(0))
    assert run_on(bad, (1, 0)) == (F(1), F(0), F(0))
    ngram = ProcessorPipeline((NoRepeatNGram(2),))
    assert run_on(ngram, (0, 1, 0)) == (F(1, 2), F(0), F(1, 2))  # (0, 1) seen
    assert run_on(ngram, (0, 1)) == THIRDS


def test_token_grammar_applies_after_the_reasoning_boundary():
    grammar = TokenGrammar({(0, 0): 1, (1, 2): 0}, boundary=1)
    pipe = ProcessorPipeline((grammar,))
    assert run_on(pipe, (0, 2)) == THIRDS  # still reasoning
    assert run_on(pipe, (2, 1)) == (F(1), F(0), F(0))  # state 0 allows only 0
    assert run_on(pipe, (2, 1, 0)) == (F(0), F(0), F(1))  # state 1 allows only 2
    with pytest.raises(ProcessorsExhausted, match="leave no token"):
        run_on(pipe, (1, 1))  # an ungrammatical token: nothing is allowed after it


def test_min_new_tokens_bans_eos_until_enough_tokens():
    pipe = ProcessorPipeline((MinNewTokens(2, eos=(1,)),), Stopping(eos=(1,)))
    assert run_on(pipe, (0,)) == (F(1, 2), F(0), F(1, 2))
    assert run_on(pipe, (0, 2)) == THIRDS


def test_bad_configurations_are_refused_with_what_is_valid():
    with pytest.raises(InvalidArgument, match="rational number > 0"):
        RepetitionPenalty(0)
    with pytest.raises(InvalidArgument, match="token id"):
        BadWords(((-1,),))
    with pytest.raises(InvalidArgument, match="max_new_tokens"):
        Stopping(max_new_tokens=0)
    with pytest.raises(InvalidArgument, match="processor"):
        ProcessorPipeline((3,))
    with pytest.raises(InvalidArgument, match="ProcessorPipeline"):
        check_step(plain, ContextFreeModel(HALF), None, 1, processors=[RepetitionPenalty(2)])


# ---- stopping -------------------------------------------------------------------


def test_stopping_eos_stop_sequences_and_the_cap():
    stop = Stopping(eos=(2,), stop_sequences=((0, 1),), max_new_tokens=4)
    assert stop.finished((0, 2)) and stop.finished((1, 0, 1)) and stop.finished((0, 0, 0, 0))
    assert not stop.finished((1, 0)) and not stop.finished(())
    pipe = ProcessorPipeline((), stop)
    assert pipe.cut((1,), (0, 1, 0)) == (0, 1)
    assert pipe.stop_length((0, 0, 1, 2), 0) == 3


def test_the_reference_ends_a_sequence_at_eos():
    law = target_distribution(ContextFreeModel(HALF), 3,
                              processors=ProcessorPipeline((), Stopping(eos=(1,))))
    assert dict(law.items()) == {(1,): F(1, 2), (0, 1): F(1, 4), (0, 0, 1): F(1, 8),
                                 (0, 0, 0): F(1, 8)}


def test_a_step_that_emits_past_eos_is_caught():
    def past_eos(target, draft, prefix, rng, processors):
        return (rng.categorical(target(prefix)), 0)

    pipe = ProcessorPipeline((), Stopping(eos=(1,)))
    verdict = check_step(past_eos, ContextFreeModel(HALF), None, 2, processors=pipe)
    assert not verdict.passed
    assert verdict.actual.prob((1, 0)) == F(1, 2) and verdict.expected.prob((1,)) == F(1, 2)
    assert "stop at EOS 1" in verdict.reason


def test_the_cap_ends_every_sequence():
    pipe = ProcessorPipeline((), Stopping(max_new_tokens=1))
    law = decode_distribution(plain, ContextFreeModel(HALF), None, 3, processors=pipe)
    assert dict(law.items()) == {(0,): F(1, 2), (1,): F(1, 2)}


# ---- the engine under processors -------------------------------------------------


def test_processed_reference_and_a_step_that_ignores_the_processors():
    pipe = ProcessorPipeline((RepetitionPenalty(2),))
    model = ContextFreeModel(HALF)
    assert check_step(plain, model, None, 3, processors=pipe).passed
    verdict = check_step(ignores, model, None, 2, processors=pipe)
    assert not verdict.passed and verdict.comparison.first_difference == (0, 0)
    assert verdict.to_json()["processors"] == {
        "processors": [{"kind": "repetition_penalty", "penalty": "2"}],
        "stopping": {"eos": [], "stop_sequences": [], "max_new_tokens": None}}


def test_the_identity_pipeline_is_the_plain_target():
    model = TableModel({(0,): (F(1, 4), F(3, 4))}, default=HALF)
    assert check_step(ignores, model, None, 2, processors=ProcessorPipeline()).passed


def test_step_law_passes_the_processors():
    pipe = ProcessorPipeline((LogitBias({0: 0}),))
    assert dict(step_law(plain, ContextFreeModel(HALF), None, processors=pipe).items()) \
        == {(1,): F(1)}


def test_exhausted_processors_on_the_targets_path_raise():
    pipe = ProcessorPipeline((LogitBias({0: 0}),))
    with pytest.raises(ProcessorsExhausted):
        check_step(plain, ContextFreeModel((F(1), F(0))), None, 1, processors=pipe)


# ---- a step that takes processors, audited without a named configuration ----------


@pytest.mark.slow
def test_the_panel_judges_a_step_under_each_processor_kind():
    from specexact.counterexamples import get
    from specexact.properties import PROCESSOR_PANEL, search_processed_step

    result = search_processed_step(plain, examples=5)
    assert result.status == "pass"
    assert f"each of {len(PROCESSOR_PANEL)} pipelines" in result.covered
    wrong = search_processed_step(get("min-p-bonus-only").rule, examples=5)
    assert wrong.status == "fail" and wrong.witness.processors is PROCESSOR_PANEL[0][1]


@pytest.mark.slow
def test_audit_uses_the_panel_only_for_steps_that_take_processors():
    from specexact import AuditOptions
    from specexact.audit import audit

    result = audit(plain, AuditOptions(kind="step", examples=3))
    assert result.passed and "The step takes processors" in result.coverage
    assert "takes processors" not in audit(ignores, AuditOptions(kind="step", examples=3)
                                           ).coverage


def test_random_pipelines_are_valid():
    from hypothesis import given, settings

    from specexact.properties import processor_pipelines

    @settings(max_examples=25, database=None, deadline=None)
    @given(processor_pipelines(vocab_size=3))
    def check(pipe):
        assert isinstance(pipe, ProcessorPipeline)
        try:
            row = pipe((0, 1), THIRDS)
        except ProcessorsExhausted:
            return
        assert sum(row) == 1

    check()
