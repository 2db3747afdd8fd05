"""The audit policy: one procedure for every kind of code.

Hand-picked edge cases, then the Hypothesis search, each case judged exactly;
every case that passes is run again on the uniform's re-check grids (or the
code's faithful variants) for crashes and mass where the target has none.
The result is an :class:`~specexact.audit.AuditResult`: pass, or the first
(smallest) counterexample with its exact witness.  An undecidable run
(budget, hidden randomness) raises :class:`~specexact.errors.Undecided`; it is
never a pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from specexact.audit.kinds import Kind, Variants, kind_of
from specexact.audit.options import AuditOptions, AuditResult, Finding
from specexact.audit.signature import describe_arity_problem, describe_callable
from specexact.errors import InvalidArgument, SpecexactError, Undecided
from specexact.exact.verdict import support_finding
from specexact.properties import ExactOnly, classifying
from specexact.uniform import CONTINUOUS, Uniform, grid_name

__all__ = ["audit"]

_TORCH_GRID_NOTE = (" The failure shows only under torch.rand's grid for the dtype "
                    "(k/2^24 for float32, 0 included), not with an ideal uniform.")


def audit(fn: Callable[..., Any], options: AuditOptions | None = None, *,
          name: str | None = None,
          progress: Callable[[int], None] | None = None) -> AuditResult:
    """Audit ``fn`` (a sampler, a step, ... per ``options.kind``): edge cases, then search.

    Returns a passing :class:`~specexact.audit.AuditResult` or the shrunk
    counterexample.  Raises :class:`~specexact.errors.Undecided` when some case
    could not be decided and no violation was found, and
    :class:`~specexact.errors.InvalidArgument` when ``fn`` cannot be called with
    the kind's arguments or an option does not apply to the kind.
    ``progress(cases_done)`` is called as exact cases are checked.
    """
    opts = options or AuditOptions()
    kind = kind_of(opts)  # AuditOptions checked its options against this record
    label = name or describe_callable(fn)
    problem = describe_arity_problem(fn, kind)
    if problem is not None:
        raise InvalidArgument(problem)
    uniform = kind.uniform(opts)
    variants, note = _variants(fn, opts, uniform)
    common: dict[str, Any] = {"vocab_sizes": kind.sizes(opts), "seed": opts.seed,
                              "budget": opts.budget, "settings": opts.settings,
                              "progress": progress}
    if opts.examples is not None:
        common["examples"] = opts.examples
    noting: contextlib.AbstractContextManager[list[ExactOnly]] = \
        classifying() if opts.classify else contextlib.nullcontext([])
    with noting as exact_only:
        result = kind.search(fn, opts, uniform.without_rechecks(), variants, common)
    notes = _notes(kind, exact_only)
    if result.status == "undecided":
        error = result.error
        if isinstance(error, BaseException):
            raise error
        msg = f"the audit of {label} could not reach a verdict: {result.covered}"
        raise Undecided(msg)
    mode = float_mode(opts, uniform) if kind.name == "float" else None
    covered = result.covered + note
    if result.status == "pass":
        return AuditResult(kind.name, label, opts, result.cases, None, covered,
                           result.horizon, mode=mode, details=result.witness,
                           notes=notes)
    shows = _where_it_shows(fn, kind, opts, result, variants, uniform)
    covered += shows
    witness = result.witness if result.witness is not None \
        else _witness_from(result.verdict)
    found = Finding(kind.name, witness, result.verdict)
    finding_class = None
    if opts.classify:
        finding_class = "float-only" if shows == _TORCH_GRID_NOTE else "structural"
    return AuditResult(kind.name, label, opts, result.cases, found, covered, result.horizon,
                       result.minimality, mode, result.witness if kind.details else None,
                       finding_class=finding_class, notes=notes)


#: At most this many exact-only notes are reported (the first ones the search met,
#: one per distinct reason).
MAX_NOTES = 3


def _notes(kind: Kind, exact_only: Sequence[ExactOnly]) -> tuple[Finding, ...]:
    """The first exact-only findings of the search, one per reason, as findings."""
    seen: dict[str, Finding] = {}
    for noted in exact_only:
        verdict = noted.exact
        reason = str(verdict.reason)
        if reason not in seen and len(seen) < MAX_NOTES:
            seen[reason] = Finding(kind.name, _note_witness(verdict), verdict)
    return tuple(seen.values())


def _note_witness(verdict: Any) -> Any:
    """The witness of an exact-only finding: a sampler's (p, q), a step's models."""
    if hasattr(verdict, "p") and hasattr(verdict, "q"):
        return _witness_from(verdict)
    return verdict


def float_mode(options: AuditOptions, uniform: Uniform) -> str:
    """A float audit's mode in words: ``floats (float32, numpy arrays)``, ``grid (24-bit
    uniform)``."""
    bits = uniform.bits
    if options.floats is None:
        return f"grid ({bits}-bit uniform)" if bits is not None else "exact"
    return (f"floats ({options.floats}{', numpy arrays' if options.arrays else ''}"
            f"{f', {bits}-bit uniform' if bits else ''})")


def _variants(fn: Callable[..., Any], options: AuditOptions,
              uniform: Uniform) -> tuple[Variants, str]:
    """The faithful variants each passing case is judged with, and the coverage note."""
    if options.support_variants:
        return options.support_variants, ""
    return tuple((fn, bits) for bits in uniform.rechecks), uniform.recheck_note()


def _where_it_shows(fn: Callable[..., Any], kind: Kind, options: AuditOptions, result: Any,
                    variants: Variants, uniform: Uniform) -> str:
    """A sentence when the failure shows only under a grid (or the code's faithful
    variant), not with an ideal uniform; '' otherwise."""
    grids = [bits for variant, bits in variants if variant is fn and bits is not None]
    if grids and not options.support_variants:
        grid = _only_on_the_grid(fn, kind, options, result.witness, grids)
        return "" if grid is None else \
            f" The failure shows only under {grid_name(grid)}, not with an ideal uniform."
    if any(variant is not fn and bits is None for variant, bits in variants) \
            and _only_on_the_grid(fn, kind, options, result.witness, [0]) is not None:
        return _TORCH_GRID_NOTE
    return ""


def _only_on_the_grid(fn: Callable[..., Any], kind: Kind, options: AuditOptions,
                      witness: Any, grids: Sequence[int]) -> int | None:
    """The first of ``grids`` (bits) whose uniforms alone make the witness fail, or None.

    None when the witness fails with an ideal uniform too (or cannot be re-run);
    with one grid, that grid whenever the witness passes with an ideal uniform.
    """
    judge = kind.judge
    if witness is None or judge is None:
        return None
    try:
        if not judge(fn, witness, options, CONTINUOUS).passed:
            return None
        # A grid moves acceptance probabilities by rounding; only a finding counts.
        for bits in grids[:-1]:
            if support_finding(judge(fn, witness, options, Uniform.grid(bits))):
                return bits
        return grids[-1]
    except SpecexactError:  # no verdict with the ideal uniform: say nothing more
        return None


def _witness_from(verdict: Any) -> Any:
    """A sampler verdict found without a search witness: its own (p, q)."""
    from specexact.witness import SamplerWitness

    return SamplerWitness(tuple(verdict.p), tuple(verdict.q))
