"""``specexact prove TARGET --vocab-size N``: exit 0 proved, 1 refuted, 2 undecided/usage error."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from verifier.doors.audit import detect_kind
from verifier.doors.targets import load_target
from verifier.errors import InvalidInput, SpecexactError, Undecided
from verifier.modes.symbolic.prover import prove
from verifier.validation import check_integer

__all__ = ["run_prove"]


def run_prove(target: str, vocab_size: int, *, as_json: bool = False,
              out: TextIO = sys.stdout, err: TextIO = sys.stderr, first: bool = False,
              uniform_bits: int | None = None) -> int:
    """Prove or refute ``target`` (``pkg.mod:fn`` or ``file.py:fn``) for every p, q on N tokens.

    Prints the verdict on ``out``: a one-line summary when proved; for a
    refutation each biased case with its region, bias formula and witness.
    ``first`` stops at the first refutation; ``uniform_bits`` judges the
    grid hazards on the K-bit grid.
    Errors go to ``err`` as one message, never a traceback.
    """
    try:
        check_integer(vocab_size, "--vocab-size", min_value=1)
        if uniform_bits is not None:
            check_integer(uniform_bits, "--uniform-bits", min_value=1)
    except InvalidInput as error:
        print(f"specexact prove: {error}", file=err)
        return 2
    try:
        sampler = load_target(target)
        if detect_kind(sampler) == "step":
            _report(err, as_json, out, "error",
                    f"specexact prove: {target} is a decoding step (target, draft, prefix, "
                    "rng); prove handles single-position samplers fn(p, q, rng) only. "
                    f"Search the step exactly instead: specexact audit {target}")
            return 2
        result = prove(sampler, vocab_size, first=first, uniform_bits=uniform_bits)
    except Undecided as error:
        _report(err, as_json, out, "undecided", f"could not decide: {error}")
        return 2
    except (InvalidInput, SpecexactError) as error:
        _report(err, as_json, out, "error", f"specexact prove: {error}")
        return 2
    except Exception as error:  # a bug in the tool: still one clear line, exit 2
        _report(err, as_json, out, "error",
                f"specexact prove: internal error {type(error).__name__}: {error}")
        return 2
    if as_json:
        json.dump(result.to_json(), out, indent=2)
        out.write("\n")
    else:
        print(result, file=out)
    return 0 if result.proved else 1


def _report(err: TextIO, as_json: bool, out: TextIO, status: str, message: str) -> None:
    if as_json:
        json.dump({"status": status, "message": message}, out, indent=2)
        out.write("\n")
    print(message, file=err)
