"""The kinds of code specexact audits, each one record.

A :class:`Kind` declares, in one place, how its code is called, how its
cases are generated and shrunk (a search of :mod:`specexact.properties`), how
one case's exact law is judged against the target's (for the re-checks on
other uniforms), what a K-bit uniform means for it, which options apply, and
how a finding is shown.  :func:`specexact.audit.audit` is one policy for all of
them.  Adding a kind is one record here plus its own law code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias, final

from specexact.audit import render
from specexact.errors import InvalidArgument
from specexact.uniform import CONTINUOUS, DEFAULT, Uniform

if TYPE_CHECKING:  # the options name a kind, and check themselves against its record
    from specexact.audit.options import AuditOptions, AuditResult, Finding

__all__ = [
    "BATCH",
    "CROSS_VOCAB",
    "DEFAULT_HORIZON",
    "FLOAT",
    "KINDS",
    "SAMPLER",
    "STEP",
    "Kind",
    "get_kind",
    "kind_of",
    "register_kind",
    "selectable_kinds",
]

#: The horizon of torch ``decode`` loops (max_new_tokens) when none is given; step
#: searches choose theirs from the step, cross-vocab searches from each case's longest
#: token (specexact.properties.crossvocab_search.default_horizon).
DEFAULT_HORIZON = 3

Variants: TypeAlias = tuple[tuple[Any, int | None], ...]
#: ``search(fn, options, uniform, variants, common)``: the search's result.
Search: TypeAlias = ("Callable[[Callable[..., Any], AuditOptions, Uniform, Variants, "
                     "dict[str, Any]], Any]")
#: ``judge(fn, witness, options, uniform)``: the exact verdict on one witness.
Judge: TypeAlias = "Callable[[Callable[..., Any], Any, AuditOptions, Uniform], Any]"
Lines: TypeAlias = "Callable[[AuditResult, Finding, bool], list[str]]"
Json: TypeAlias = "Callable[[AuditResult, Finding], dict[str, Any]]"


@final
@dataclass(frozen=True)
class Kind:
    """One kind of code: everything the audit policy and the reports need to know."""

    #: The name options and the CLI use ("sampler", "step", ...).
    name: str
    #: The name reports give it (a float audit judges a sampler).
    reported: str
    #: How the code is called, by argument names.
    arguments: tuple[str, ...]
    #: Vocabulary sizes judged by default.
    default_sizes: tuple[int, int]
    #: Options (fields of :class:`AuditOptions`) that apply to this kind beyond the
    #: common ones.
    options: frozenset[str]
    #: What ``uniform_bits=K`` means: the law judged on the grid, or the ideal uniform
    #: with the grid as a re-check (steps, whose laws have no rounding tolerance).
    bits_mean: Callable[[int], Uniform]
    #: The uniform when none is given (``grid_check`` left True).
    default_uniform: Uniform
    search: Search
    judge: Judge | None
    witness_lines: Lines
    witness_json: Json
    #: Said after a PASS line ("; rounding within the stated tolerance").
    pass_note: str = ""
    #: The search reports the horizon it judged at (steps, cross-vocab).
    has_horizon: bool = False
    #: Named by ``--kind`` (float code is reached through ``--floats`` instead).
    selectable: bool = True
    #: What the JSON report adds from :attr:`AuditResult.details` (batches: each
    #: property's verdict), or None.
    details: Callable[[AuditResult], dict[str, Any]] | None = None

    def uniform(self, options: AuditOptions) -> Uniform:
        """What ``rng.random()`` returns in this audit: ``options.uniform``, else what
        ``uniform_bits`` means for this kind, else the kind's default (the ideal
        uniform alone with ``grid_check=False``)."""
        if options.uniform is not None:
            return options.uniform
        if options.uniform_bits is not None:
            return self.bits_mean(options.uniform_bits)
        return self.default_uniform if options.grid_check else CONTINUOUS

    def sizes(self, options: AuditOptions) -> tuple[int, int]:
        """The vocabulary sizes an audit of this kind judges: as given, else the kind's."""
        return options.vocab_sizes or self.default_sizes

    def check_options(self, options: AuditOptions) -> None:
        """InvalidArgument naming an option given that does not apply to this kind."""
        for option, given in _KIND_OPTIONS.items():
            if option not in self.options and given(options):
                takers = [kind.reported if kind.name != "float" else "float audits"
                          for kind in KINDS.values() if option in kind.options]
                msg = (f"{option} applies to {' and '.join(dict.fromkeys(takers))}, not to "
                       f"kind={self.name!r}{_HINTS.get(option, '')}")
                raise InvalidArgument(msg)


