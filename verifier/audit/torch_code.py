"""Torch code as engines write it: each calling convention one record.

``specexact audit --torch`` runs unmodified torch code in exact mode
(:mod:`specexact.torch`).  A :class:`TorchSignature` says how the code is
called, which parameter names engines give it, and which kind of audit judges
it (a sampler or a step); :func:`prepare` turns the code into that kind's
function plus its faithful variant (``torch.rand`` on the dtype's grid, values
in the dtype's semantics), judged on every case for crashes and support
violations.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, final

from specexact.audit.kinds import DEFAULT_HORIZON
from specexact.errors import InvalidArgument

__all__ = ["BATCHED_SIGNATURES", "TORCH_SIGNATURES", "TorchCode", "TorchSignature",
           "check_signature", "prepare"]

Variants = tuple[tuple[Any, int | None], ...]


@final
@dataclass(frozen=True)
class TorchSignature:
    """One calling convention of engine code."""

    name: str
    #: How the function is called, by argument names.
    call: tuple[str, ...]
    #: Parameter names engines use for it (a usage hint, never a verdict).
    names: frozenset[str]
    #: The kind of audit that judges it.
    kind: str
    #: Takes a ``torch.Generator`` as an optional last argument.
    optional_generator: bool = False
    #: The name of that optional last argument (``chain``: one generator per batch row,
    #: as engines hand per-request seeded generators in).
    generator_name: str = "generator"
    #: Needs ``--gamma K`` (drafts per step).
    drafts: bool = False

    def shape(self) -> str:
        shown = ", ".join(self.call)
        return shown + f"[, {self.generator_name}]" if self.optional_generator else shown


TORCH_SIGNATURES: Mapping[str, TorchSignature] = {sig.name: sig for sig in (
    TorchSignature("single", ("p", "q"),
                   frozenset({"p", "q", "generator", "gen", "target_prob", "draft_prob",
                              "target_probs_1d", "draft_probs_1d"}),
                   "sampler", optional_generator=True),
    TorchSignature("chain", ("draft_token_ids", "draft_probs", "target_probs"),
                   frozenset({"draft_token_ids", "draft_ids", "draft_probs", "target_probs",
                              "bonus_token_ids", "uniform_samples", "seeded_seqs",
                              "generators"}),
                   "step", optional_generator=True, generator_name="generators", drafts=True),
    TorchSignature("hf", ("candidate_input_ids", "candidate_logits", "candidate_length",
                          "new_logits", "is_done_candidate"),
                   frozenset({"candidate_input_ids", "candidate_logits", "candidate_length",
                              "new_logits", "is_done_candidate"}),
                   "step", drafts=True),
    TorchSignature("batch", ("draft_token_ids", "draft_probs", "target_probs", "generators"),
                   frozenset({"draft_token_ids", "draft_probs", "target_probs", "generators",
                              "seeded_seqs"}),
                   "batch", drafts=True),
    TorchSignature("decode", ("input_ids", "draft_model", "target_model", "max_new_tokens"),
                   frozenset({"input_ids", "draft_model", "target_model", "assistant_model",
                              "max_new_tokens"}),
                   "step"),
)}


#: The signatures a batched function is judged in on the batch properties
#: (``--batched`` for chain and hf; batch always).
BATCHED_SIGNATURES: tuple[str, ...] = ("batch", "chain", "hf")


@final
@dataclass(frozen=True)
class TorchCode:
    """How torch code is run: its calling convention, dtype, drafts per step, whether each
    case is also judged with ``torch.rand`` on the dtype's grid (``uniform="dtype"``), and
    the semantics of that faithful run (values as the dtype computes them, or exact)."""

    signature: str = "single"
    dtype: str = "float32"
    gamma: int = 2
    uniform: str = "dtype"
    semantics: str | None = None
    horizon: int | None = None
    #: A chain or hf function judged as a batch (the batch properties), not as a step.
    batched: bool = False

    def __post_init__(self) -> None:
        if self.batched and self.signature not in BATCHED_SIGNATURES:
            msg = (f"a batched audit applies to --signature {', '.join(BATCHED_SIGNATURES)}, "
                   f"not --signature {self.signature}")
            raise InvalidArgument(msg)

    @property
    def judged_as_batch(self) -> bool:
        """Whether the code is judged on the batch properties."""
        return self.batched or TORCH_SIGNATURES[self.signature].kind == "batch"

    @property
    def faithful(self) -> bool:
        return self.uniform == "dtype"

    @property
    def faithful_semantics(self) -> str:
        return self.semantics or "dtype"

    @property
    def classifies(self) -> bool:
        """Whether the faithful run is the code's dtype run, which classifies each
        finding (structural, float-only, exact-only); batches report their own."""
        return self.faithful and self.faithful_semantics == "dtype" \
            and not self.judged_as_batch

    def semantics_line(self) -> str:
        """Which semantics each run of the audit used, in words."""
        if not self.faithful:
            return "torch semantics: exact rationals, continuous uniform"
        return (f"torch semantics: exact rationals (structural run, continuous uniform); "
                f"{self.faithful_semantics} (faithful run, torch.rand on its {self.dtype} "
                "grid)")


def check_signature(fn: Any, signature: str) -> None:
    """A clear usage error when ``fn``'s parameter names are another signature's, or it
    cannot take the signature's arguments."""
    from specexact.torch.unwrap import unwrap

    record = TORCH_SIGNATURES[signature]
    try:
        parameters = inspect.signature(unwrap(fn))
    except (TypeError, ValueError):
        return
    names = set(parameters.parameters)
    if not names & record.names:
        for other in TORCH_SIGNATURES.values():
            if other is not record and len(names & other.names) >= 2:
                shown = ", ".join(sorted(names & other.names))
                msg = (f"--signature {signature}, but the function's parameters ({shown}) "
                       f"are those of --signature {other.name}; give --signature "
                       f"{other.name}" + (" --gamma K" if other.drafts else "")
                       + " (single is fn(p, q[, generator]) -> token)")
                raise InvalidArgument(msg)
    calls = [record.call, (*record.call, record.generator_name)] if record.optional_generator \
        else [record.call]
    errors: list[TypeError] = []
    for arguments in calls:
        try:
            parameters.bind(*arguments)
        except TypeError as exc:
            errors.append(exc)
    if len(errors) == len(calls):
        msg = (f"--signature {signature} calls fn({record.shape()}), but the function's "
               f"signature is {parameters}: {errors[0]}")
        raise InvalidArgument(msg) from None


