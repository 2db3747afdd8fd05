"""``specexact audit TARGET --statistical [--batched]``: sample, count, test, report.

Per-call mode runs :func:`specexact.statistical.audit.statistical_audit`
(``fn(p, q, rng)`` once per draw; torch code through
:func:`specexact.statistical.torch_adapter.torch_sampler`); ``--batched`` runs
:func:`specexact.statistical.batched.batched_statistical_audit`, or with
``--signature chain --gamma K``
:func:`specexact.statistical.batched_chain.batched_chain_audit`, or with
``--signature batch`` (``--gamma K`` drafts per row)
:func:`specexact.statistical.batched_batch.batch_signature_audit`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO

from specexact.errors import InvalidArgument
from specexact.frontends.cli.progress import Progress
from specexact.witness import fraction_text, sampler_case_json

__all__ = ["statistical_command"]


def _check(args: argparse.Namespace, kind: str) -> None:
    from specexact.frontends.cli.flags import check_modes

    signature = args.signature
    if signature not in ("single", "chain", "batch"):
        msg = (f"--signature {signature} has no statistical mode; --statistical takes "
               "--signature single (a sampler), chain or batch (with --batched)")
        raise InvalidArgument(msg)
    if signature == "chain" and not args.batched:
        msg = "--signature chain with --statistical needs --batched (the batched chain shape)"
        raise InvalidArgument(msg)
    if signature == "batch" and not args.batched:
        msg = ("--signature batch with --statistical needs --batched (a batch kernel is "
               "called on whole batches)")
        raise InvalidArgument(msg)
    if signature == "batch":
        _check_batch(args)
    if getattr(args, "numpy", False) or args.uniform != "dtype":
        msg = "--numpy and --uniform are exact-mode options; drop them with --statistical"
        raise InvalidArgument(msg)
    if not args.batched:
        given = [flag for flag, value in (
            ("--batch-rows", args.batch_rows),
            ("--device", None if args.device == "cpu" else args.device),
            ("--generators", None if args.generators == "shared" else args.generators))
            if value is not None]
        if given:
            msg = f"{', '.join(given)} applies to --batched statistical audits"
            raise InvalidArgument(msg)
    if args.torch and args.array == "numpy":
        msg = "--torch hands torch tensors; it contradicts --array numpy"
        raise InvalidArgument(msg)
    check_modes(args, "sampler" if signature in ("chain", "batch") else kind)


def _check_batch(args: argparse.Namespace) -> None:
    """The batch signature runs torch tensors with per-row generators, on a device that
    must be there."""
    given = [flag for flag, value in (
        ("--array numpy", args.array == "numpy"),
        ("--generators", args.generators != "shared")) if value]
    if given:
        msg = (f"{', '.join(given)} does not apply to --signature batch (torch tensors, one "
               "generator per row)")
        raise InvalidArgument(msg)
    if args.device == "cuda":
        from specexact.floats.scalars import torch_module

        torch = torch_module("--device cuda")
        if not torch.cuda.is_available():
            msg = ("--device cuda: no CUDA device is available (torch.cuda.is_available() "
                   "is False); use --device cpu")
            raise InvalidArgument(msg)


def _array(fn: Callable[..., Any], args: argparse.Namespace) -> str:
    from specexact.statistical.batched import detect_array_kind

    if args.torch:
        return "torch"
    return detect_array_kind(fn) if args.array == "auto" else str(args.array)


def _run(fn: Callable[..., Any], args: argparse.Namespace, progress: Progress) -> Any:
    array = _array(fn, args)
    if not args.batched:
        from specexact.statistical.audit import statistical_audit
        from specexact.statistical.batched import seeded_global_generators

        if array == "torch":
            from specexact.statistical.torch_adapter import torch_sampler

            fn = torch_sampler(fn, dtype=args.dtype)
        with seeded_global_generators(args.seed):
            return statistical_audit(fn, samples=args.samples, seed=args.seed,
                                     max_seconds=args.max_seconds, progress=progress)
    options: dict[str, Any] = {
        "samples": args.samples, "seed": args.seed, "max_seconds": args.max_seconds,
        "array": array, "device": args.device, "generators": args.generators,
        "dtype": args.dtype if array == "torch" else None, "progress": progress}
    if args.batch_rows is not None:
        options["batch_rows"] = args.batch_rows
    if args.signature == "batch":
        from specexact.statistical.batched_batch import batch_signature_audit

        batch_options = {key: options[key] for key in (
            "samples", "seed", "max_seconds", "device", "progress", "batch_rows")
            if key in options}
        return batch_signature_audit(fn, k=args.gamma, dtype=args.dtype, **batch_options)
    if args.signature == "chain":
        from specexact.statistical.batched_chain import batched_chain_audit

        return batched_chain_audit(fn, gamma=args.gamma, horizon=args.horizon, **options)
    from specexact.statistical.batched import batched_statistical_audit

    return batched_statistical_audit(fn, **options)


def statistical_command(fn: Callable[..., Any], name: str, kind: str,
                        args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run the statistical audit the flags ask for; write the report; the exit code."""
    _check(args, kind)
    chain = args.signature in ("chain", "batch")
    with Progress(f"sampling {name}", enabled=False if args.json else None,
                  stream=err) as progress:
        report = _run(fn, args, progress)
    if args.json:
        data = {"verdict": report.verdict, "target": name,
                "kind": "step" if chain else "sampler", "mode": "statistical",
                "batched": bool(args.batched), "cases": len(report.cases),
                "detectable_tv": report.detectable,
                "counterexample": _counterexample(report, chain),
                "statistical": report.to_json()}
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        out.write(report.format() + "\n")
    code: int = report.exit_code
    return code


def _counterexample(report: Any, chain: bool) -> dict[str, Any] | None:
    failures = list(report.failures)
    if not failures:
        return None
    worst = failures[0]
    case = worst.case
    extra = {
        "observed_tv": fraction_text(worst.observed_tv),
        "p_value": worst.p_value,
        "reason": worst.reason,
    }
    if chain:
        return {"case": case.name,
                "expected": {case.label(i): str(x) for i, x in enumerate(case.p) if x},
                "observed": {case.label(i): str(x) for i, x in enumerate(worst.observed)
                             if x},
                **extra}
    # "actual" holds empirical frequencies, not an exact law: this mode only observes
    return {**sampler_case_json(case.p, case.q, dict(enumerate(case.p)),
                                dict(enumerate(worst.observed))), **extra}
