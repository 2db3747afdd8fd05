"""``specexact audit TARGET``: load, detect the kind, audit, report."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, TextIO

from specexact.audit import (
    AuditOptions,
    audit,
    detect_kind,
    float_mode,
    get_kind,
    kind_of,
    parse_vocab_sizes,
    result_human,
    result_json,
)
from specexact.audit.torch_code import TorchCode, prepare
from specexact.errors import InvalidArgument
from specexact.frontends.cli.flags import check_modes
from specexact.frontends.cli.parallel import parallel_audit
from specexact.frontends.cli.progress import Progress
from specexact.frontends.targets import article, load_target

__all__ = ["audit_target", "options_from_args"]


def options_from_args(args: argparse.Namespace, kind: str) -> AuditOptions:
    """The audit's options from the command line; a flag that does not apply to the
    target's kind is a usage error naming both."""
    sizes = parse_vocab_sizes(args.vocab_sizes) if args.vocab_sizes else None
    record = get_kind(kind)
    for flag, option, given in (("--horizon", "horizon", args.horizon is not None),
                                ("--stateful", "stateful", bool(getattr(args, "stateful",
                                                                        False)))):
        if given and option not in record.options:
            msg = (f"{flag} applies to steps only; this target is audited as a sampler"
                   if record.reported == "sampler"
                   else f"{flag} applies to same-vocabulary steps, not --kind {kind}")
            raise InvalidArgument(msg)
    floats = getattr(args, "floats", None)
    bits = getattr(args, "uniform_bits", None)
    if record.reported == "sampler" and (floats or bits is not None):
        # Float code, or a sampler judged on a K-bit grid: rounding is split from structure.
        kind = "float"
    return AuditOptions(kind=kind,
                        vocab_sizes=sizes, horizon=args.horizon, examples=args.examples,
                        seed=args.seed, uniform_bits=bits,
                        stateful=bool(getattr(args, "stateful", False)),
                        floats=floats,
                        # float32 code is numpy code: arrays unless said otherwise
                        arrays=bool(getattr(args, "arrays", False)) or floats == "float32",
                        processors=_processors(args, kind))


def _processors(args: argparse.Namespace, kind: str) -> Any:
    """The pipeline named by --processors (None without it)."""
    name = getattr(args, "processors", None)
    if name is None:
        return None
    if kind == "sampler":
        msg = "--processors applies to steps only; this target is audited as a sampler"
        raise InvalidArgument(msg)
    from specexact.steps.processors import ProcessorPipeline

    try:
        pipeline: Any = load_target(name)
    except InvalidArgument as exc:
        if not str(exc).endswith("not a function"):
            raise
        pipeline = None  # a value that is not callable: not a pipeline either
    if not isinstance(pipeline, ProcessorPipeline):
        what = "" if pipeline is None else f" is {article(type(pipeline).__name__)},"
        msg = (f"--processors {name}{what} must name a specexact.ProcessorPipeline "
               "(processors and stopping), e.g. module:PIPELINE")
        raise InvalidArgument(msg)
    return pipeline


def resolve(target: str, kind: str | None) -> tuple[Callable[..., Any], str]:
    """The function named by ``target`` and its kind (given, read from the signature,
    else 'sampler')."""
    fn = load_target(target)
    return fn, kind or detect_kind(fn) or "sampler"


@contextlib.contextmanager
def _quiet_stdout(enabled: bool, err: TextIO) -> Iterator[None]:
    """With --json, anything the code under test prints goes to stderr, not into the JSON."""
    if not enabled:
        yield
        return
    with contextlib.redirect_stdout(err):
        yield


Variants = tuple[tuple[Any, int | None], ...]


def _torch_mode(fn: Callable[..., Any], kind: str, args: argparse.Namespace
                ) -> tuple[Callable[..., Any], str, Variants]:
    """With --torch, the target as an engine sampler or step, and its faithful variant
    (``torch.rand`` on its dtype's grid, judged for support violations and crashes);
    without it, refuse torch code that draws from torch's generators (the engine
    could only call it hidden randomness)."""
    from specexact.torch import torch_randomness_reason

    if getattr(args, "numpy", False):
        if getattr(args, "torch", False) or kind != "sampler":
            msg = "--numpy applies to samplers fn(p, q, rng), without --torch"
            raise InvalidArgument(msg)
        from specexact.torch.numpy_generator import numpy_rng_sampler
        return numpy_rng_sampler(fn), "sampler", ()
    if kind == "cross-vocab" and getattr(args, "torch", False):
        msg = "--torch applies to samplers and same-vocabulary steps, not --kind cross-vocab"
        raise InvalidArgument(msg)
    if not getattr(args, "torch", False):
        set_flags = [flag for flag, value, default in (
            ("--signature", args.signature, "single"), ("--dtype", args.dtype, "float32"),
            ("--semantics", getattr(args, "semantics", None), None))
            if value != default]
        if set_flags:
            msg = f"{', '.join(set_flags)} applies to torch code: add --torch"
            raise InvalidArgument(msg)
        reason = torch_randomness_reason(fn) if kind == "sampler" else None
        if reason is not None:
            raise InvalidArgument(reason)
        return fn, kind, ()
    return prepare(fn, torch_code(args))