#: The kind-specific options, and whether an AuditOptions gives each one.
_KIND_OPTIONS: Mapping[str, Callable[[Any], bool]] = {
    "horizon": lambda o: o.horizon is not None,
    "stateful": lambda o: o.stateful,
    "one_hot_target": lambda o: o.one_hot_target,
    "processors": lambda o: o.processors is not None,
    "floats": lambda o: o.floats is not None,
    "arrays": lambda o: o.arrays,
}
_HINTS = {"processors": " (for a sampler, give the processed p instead)"}


# -- searches and judges (the law code is each kind's own module) ------------------


def _search_sampler(fn: Callable[..., Any], options: AuditOptions, uniform: Uniform,
                    variants: Variants, common: dict[str, Any]) -> Any:
    from specexact.properties import search_sampler

    return search_sampler(fn, uniform_bits=uniform.bits, support_variants=variants, **common)


def _judge_sampler(fn: Callable[..., Any], witness: Any, options: AuditOptions,
                   uniform: Uniform) -> Any:
    from specexact.exact.verdict import check_sampler

    return check_sampler(fn, witness.p, witness.q, budget=options.budget,
                         uniform_bits=uniform.bits)


def _search_float(fn: Callable[..., Any], options: AuditOptions, uniform: Uniform,
                  variants: Variants, common: dict[str, Any]) -> Any:
    from specexact.properties import search_floats

    return search_floats(fn, fmt=options.floats, arrays=options.arrays,
                         uniform_bits=uniform.bits, **common)


def _search_step(fn: Callable[..., Any], options: AuditOptions, uniform: Uniform,
                 variants: Variants, common: dict[str, Any]) -> Any:
    from specexact.properties import search_processed_step, search_step
    from specexact.steps.decode import accepts_processors

    shared: dict[str, Any] = {"horizon": options.horizon, "stateful": options.stateful,
              "one_hot_target": options.one_hot_target, "support_variants": variants}
    if options.processors is None and accepts_processors(fn):
        # A step that takes processors and was given none is judged under a panel of
        # pipelines (one per processor kind, and stopping).
        return search_processed_step(fn, **shared, **common)
    return search_step(fn, processors=options.processors, **shared, **common)


def _judge_step(fn: Callable[..., Any], witness: Any, options: AuditOptions,
                uniform: Uniform) -> Any:
    from specexact.steps.verdict import check_step

    return check_step(fn, witness.target, witness.draft, witness.horizon,
                      budget=options.budget, uniform_bits=uniform.bits,
                      processors=getattr(witness, "processors", None) or options.processors)


def _search_crossvocab(fn: Callable[..., Any], options: AuditOptions, uniform: Uniform,
                       variants: Variants, common: dict[str, Any]) -> Any:
    from specexact.properties import search_crossvocab

    # Without --horizon each case is judged to its longest token + 2 characters (the
    # report gives the longest horizon judged, and its coverage sentence says so).
    return search_crossvocab(fn, horizon=options.horizon, uniform_bits=uniform.bits,
                             support_variants=variants, **common)


def _judge_crossvocab(fn: Callable[..., Any], witness: Any, options: AuditOptions,
                      uniform: Uniform) -> Any:
    from specexact.crossvocab import check_crossvocab_step

    return check_crossvocab_step(fn, witness.target, witness.draft, witness.horizon,
                                 budget=options.budget, uniform_bits=uniform.bits)


def _search_batch(fn: Callable[..., Any], options: AuditOptions, uniform: Uniform,
                  variants: Variants, common: dict[str, Any]) -> Any:
    from specexact.properties.batch_search import search_batch

    return search_batch(fn, vocab_sizes=common["vocab_sizes"], budget=common["budget"],
                        progress=common["progress"])


def _grid(bits: int) -> Uniform:
    return Uniform.grid(bits)


def _rechecked(bits: int) -> Uniform:
    return Uniform.rechecked_on((bits,))


_SAMPLER_CALL = ("p", "q", "rng")
_STEP_CALL = ("target", "draft", "prefix", "rng")

