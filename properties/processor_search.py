"""Processor pipelines for steps that take them: a fixed panel, a strategy, and a search.

A step written as ``step(target, draft, prefix, rng, processors)`` must keep the
processed target's law whatever processors it is given.  When no configuration is
named, :func:`search_processed_step` judges it under each pipeline of
:data:`PROCESSOR_PANEL` (one per processor kind, and stopping), stopping at the
first failure; :func:`processor_pipelines` draws small random pipelines for
property tests of one's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from specexact.pipelines import MinP, TopK, TopP
from specexact.properties.runner import SearchResult
from specexact.properties.step_search import search_step
from specexact.steps.processors import (
    BadWords,
    FrequencyPenalty,
    LogitBias,
    MinNewTokens,
    NoRepeatNGram,
    PresencePenalty,
    ProcessorPipeline,
    RepetitionPenalty,
    Stopping,
    TokenGrammar,
)

__all__ = ["PROCESSOR_PANEL", "processor_pipelines", "search_processed_step"]

_F = Fraction

#: One pipeline per processor kind (and one for stopping), on token ids 0..2.
PROCESSOR_PANEL: tuple[tuple[str, ProcessorPipeline], ...] = (
    ("penalties", ProcessorPipeline((RepetitionPenalty(_F(2)), PresencePenalty(_F(2, 3)),
                                     FrequencyPenalty(_F(1, 2))))),
    ("logit bias and min-p", ProcessorPipeline((LogitBias({0: _F(1, 3)}), MinP(_F(1, 2))))),
    ("top-k and top-p", ProcessorPipeline((TopK(2), TopP(_F(1, 2))))),
    ("bad words and no repeated 3-gram",
     ProcessorPipeline((BadWords(((0, 0),)), NoRepeatNGram(3)))),
    ("a token grammar after a reasoning boundary",
     ProcessorPipeline((TokenGrammar({(0, 0): 1, (1, 1): 0, (1, 2): 0}, boundary=1),))),
    ("min_new_tokens with EOS",
     ProcessorPipeline((MinNewTokens(2, eos=(1,)),), Stopping(eos=(1,)))),
    ("EOS, a stop sequence and max_new_tokens",
     ProcessorPipeline((), Stopping(eos=(1,), stop_sequences=((0, 0),), max_new_tokens=2))),
)


def search_processed_step(step: Any, *,
                          panel: Sequence[tuple[str, ProcessorPipeline]] = PROCESSOR_PANEL,
                          **options: Any) -> SearchResult:
    """:func:`specexact.properties.search_step` under each pipeline of ``panel`` in turn.

    Returns the first failure (its witness carries the pipeline), an undecided result
    as soon as one pipeline is undecided, else a pass whose coverage names every
    pipeline.  ``options`` are :func:`~specexact.properties.search_step`'s.
    """
    cases = 0
    passed: list[SearchResult] = []
    for _, pipeline in panel:
        result = search_step(step, processors=pipeline, **options)
        cases += result.cases
        if result.status != "pass":
            return dataclasses.replace(result, cases=cases)
        passed.append(dataclasses.replace(
            result, covered=result.covered.replace(f" under {pipeline}", "")))
    names = "; ".join(label for label, _ in panel)
    first = passed[0].covered if passed else ""
    covered = (f"The step takes processors: it was searched under each of {len(panel)} "
               f"pipelines ({names}), {cases} exact cases in all. Each search: {first}")
    last = passed[-1] if passed else search_step(step, **options)
    return dataclasses.replace(last, cases=cases, covered=covered)


@st.composite
def _pipeline(draw: Any, vocab_size: int) -> ProcessorPipeline:
    tokens = st.integers(0, vocab_size - 1)
    factor = st.sampled_from((_F(1, 3), _F(1, 2), _F(2), _F(3)))
    choices: dict[str, Callable[[], Any]] = {
        "repetition": lambda: RepetitionPenalty(draw(factor)),
        "presence": lambda: PresencePenalty(draw(factor)),
        "frequency": lambda: FrequencyPenalty(draw(factor)),
        "bias": lambda: LogitBias({draw(tokens): draw(factor)}),
        "min_p": lambda: MinP(draw(st.sampled_from((_F(1, 4), _F(1, 2))))),
        "top_k": lambda: TopK(draw(st.integers(1, vocab_size))),
        "bad_words": lambda: BadWords((tuple(draw(st.lists(tokens, min_size=1,
                                                           max_size=2))),)),
        "ngram": lambda: NoRepeatNGram(draw(st.integers(2, 3))),
    }
    names = draw(st.lists(st.sampled_from(sorted(choices)), max_size=3, unique=True))
    eos = draw(st.one_of(st.just(()), tokens.map(lambda t: (t,))))
    cap = draw(st.one_of(st.none(), st.integers(1, 3)))
    return ProcessorPipeline(tuple(choices[n]() for n in names),
                             Stopping(eos=eos, max_new_tokens=cap))


def processor_pipelines(*, vocab_size: int = 3) -> st.SearchStrategy[ProcessorPipeline]:
    """Small random pipelines (up to three processors, maybe EOS and a cap) on ids below
    ``vocab_size``."""
    return _pipeline(vocab_size)
