"""Assertions for test suites: a sampler or step preserves the target, or AssertionError.

>>> from specexact.counterexamples.samplers import textbook
>>> result = assert_preserves_target(textbook, vocab_sizes=(2, 3), examples=10)
>>> result.passed
True

Options left out come, in this order, from a ``@pytest.mark.specexact(...)``
marker on the running test, the ``--specexact-*`` command-line options, the
``specexact_*`` ini settings, and the built-in defaults (vocabularies 2..4 for
samplers, 2..3 with horizon 3 for steps, 2..4 tokens per vocabulary with
horizon 3 characters for cross-vocabulary steps, seed 0).  An audit that cannot reach
a verdict raises :class:`~specexact.errors.Undecided`: the test errors, it
never passes.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from specexact.audit import (
    FLOAT,
    SAMPLER,
    AuditOptions,
    AuditResult,
    audit,
    describe_callable,
    get_kind,
    parse_vocab_sizes,
    result_human,
)
from specexact.errors import InvalidArgument
from specexact.exact.tree import Budget
from specexact.validation import fail

__all__ = [
    "assert_crossvocab_preserves_target",
    "assert_preserves_target",
    "assert_step_preserves_target",
    "option_defaults",
]

_OPTION_NAMES = ("vocab_sizes", "horizon", "examples", "seed", "uniform_bits", "budget",
                 "settings", "stateful", "one_hot_target", "floats", "arrays")

#: Defaults set by the pytest plugin from its command-line options and ini settings.
_session_defaults: dict[str, Any] = {}
#: Whether failure text shows whole witness tables (pytest's ``-vv``; always outside pytest).
_display: dict[str, bool] = {"verbose": True}
#: Per-test overrides from a ``specexact`` marker.
_test_defaults: contextvars.ContextVar[Mapping[str, Any] | None] = \
    contextvars.ContextVar("specexact_test_defaults", default=None)


def set_session_defaults(options: Mapping[str, Any]) -> None:
    """Replace the session-wide defaults (the pytest plugin calls this)."""
    _check_names(options, "session defaults")
    _session_defaults.clear()
    _session_defaults.update({k: v for k, v in options.items() if v is not None})


def set_verbose(verbose: bool) -> None:
    """Show whole witness tables in failures (True), or cut identical rows (the plugin, no -vv)."""
    _display["verbose"] = bool(verbose)


@contextmanager
def option_defaults(**options: Any) -> Iterator[None]:
    """Within the block, ``options`` are the defaults of the assertion helpers.

    The ``specexact`` pytest marker uses this; it nests, inner values winning.
    """
    _check_names(options, "option_defaults")
    merged = {**(_test_defaults.get() or {}), **options}
    token = _test_defaults.set(merged)
    try:
        yield
    finally:
        _test_defaults.reset(token)


def _check_names(options: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(options) - set(_OPTION_NAMES))
    if unknown:
        msg = (f"{where}: unknown option(s) {', '.join(unknown)}; "
               f"valid: {', '.join(_OPTION_NAMES)}")
        raise InvalidArgument(msg)


_VOCAB_SIZES = "an int, a pair (low, high), a range or 'A..B'"


def _vocab_sizes(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if isinstance(value, bool):
        fail("vocab_sizes", value, _VOCAB_SIZES)
    if isinstance(value, int):
        return (value, value)
    if isinstance(value, str):
        return parse_vocab_sizes(value)
    if isinstance(value, range):
        if value.step != 1 or len(value) == 0:
            fail("vocab_sizes", value, "a non-empty range with step 1")
        return (value.start, value.stop - 1)
    try:
        low, high = value
    except (TypeError, ValueError):
        fail("vocab_sizes", value, _VOCAB_SIZES)
    return (low, high)


#: Options that apply to one kind only, and their values when they do not apply.
_KIND_SPECIFIC = {"horizon": None, "stateful": False, "one_hot_target": False,
                  "floats": None, "arrays": False}


def _options(kind_name: str, explicit: Mapping[str, Any]) -> AuditOptions:
    _check_names(explicit, "assertion options")
    merged: dict[str, Any] = dict(_session_defaults)
    merged.update(_test_defaults.get() or {})
    merged.update({k: v for k, v in explicit.items() if v is not None})
    kind = get_kind(kind_name)
    # A sampler given floats is judged as float code: the float kind's options apply.
    applies = kind.options | FLOAT.options if kind is SAMPLER else kind.options
    # Session and marker defaults may name options of other kinds: those do not apply.
    specific: dict[str, Any] = {name: merged.get(name, unset) if name in applies else unset
                for name, unset in _KIND_SPECIFIC.items()}
    return AuditOptions(
        kind=kind.name,
        vocab_sizes=_vocab_sizes(merged.get("vocab_sizes")),
        examples=merged.get("examples"),
        seed=merged.get("seed", 0),
        uniform_bits=merged.get("uniform_bits"),
        budget=merged.get("budget"),
        settings=merged.get("settings"),
        horizon=specific["horizon"],
        stateful=bool(specific["stateful"]),
        one_hot_target=bool(specific["one_hot_target"]),
        floats=specific["floats"],
        arrays=bool(specific["arrays"]),
    )


def _check(fn: Callable[..., Any], kind: str, explicit: Mapping[str, Any]) -> AuditResult:
    if not callable(fn):
        msg = f"expected a {kind} function, got {type(fn).__name__}"
        raise InvalidArgument(msg)
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    name = describe_callable(fn)
    result = audit(fn, _options(kind, explicit), name=name)
    if not result.passed:
        report = result_human(result, verbose=_display["verbose"])
        msg = f"{name} does not preserve the target distribution\n\n{report}"
        raise AssertionError(msg)
    return result


def assert_preserves_target(sampler: Callable[..., Any], *,
                            vocab_sizes: Any = None, examples: int | None = None,
                            seed: int | None = None, uniform_bits: int | None = None,
                            budget: Budget | None = None, settings: Any = None,
                            floats: str | None = None,
                            arrays: bool | None = None) -> AuditResult:
    """Audit ``sampler(p, q, rng)``; raise AssertionError with the minimal exact witness.

    ``vocab_sizes``: an int, a pair ``(low, high)``, a ``range`` or ``"2..4"``;
    ``examples``: generated cases on top of the edge cases; ``seed``: the
    search's seed; ``uniform_bits``: model ``rng.random()`` as a K-bit grid;
    ``budget``: a :class:`~specexact.Budget` per exact enumeration;
    ``settings``: a ``hypothesis.settings`` (database, phases, max_examples);
    ``floats``: judge float code on ``"float64"`` or ``"float32"`` inputs
    (numpy arrays with ``arrays=True``), passing rounding within the stated
    tolerance (:func:`specexact.properties.search_floats`).
    Returns the passing :class:`~specexact.audit.AuditResult`.
    """
    __tracebackhide__ = True
    return _check(sampler, "sampler", {
        "vocab_sizes": vocab_sizes, "examples": examples, "seed": seed,
        "uniform_bits": uniform_bits, "budget": budget, "settings": settings,
        "floats": floats, "arrays": arrays})


def assert_step_preserves_target(step: Callable[..., Any], *,
                                 vocab_sizes: Any = None, horizon: int | None = None,
                                 examples: int | None = None, seed: int | None = None,
                                 uniform_bits: int | None = None,
                                 budget: Budget | None = None, settings: Any = None,
                                 stateful: bool | None = None,
                                 one_hot_target: bool | None = None) -> AuditResult:
    """Audit ``step(target, draft, prefix, rng)`` over the joint law of ``horizon`` tokens.

    Options as for :func:`assert_preserves_target`, plus ``horizon`` (default:
    chosen from the step, see :func:`specexact.properties.search_step`), ``uniform_bits``
    (judge each case exactly, and again with ``rng.random()`` on the K-bit
    grid for crashes and mass where the target has none, instead of the
    default float32 and float64 grids), ``stateful`` (hand the step
    :class:`~specexact.steps.models.CachedModel` models and check their
    caches) and ``one_hot_target`` (one-hot target rows only, for greedy
    rules).  Raises AssertionError with the minimal
    models and the joint-law table.
    """
    __tracebackhide__ = True
    return _check(step, "step", {
        "vocab_sizes": vocab_sizes, "horizon": horizon, "examples": examples, "seed": seed,
        "uniform_bits": uniform_bits, "budget": budget, "settings": settings,
        "stateful": stateful, "one_hot_target": one_hot_target})


def assert_crossvocab_preserves_target(step: Callable[..., Any], *,
                                       vocab_sizes: Any = None, horizon: int | None = None,
                                       examples: int | None = None, seed: int | None = None,
                                       budget: Budget | None = None,
                                       settings: Any = None) -> AuditResult:
    """Audit a cross-vocabulary ``step(target, draft, prefix, rng)`` on the law of text.

    The step gets :class:`~specexact.crossvocab.VocabModel` models over two
    vocabularies of strings and returns target ids (see
    :mod:`specexact.crossvocab.decode`); the law of the first ``horizon``
    characters (default 3) of the text its decode emits is compared exactly
    with the target's own.  ``vocab_sizes`` bounds the tokens of each
    vocabulary (default 2..4).  Raises AssertionError with the minimal
    vocabularies, models and the table of texts.
    """
    __tracebackhide__ = True
    return _check(step, "cross-vocab", {
        "vocab_sizes": vocab_sizes, "horizon": horizon, "examples": examples, "seed": seed,
        "budget": budget, "settings": settings})
