"""Which mode flags of ``specexact audit`` go together, and with which kind of target."""

from __future__ import annotations

import argparse

from specexact.errors import InvalidArgument

__all__ = ["check_modes", "statistical_flags_given"]


def check_modes(args: argparse.Namespace, kind: str) -> None:
    """A usage error for a combination of mode flags that cannot run together, or that
    does not apply to the target's kind."""
    if args.statistical and (args.floats or args.uniform_bits is not None):
        msg = "--statistical runs the sampler on its own randomness; drop --floats/--uniform-bits"
        raise InvalidArgument(msg)
    if args.statistical:
        _check_statistical_panel(args)
    else:
        _check_statistical_only(args)
    if args.arrays and not args.floats:
        msg = "--arrays applies to --floats audits only"
        raise InvalidArgument(msg)
    if kind == "step" and (args.statistical or args.floats):
        msg = "--floats and --statistical apply to samplers, not steps"
        raise InvalidArgument(msg)
    if kind == "cross-vocab" and (args.statistical or args.floats
                                  or args.uniform_bits is not None):
        msg = ("--floats, --uniform-bits and --statistical apply to samplers and steps, not "
               "cross-vocab steps")
        raise InvalidArgument(msg)


def _check_statistical_panel(args: argparse.Namespace) -> None:
    # The statistical panel is fixed (edge cases plus generated pairs of vocabularies
    # 3..8); these options would be silently ignored.
    chain = getattr(args, "signature", "single") == "chain"
    ignored = [flag for flag, value in (("--vocab-sizes", args.vocab_sizes),
                                        ("--examples", args.examples),
                                        ("--horizon", None if chain else args.horizon))
               if value is not None]
    if ignored:
        msg = (f"{', '.join(ignored)} cannot be combined with --statistical, which "
               "samples a fixed panel of cases; use --samples N and --seed N")
        raise InvalidArgument(msg)


def statistical_flags_given(args: argparse.Namespace) -> list[str]:
    """The flags of the statistical audit set on the command line (to their non-default
    values)."""
    return [flag for flag, value in (
        ("--samples", args.samples), ("--batched", args.batched or None),
        ("--batch-rows", args.batch_rows),
        ("--device", None if args.device == "cpu" else args.device),
        ("--array", None if args.array == "auto" else args.array),
        ("--generators", None if args.generators == "shared" else args.generators))
        if value is not None]


def _check_statistical_only(args: argparse.Namespace) -> None:
    given = statistical_flags_given(args)
    if given == ["--batched"] and getattr(args, "torch", False):
        from specexact.audit.torch_code import BATCHED_SIGNATURES

        if args.signature in BATCHED_SIGNATURES:
            return  # exact: a batched chain or hf function judged on the batch properties
        msg = (f"--batched without --statistical judges a batched function on the batch "
               f"properties: it applies to --signature {', '.join(BATCHED_SIGNATURES)}, not "
               f"--signature {args.signature}")
        raise InvalidArgument(msg)
    if given:
        msg = f"{', '.join(given)} applies to --statistical audits only"
        raise InvalidArgument(msg)