def torch_code(args: argparse.Namespace) -> TorchCode:
    """How ``--torch`` code is run, from the command line."""
    return TorchCode(signature=args.signature, dtype=args.dtype, gamma=args.gamma,
                     uniform=args.uniform, semantics=getattr(args, "semantics", None),
                     horizon=args.horizon,
                     batched=bool(getattr(args, "batched", False))
                     and not getattr(args, "statistical", False))


def audit_target(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    target: str = args.target
    fn, kind = resolve(target, args.kind)
    if args.statistical:
        # The code runs on its own randomness, numpy or torch: no exact-mode wrapping.
        from specexact.frontends.cli.statistical_cmd import statistical_command

        args.resolved_kind = "step" if args.signature in ("chain", "batch") else kind
        with _quiet_stdout(args.json, err):
            return statistical_command(fn, target, kind, args, out=out, err=err)
    fn, kind, variants = _torch_mode(fn, kind, args)
    args.resolved_kind = kind  # for the JSON error object if the audit cannot finish
    check_modes(args, kind)
    code = torch_code(args) if getattr(args, "torch", False) else None
    # The dtype run classifies each finding (structural, float-only, exact-only).
    classify = code is not None and code.classifies and bool(variants)
    options = replace(options_from_args(args, kind), support_variants=variants,
                      grid_check=args.uniform == "dtype", classify=classify)
    # One target is one search, in this process, whatever --jobs says (splitting the
    # search would make the report depend on the job count); --jobs/--executor split
    # the large levels of its decodes, which fold back into the serial law.
    record = kind_of(options)
    mode = f" ({float_mode(options, record.uniform(options))})" if record.name == "float" \
        else ""
    progress = Progress(f"auditing {target}{mode}", enabled=False if args.json else None,
                        stream=err)
    with parallel_audit(args) as _, progress, _quiet_stdout(args.json, err):
        result = audit(fn, options, name=target, progress=progress)
    semantics = None if code is None else code.semantics_line()
    if args.json:
        data = result_json(result)
        if semantics is not None:
            data["torch_semantics"] = semantics
        if classify and code is not None:
            _dtype_rows_json(data, result, code)
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        out.write(result_human(result) + "\n")
        if classify and code is not None:
            out.writelines(line + "\n" for line in _dtype_rows_lines(result, code))
        if semantics is not None:
            out.write(semantics + "\n")
    exit_code = 0 if result.passed else 1
    if getattr(args, "plot", None):
        from specexact.frontends.cli.plot_option import write_witness_plot

        exit_code = write_witness_plot(result_json(result), args.plot, err, exit_code)
    return exit_code


def _rows(witness: Any, code: TorchCode) -> tuple[Any, Any] | None:
    """A sampler witness's p and q as the dtype run received them (None for a step's)."""
    if not (hasattr(witness, "p") and hasattr(witness, "q")):
        return None
    from specexact.torch.verdict import dtype_witness_rows

    return dtype_witness_rows(witness.p, witness.q, code.dtype)


def _dtype_rows_lines(result: Any, code: TorchCode) -> list[str]:
    """Under a float-only finding: the witness rows as the dtype's values."""
    found = result.counterexample
    if found is None or result.finding_class != "float-only":
        return []
    rows = _rows(found.witness, code)
    if rows is None:
        return []
    head = f"rows as the {code.dtype} run got them: "
    return [f"{head}p = {rows[0]['text']}", f"{' ' * len(head)}q = {rows[1]['text']}"]


def _dtype_rows_json(data: dict[str, Any], result: Any, code: TorchCode) -> None:
    """``dtype_rows`` (p and q as the dtype run received them) on the counterexample
    and on each note."""
    found = result.counterexample
    if found is not None and data.get("counterexample") is not None:
        rows = _rows(found.witness, code)
        if rows is not None:
            data["counterexample"]["dtype_rows"] = {"dtype": code.dtype, "p": rows[0],
                                                    "q": rows[1]}
    for note, entry in zip(result.notes, data.get("notes", []), strict=False):
        rows = _rows(note.witness, code)
        if rows is not None:
            entry["dtype_rows"] = {"dtype": code.dtype, "p": rows[0], "q": rows[1]}
