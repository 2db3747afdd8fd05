"""``specexact audit`` without TARGET in a project whose ``[tool.specexact]`` lists
targets: audit each, in the order listed, and report them together."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from specexact.errors import InvalidInput, SamplerFailure, SpecexactError, Undecided
from specexact.frontends.config import ProjectConfig, find_config, target_argv

__all__ = ["CONFIG_EXCLUDED", "audit_configured", "config_keys", "project_config"]

#: audit options that make no sense per target in the table (they belong to the run).
CONFIG_EXCLUDED = frozenset({"help", "json", "format", "color", "quiet", "verbose",
                             "max-seconds", "jobs"})


def config_keys(parser: argparse.ArgumentParser) -> set[str]:
    """The audit options a ``[tool.specexact]`` table may set, read from the parser."""
    sub = next(a for a in parser._actions
               if isinstance(a, argparse._SubParsersAction))
    audit = sub.choices["audit"]
    keys = set()
    for action in audit._actions:
        for option in action.option_strings:
            if option.startswith("--"):
                keys.add(option[2:])
    return keys - CONFIG_EXCLUDED


def project_config(parser: argparse.ArgumentParser) -> ProjectConfig:
    """The project's ``[tool.specexact]`` table, checked against the audit's options."""
    return find_config(valid=config_keys(parser))


def _outcome(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, Undecided):
        return "undecided", f"no verdict possible: {exc}"
    if isinstance(exc, SamplerFailure):
        return "fail", f"the code under test failed: {exc}"
    if isinstance(exc, (InvalidInput, SpecexactError)):
        return "error", str(exc)
    return "error", f"internal error ({type(exc).__name__}: {exc})"


def audit_configured(config: ProjectConfig, given: Sequence[str], *,
                     parser: Callable[[], argparse.ArgumentParser],
                     settle: Callable[[argparse.Namespace], None],
                     run_one: Callable[[argparse.Namespace, TextIO, TextIO], int],
                     out: TextIO, err: TextIO, machine: bool, quiet: bool) -> int:
    """Audit every configured target; ``given``: the command line's options (they win
    over the table).  Every target's options are checked before any is audited.

    Exit code: 1 when a target fails, else 2 when one is undecided or in error, else 0.
    """
    all_args = []
    for i in range(len(config.targets)):
        argv = target_argv(config, i, given)
        try:
            args = parser().parse_args(argv)
            settle(args)
        except Exception as exc:
            what = str(exc).splitlines()[0]
            msg = f"{config.describe()} targets[{i}] ({config.targets[i]['target']}): {what}"
            raise InvalidInput(msg) from None
        args.json = machine
        all_args.append(args)
    root = str(config.root)
    if root not in sys.path:
        sys.path.insert(0, root)
    if not quiet:
        err.write(f"specexact: auditing the {len(all_args)} target"
                  f"{'s' * (len(all_args) != 1)} of {config.describe()}\n")
    payloads: list[dict[str, Any]] = []
    texts: list[str] = []
    for args in all_args:
        buffer = io.StringIO()
        try:
            code = run_one(args, buffer, err)
        except Exception as exc:
            verdict, message = _outcome(exc)
            payloads.append({"verdict": verdict, "target": args.target,
                             "kind": getattr(args, "resolved_kind", None) or args.kind,
                             "cases": 0, "counterexample": None, "error": message})
            texts.append(f"{verdict.upper()}  {args.target}: {message}\n")
            continue
        if machine:
            payloads.append(json.loads(buffer.getvalue()))
        else:
            payloads.append({"verdict": "pass" if code == 0 else "fail" if code == 1
                             else "undecided", "target": args.target})
            texts.append(buffer.getvalue())
    verdicts = [p["verdict"] for p in payloads]
    code = 1 if "fail" in verdicts else 2 if any(v != "pass" for v in verdicts) else 0
    overall = "fail" if code == 1 else "pass" if code == 0 else \
        "undecided" if "undecided" in verdicts else "error"
    if machine:
        json.dump({"verdict": overall, "config": str(config.path), "targets": payloads},
                  out, indent=2)
        out.write("\n")
        return code
    out.write("\n".join(texts))
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("pass", "fail", "undecided",
                                                              "error") if v in verdicts)
    out.write(f"\n{len(payloads)} configured target{'s' * (len(payloads) != 1)} "
              f"audited: {counts}\n")
    return code