#: ``fn(p, q, rng) -> token``: one position of speculative sampling.
SAMPLER = Kind(
    name="sampler", reported="sampler", arguments=_SAMPLER_CALL, default_sizes=(2, 5),
    options=frozenset(), bits_mean=_grid, default_uniform=DEFAULT,
    search=_search_sampler, judge=_judge_sampler,
    witness_lines=render.sampler_lines, witness_json=render.sampler_json)

#: A sampler judged as float code: p and q handed over as floats (or numpy arrays), the
#: deviation split into rounding (passes within a stated tolerance) and structure.
FLOAT = Kind(
    name="float", reported="sampler", arguments=_SAMPLER_CALL, default_sizes=(2, 5),
    options=frozenset({"floats", "arrays"}), bits_mean=_grid, default_uniform=CONTINUOUS,
    search=_search_float, judge=None,
    witness_lines=render.float_lines, witness_json=render.float_json,
    pass_note="; rounding within the stated tolerance", selectable=False)

#: ``fn(target, draft, prefix, rng) -> tokens``: a decoding step, judged on the joint
#: law of the tokens its decode emits.
STEP = Kind(
    name="step", reported="step", arguments=_STEP_CALL, default_sizes=(2, 3),
    options=frozenset({"horizon", "stateful", "one_hot_target", "processors"}),
    bits_mean=_rechecked, default_uniform=DEFAULT,
    search=_search_step, judge=_judge_step,
    witness_lines=render.step_lines, witness_json=render.step_json, has_horizon=True)

#: A step whose draft has another vocabulary, judged on the law of the emitted text.
CROSS_VOCAB = Kind(
    name="cross-vocab", reported="cross-vocab", arguments=_STEP_CALL, default_sizes=(2, 4),
    options=frozenset({"horizon"}), bits_mean=_grid, default_uniform=DEFAULT,
    search=_search_crossvocab, judge=_judge_crossvocab,
    witness_lines=render.crossvocab_lines, witness_json=render.crossvocab_json,
    has_horizon=True)

#: ``fn(draft_token_ids, draft_probs, target_probs, generators) -> [B, k + 1]``: a batch
#: of requests verified in one call (torch code, ``--signature batch``), judged on five
#: properties (row law, independence, padding, batch invariance, seeds) over a panel.
BATCH = Kind(
    name="batch", reported="batch", arguments=("draft_token_ids", "draft_probs",
                                               "target_probs", "generators"),
    default_sizes=(2, 3), options=frozenset(), bits_mean=_grid, default_uniform=CONTINUOUS,
    search=_search_batch, judge=None,
    witness_lines=render.batch_lines, witness_json=render.batch_json,
    selectable=False, details=render.batch_properties_json)

_REGISTRY: dict[str, Kind] = {kind.name: kind for kind in (SAMPLER, FLOAT, STEP, CROSS_VOCAB,
                                                           BATCH)}
#: Every kind, by name (a read-only view; :func:`register_kind` adds one).
KINDS: Mapping[str, Kind] = MappingProxyType(_REGISTRY)


def register_kind(kind: Kind) -> Kind:
    """Add ``kind`` to the registry, so ``AuditOptions(kind=kind.name)`` audits it.

    InvalidArgument when the name is taken by another record.
    """
    if not isinstance(kind, Kind):
        msg = f"register_kind({kind!r}) needs a specexact.audit.Kind"
        raise InvalidArgument(msg)
    other = _REGISTRY.get(kind.name)
    if other is not None and other is not kind:
        msg = f"a kind named {kind.name!r} is registered already"
        raise InvalidArgument(msg)
    _REGISTRY[kind.name] = kind
    return kind


def selectable_kinds() -> tuple[str, ...]:
    """The names ``--kind`` takes."""
    return tuple(name for name, kind in KINDS.items() if kind.selectable)


def get_kind(name: str) -> Kind:
    """The kind called ``name``; InvalidArgument listing the kinds otherwise."""
    try:
        return KINDS[name]
    except KeyError:
        msg = f"kind={name!r} is not a kind; valid: {', '.join(map(repr, KINDS))}"
        raise InvalidArgument(msg) from None


def kind_of(options: AuditOptions) -> Kind:
    """The kind ``options`` audit: a sampler given ``floats`` is float code."""
    if options.kind == "sampler" and options.floats is not None:
        return FLOAT
    return get_kind(options.kind)
