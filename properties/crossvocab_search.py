"""Strategies for vocabularies and cross-vocabulary models, and the search over them.

A :class:`CrossVocabSpec` is two vocabularies of strings over a short
alphabet and, for each, a default row of integer weights plus a few rows at
one-token prefixes (context-dependent models).  Rows are integer weights,
normalised exactly; random rows put mass on non-canonical tokenizations as
a matter of course.  Shrinking goes to a shorter horizon, fewer overrides,
fewer multi-character tokens, a shorter alphabet, then smaller weights.

The search is the one runner (:func:`specexact.properties.runner.search`): hand-picked
vocabulary pairs first (a draft lacking a target token, a draft with a
token the target lacks, ids permuted between the two, a three-character
token), then a seeded Hypothesis search, then shrinking.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from hypothesis import settings as Settings
from hypothesis import strategies as st

from specexact.crossvocab import (
    CrossVocabVerdict,
    CrossVocabWitness,
    VocabModel,
    Vocabulary,
    check_crossvocab_step,
    context_free_model,
    random_vocab_model,
    table_model,
)
from specexact.errors import InvalidArgument
from specexact.exact.tree import Budget
from specexact.properties.runner import (
    Adapter,
    Progress,
    SearchResult,
    rule_checks,
    rule_key,
    search,
)
from specexact.properties.strategies import vocab_range
from specexact.validation import check_integer

__all__ = [
    "DEFAULT_CROSSVOCAB_EXAMPLES",
    "CrossVocabSpec",
    "crossvocab_edge_cases",
    "crossvocab_specs",
    "default_horizon",
    "search_crossvocab",
    "vocabularies",
]

DEFAULT_CROSSVOCAB_EXAMPLES = 40
Weights = tuple[int, ...]
_ALPHABET = "abc"
_EDGE_FAMILIES = ("equal vocabularies", "draft lacks a target token",
                  "draft has a token the target lacks", "ids permuted", "three-character token",
                  "target changing after a multi-character token",
                  "mergeable pairs after accepted drafts (rows that depend on the whole "
                  "tokenization)")
#: How often the search draws a model whose rows depend on the whole tokenization.
_SEEDED_ONE_IN = 3


@dataclass(frozen=True)
class _Model:
    vocab: tuple[str, ...]
    default: Weights
    overrides: tuple[tuple[int, Weights], ...] = ()
    #: Rows drawn at random after every prefix (a pure function of the seed, the
    #: vocabulary and the prefix): two tokenizations of one text read different rows
    #: at any depth.  ``default`` and ``overrides`` are then unused.
    seed: int | None = None

    def build(self) -> VocabModel:
        if self.seed is not None:
            return random_vocab_model(self.vocab, self.seed, salt="search")
        if not self.overrides:
            return context_free_model(self.vocab, _normalise(self.default))
        return table_model(self.vocab, {(t,): _normalise(w) for t, w in self.overrides},
                           _normalise(self.default))

    def without_token(self, index: int) -> _Model:
        def cut(w: Weights) -> Weights:
            return w[:index] + w[index + 1:]

        overrides = tuple((t if t < index else t - 1, cut(w))
                          for t, w in self.overrides if t != index)
        return _Model(self.vocab[:index] + self.vocab[index + 1:], cut(self.default), overrides,
                      self.seed)

    def describe(self, name: str) -> list[str]:
        if self.seed is not None:
            return [f"{name} vocabulary {self.vocab!r}: random rows after every prefix "
                    f"(seed {self.seed})"]
        lines = [f"{name} vocabulary {self.vocab!r}: row {_row(self.default)} after every prefix"]
        lines += [f"  after {self.vocab[t]!r}: {_row(w)}" for t, w in self.overrides]
        return lines


def _normalise(weights: Weights) -> tuple[Fraction, ...]:
    total = sum(weights)
    if not total:
        return tuple(Fraction(int(i == 0)) for i in range(len(weights)))
    return tuple(Fraction(w, total) for w in weights)


def _row(weights: Weights) -> str:
    return "(" + ", ".join(str(x) for x in _normalise(weights)) + ")"


@dataclass(frozen=True)
class CrossVocabSpec:
    """A target and a draft over two vocabularies, as integer-weight rows."""

    target: _Model
    draft: _Model

    @classmethod
    def of(cls, target_vocab: Sequence[str], target_row: Sequence[int],
           draft_vocab: Sequence[str], draft_row: Sequence[int]) -> CrossVocabSpec:
        """Context-free models from vocabularies and integer weights."""
        return cls(_Model(tuple(target_vocab), tuple(target_row)),
                   _Model(tuple(draft_vocab), tuple(draft_row)))

    def models(self) -> tuple[VocabModel, VocabModel]:
        return self.target.build(), self.draft.build()

    @property
    def alphabet(self) -> str:
        return Vocabulary(self.target.vocab).alphabet

    def describe(self) -> str:
        return "\n".join([*self.target.describe("target"), *self.draft.describe("draft")])


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------


def _strings(alphabet: str, max_length: int) -> list[str]:
    out = []
    for length in range(2, max_length + 1):
        out += ["".join(c) for c in itertools.product(alphabet, repeat=length)]
    return out


@st.composite
def _vocab(draw: Any, alphabet: str, low: int, high: int, max_length: int) -> tuple[str, ...]:
    singles = list(alphabet)
    longer = _strings(alphabet, max_length)
    size = draw(st.integers(max(low, len(singles)), max(high, len(singles))))
    extra = min(size - len(singles), len(longer))
    chosen = draw(st.lists(st.sampled_from(longer), min_size=extra, max_size=extra,
                           unique=True)) if extra else []
    tokens = singles + chosen
    order = draw(st.permutations(range(len(tokens))))
    return tuple(tokens[i] for i in order)


def vocabularies(*, alphabet_sizes: int | Sequence[int] = (1, 2),
                 vocab_sizes: int | Sequence[int] = (2, 4),
                 max_length: int = 3) -> st.SearchStrategy[Vocabulary]:
    """Vocabularies: every character of a short alphabet, plus multi-character strings
    of up to ``max_length`` characters, in a random id order.

    The alphabet and the number of tokens shrink towards the smallest allowed.
    """
    return _vocab_tuples(alphabet_sizes, vocab_sizes, max_length).map(Vocabulary)


def _vocab_tuples(alphabet_sizes: Any, vocab_sizes: Any, max_length: int
                  ) -> st.SearchStrategy[tuple[str, ...]]:
    a_low, a_high = vocab_range(alphabet_sizes, name="alphabet_sizes")
    low, high = vocab_range(vocab_sizes)
    check_integer(max_length, "max_length", min_value=1)
    if a_high > len(_ALPHABET):
        msg = f"alphabet_sizes={alphabet_sizes!r}: at most {len(_ALPHABET)} characters"
        raise InvalidArgument(msg)
    return st.integers(a_low, a_high).flatmap(
        lambda a: _vocab(_ALPHABET[:a], low, high, max_length))


def _weights(size: int, max_weight: int) -> st.SearchStrategy[Weights]:
    return st.lists(st.integers(0, max_weight), min_size=size, max_size=size).map(
        lambda w: tuple(w) if any(w) else (1, *w[1:]))


@st.composite
def _model(draw: Any, vocab: tuple[str, ...], max_weight: int, max_overrides: int) -> _Model:
    default = draw(_weights(len(vocab), max_weight))
    if max_overrides and draw(st.integers(1, _SEEDED_ONE_IN)) == _SEEDED_ONE_IN:
        return _Model(vocab, default, (), draw(st.integers(0, 2**16)))
    count = draw(st.integers(0, max_overrides))
    overrides = {}
    for _ in range(count):
        overrides[draw(st.integers(0, len(vocab) - 1))] = draw(_weights(len(vocab), max_weight))
    return _Model(vocab, default, tuple(sorted(overrides.items())))


@st.composite
def _spec(draw: Any, alphabet: str, low: int, high: int, max_length: int, max_weight: int,
          max_overrides: int) -> CrossVocabSpec:
    target = draw(_vocab(alphabet, low, high, max_length))
    draft = draw(st.one_of(_vocab(alphabet, low, high, max_length), st.just(target)))
    return CrossVocabSpec(draw(_model(target, max_weight, max_overrides)),
                          draw(_model(draft, max_weight, max_overrides)))


def crossvocab_specs(*, alphabet_sizes: int | Sequence[int] = (1, 2),
                     vocab_sizes: int | Sequence[int] = (2, 4), max_length: int = 3,
                     max_weight: int = 4, max_overrides: int = 1
                     ) -> st.SearchStrategy[CrossVocabSpec]:
    """(target, draft) specifications over two vocabularies with the same alphabet."""
    a_low, a_high = vocab_range(alphabet_sizes, name="alphabet_sizes")
    low, high = vocab_range(vocab_sizes)
    check_integer(max_length, "max_length", min_value=1)
    check_integer(max_weight, "max_weight", min_value=1)
    check_integer(max_overrides, "max_overrides", min_value=0)
    if a_high > len(_ALPHABET):
        msg = f"alphabet_sizes={alphabet_sizes!r}: at most {len(_ALPHABET)} characters"
        raise InvalidArgument(msg)
    return st.integers(a_low, a_high).flatmap(
        lambda a: _spec(_ALPHABET[:a], low, high, max_length, max_weight, max_overrides))


# --------------------------------------------------------------------------
# Edge cases and shrinking
# --------------------------------------------------------------------------


def crossvocab_edge_cases(low: int = 2, high: int = 4) -> list[CrossVocabSpec]:
    """Hand-picked vocabulary pairs whose sizes lie in ``[low, high]``."""
    of = CrossVocabSpec.of
    cases = [
        of(("a", "b"), (1, 2), ("a", "b"), (2, 1)),
        of(("a", "b", "ab"), (1, 1, 2), ("a", "b"), (2, 1)),
        of(("a", "b"), (1, 2), ("a", "b", "ab"), (1, 1, 2)),
        of(("b", "a", "ab"), (2, 1, 1), ("a", "b", "ba"), (1, 2, 1)),
        of(("a", "b", "ab"), (1, 2, 1), ("a", "b", "ba", "bb"), (1, 1, 2, 1)),
        of(("a", "b", "aba"), (2, 1, 1), ("a", "b", "ab"), (1, 1, 1)),
        # The target's row after the token "ab" differs from its row after [a, b].
        CrossVocabSpec(_Model(("a", "b", "ab"), (1, 1, 1), ((2, (2, 0, 1)),)),
                       _Model(("a", "b", "ba"), (1, 2, 1))),
        # Merges possible at every boundary, after accepted drafts too: the draft writes
        # single characters the target can merge, and the target's rows depend on the
        # whole tokenization of the text (at any depth, not only after one token).
        CrossVocabSpec(_Model(("a", "b", "ab", "ba"), (1, 1, 1, 1), (), 1),
                       _Model(("a", "b"), (1, 1), (), 2)),
        CrossVocabSpec(_Model(("a", "b", "ab"), (1, 1, 1), (), 3),
                       _Model(("a", "b", "ba"), (1, 1, 1), (), 4)),
    ]
    return [c for c in cases
            if all(low <= len(m.vocab) <= high for m in (c.target, c.draft))]


def _simpler(spec: CrossVocabSpec, low: int) -> list[CrossVocabSpec]:
    out: list[CrossVocabSpec] = []
    if spec.target.vocab != spec.draft.vocab:
        out.append(replace(spec, draft=spec.target))  # the same vocabulary and rows
    for side in ("target", "draft"):
        model: _Model = getattr(spec, side)
        if model.overrides or model.seed is not None:
            out.append(replace(spec, **{side: _Model(model.vocab, model.default)}))
    for side in ("target", "draft"):
        model = getattr(spec, side)
        if len(model.vocab) <= low:
            continue
        for i, token in enumerate(model.vocab):
            if len(token) > 1:
                out.append(replace(spec, **{side: model.without_token(i)}))
    for side in ("target", "draft"):
        model = getattr(spec, side)
        if model.seed is not None:
            continue  # its rows are not the weights
        for i, w in enumerate(model.default):
            if w > 1 or (w == 1 and sum(model.default) > 1):
                smaller = (*model.default[:i], w - 1, *model.default[i + 1:])
                out.append(replace(spec, **{side: replace(model, default=smaller)}))
    return out


@dataclass(frozen=True)
class _Case:
    spec: CrossVocabSpec
    horizon: int


def _shrink(case: _Case, fails: Callable[[_Case], Any], low: int, *, max_checks: int = 60
            ) -> _Case:
    best = case
    for horizon in range(1, best.horizon):
        if fails(_Case(best.spec, horizon)):
            best = _Case(best.spec, horizon)
            break
    checks = 0
    improved = True
    while improved and checks < max_checks:
        improved = False
        for spec in _simpler(best.spec, low):
            checks += 1
            if fails(_Case(spec, best.horizon)):
                best = _Case(spec, best.horizon)
                improved = True
                break
            if checks >= max_checks:
                break
    return best


# --------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------


#: The default horizon is per case: the longest token of either vocabulary plus this
#: many characters (so a merge right after the longest token, and the character after
#: it, are judged), and never less than :data:`MIN_HORIZON`.
HORIZON_PAST_LONGEST = 2
MIN_HORIZON = 3


def default_horizon(spec: CrossVocabSpec) -> int:
    """The characters of text a case is judged on when no horizon is given."""
    longest = max(len(token) for model in (spec.target, spec.draft) for token in model.vocab)
    return max(MIN_HORIZON, longest + HORIZON_PAST_LONGEST)


def search_crossvocab(step: Any, *, vocab_sizes: int | Sequence[int] = (2, 4),
                      alphabet_sizes: int | Sequence[int] = (1, 2), horizon: int | None = None,
                      examples: int = DEFAULT_CROSSVOCAB_EXAMPLES, seed: int = 0,
                      budget: Budget | None = None, settings: Settings | None = None,
                      progress: Progress | None = None, uniform_bits: int | None = None,
                      support_variants: Sequence[tuple[Any, int | None]] = ()
                      ) -> SearchResult:
    """Search for vocabularies and exact models on which a cross-vocabulary ``step`` does
    not preserve the target's law over the first ``horizon`` characters of text.
    Without ``horizon`` each case is judged on :func:`default_horizon` characters: its
    longest token plus two, at least three.

    ``vocab_sizes`` bounds the number of tokens of each vocabulary,
    ``alphabet_sizes`` the number of characters.  The witness is a
    :class:`~specexact.crossvocab.CrossVocabWitness` (with its ``spec``).
    ``support_variants`` are ``(step, uniform_bits)`` pairs judged after the
    exact check passes, for crashes and support violations only.
    """
    low, high = vocab_range(vocab_sizes)
    a_low, a_high = vocab_range(alphabet_sizes, name="alphabet_sizes")
    if horizon is not None:
        check_integer(horizon, "horizon", min_value=1)

    judged: list[int] = []

    def depth(spec: CrossVocabSpec) -> int:
        chars = horizon if horizon is not None else default_horizon(spec)
        judged.append(chars)
        return chars

    def checker(fn: Any, bits: int | None) -> Callable[[_Case], CrossVocabVerdict]:
        def check(case: _Case) -> CrossVocabVerdict:
            target, draft = case.spec.models()
            return check_crossvocab_step(fn, target, draft, case.horizon, budget=budget,
                                         uniform_bits=bits)
        return check

    edge = [_Case(spec, depth(spec)) for spec in crossvocab_edge_cases(low, high)
            if a_low <= len(spec.alphabet) <= a_high]
    strategy = crossvocab_specs(alphabet_sizes=(a_low, a_high), vocab_sizes=(low, high)
                                ).map(lambda s: _Case(s, depth(s)))
    adapter: Adapter[_Case] = Adapter(
        edge_cases=edge, strategy=strategy,
        size_of=lambda case: (len(case.spec.target.vocab), len(case.spec.draft.vocab)),
        check=rule_checks(checker, step, uniform_bits, support_variants),
        shrink=lambda case, fails: _shrink(case, fails, low),
        witness=lambda case, verdict: CrossVocabWitness(verdict.target, verdict.draft,
                                                        case.horizon, case.spec),
        key=rule_key(step, f"cross-vocab {low}-{high} a{a_low}-{a_high} h{horizon} "
                           f"{uniform_bits} {len(support_variants)}"),
        edge_families=_EDGE_FAMILIES,
        families=("random vocabularies (every character plus strings of up to 3 "
                  "characters, ids in any order)", "context-free and context-dependent rows",
                  "rows that depend on the whole tokenization"),
        score_label="TV(law of text)")
    result = search(adapter, low=low, high=high, examples=examples, settings=settings,
                  seed=seed, progress=progress,
                  sizes_note=f" (tokens per vocabulary), alphabets of "
                             f"{a_low if a_low == a_high else f'{a_low}..{a_high}'} "
                             f"characters, " + (f"horizon {horizon} characters"
                                                if horizon is not None else
                                                f"horizon the longest token + "
                                                f"{HORIZON_PAST_LONGEST} characters (at "
                                                f"least {MIN_HORIZON})"))
    # The horizon reported: the one given, or the longest any case was judged to.
    return replace(result, horizon=horizon if horizon is not None
                   else max(judged, default=MIN_HORIZON))