def prepare(fn: Callable[..., Any], code: TorchCode
            ) -> tuple[Callable[..., Any], str, Variants]:
    """The torch code as its kind's function (ideal uniform, exact values), the kind's
    name, and its faithful variant for the support re-check (none with
    ``uniform="continuous"``)."""
    check_signature(fn, code.signature)
    record = TORCH_SIGNATURES[code.signature]
    if code.judged_as_batch:
        from specexact.torch.batch import BatchKernel

        return BatchKernel(fn, k=code.gamma, dtype=code.dtype, faithful=code.faithful,
                           semantics=code.faithful_semantics,
                           convention=code.signature), "batch", ()
    if record.kind == "sampler":
        from specexact.torch import torch_rng_sampler

        sampler = torch_rng_sampler(fn, dtype=code.dtype, uniform="continuous")
        if not code.faithful:
            return sampler, "sampler", ()
        faithful = torch_rng_sampler(fn, dtype=code.dtype, uniform="dtype",
                                     semantics=code.faithful_semantics)
        return sampler, "sampler", ((faithful, None),)
    from specexact.torch import torch_step

    horizon = code.horizon if code.horizon is not None else DEFAULT_HORIZON

    def make(uniform: str) -> Any:
        semantics = code.faithful_semantics if uniform == "dtype" else None
        return torch_step(fn, signature=code.signature, gamma=code.gamma, dtype=code.dtype,
                          uniform=uniform, max_new_tokens=horizon, semantics=semantics)

    step = make("continuous")
    return step, "step", ((make("dtype"), None),) if code.faithful else ()
