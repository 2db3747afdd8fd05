"""``specexact prove TARGET --vocab-size N [--kind step --horizon H]``: exit 0 proved, 1 refuted,
2 undecided/usage error."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from specexact.audit import describe_arity_problem, detect_kind, get_kind
from specexact.errors import InvalidInput, SpecexactError, Undecided
from specexact.frontends.targets import load_target
from specexact.symbolic.prover import prove
from specexact.validation import check_integer

__all__ = ["run_prove"]


def run_prove(target: str, vocab_size: int, *, as_json: bool = False,
              out: TextIO = sys.stdout, err: TextIO = sys.stderr, first: bool = False,
              uniform_bits: int | None = None, kind: str | None = None,
              horizon: int | None = None, plot: str | None = None) -> int:
    """Prove or refute ``target`` (``pkg.mod:fn`` or ``file.py:fn``) for every p, q on N tokens.

    A sampler ``fn(p, q, rng)`` is proved for every pair (p, q); a step
    ``fn(target, draft, prefix, rng)`` (``kind="step"``, or read from its
    signature) for every pair of context-dependent models, on the joint law
    of its first ``horizon`` tokens.  Prints the verdict on ``out``: a
    summary when proved; for a refutation the biased cases (region, bias
    formula, witness).  ``first`` stops at the first refutation (a step's
    states are then checked shortest first); for samplers ``uniform_bits``
    judges the grid hazards on the K-bit grid.  Errors go to ``err`` as one
    message, never a traceback.
    """
    try:
        check_integer(vocab_size, "--vocab-size", min_value=1)
        if uniform_bits is not None:
            check_integer(uniform_bits, "--uniform-bits", min_value=1)
        if horizon is not None:
            check_integer(horizon, "--horizon", min_value=1)
    except InvalidInput as error:
        _report(err, as_json, out, "error", target=target, message=str(error))
        return 2
    try:
        fn = load_target(target)
        detected = detect_kind(fn)
        if detected == "cross-vocab":
            if kind is None:
                _report(err, as_json, out, "error", target=target,
                        message=f"{target} reads model.vocab, so it is a "
                        "cross-vocabulary step, which prove does not cover (proofs are "
                        "over one vocabulary); audit it with specexact audit "
                        f"{target} --kind cross-vocab, or give --kind step if it is a "
                        "same-vocabulary step")
                return 2
            detected = "step"
        chosen = kind or detected or "sampler"
        if kind is not None and detected is not None and kind != detected:
            shape = ("fn(p, q, rng)" if detected == "sampler"
                     else "fn(target, draft, prefix, rng)")
            _report(err, as_json, out, "error", target=target,
                        message=f"--kind {kind} but {target}'s signature is a "
                    f"{detected}'s, {shape}; give --kind {detected} (or leave --kind out)")
            return 2
        problem = describe_arity_problem(fn, get_kind("step" if chosen == "step" else "sampler"))
        if problem is not None:
            _report(err, as_json, out, "error", target=target, message=f"{problem}")
            return 2
        if chosen == "step":
            if horizon is None:
                how = ("--kind step" if kind == "step"
                       else "read from its signature (target, draft, prefix, rng)")
                _report(err, as_json, out, "error", target=target,
                        message=f"{target} is a decoding step ({how}); a step is "
                        "proved on the joint law of its first N tokens: give --horizon N, e.g. "
                        f"specexact prove {target} --kind step --vocab-size {vocab_size} "
                        "--horizon 2")
                return 2
            if uniform_bits is not None:
                _report(err, as_json, out, "error", target=target,
                        message="--uniform-bits applies to sampler proofs, not to "
                        "steps (a step proof is for a continuous uniform; audit the step "
                        "with --uniform-bits K for a grid)")
                return 2
            from specexact.symbolic import prove_step

            result: Any = prove_step(fn, vocab_size, horizon, first=first)
        else:
            if horizon is not None:
                _report(err, as_json, out, "error", target=target,
                        message=f"--horizon is for decoding steps; {target} is proved "
                        "as a sampler fn(p, q, rng) (give --kind step if it is a step)")
                return 2
            result = prove(fn, vocab_size, first=first, uniform_bits=uniform_bits)
    except Undecided as error:
        _report(err, as_json, out, "undecided", target=target,
                message=f"could not decide: {error}")
        return 2
    except (InvalidInput, SpecexactError) as error:
        _report(err, as_json, out, "error", target=target, message=f"{error}")
        return 2
    except Exception as error:  # a bug in the tool: still one clear line, exit 2
        _report(err, as_json, out, "error", target=target,
                        message=f"internal error {type(error).__name__}: {error}")
        return 2
    data = {"target": target, **result.to_json(), "summary": result.summary()}
    if as_json:
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        print(result, file=out)
    code = 0 if result.proved else 1
    if plot:
        from specexact.frontends.cli.plot_option import write_witness_plot

        code = write_witness_plot(data, plot, err, code)
    return code


def _report(err: TextIO, as_json: bool, out: TextIO, status: str, *, target: str,
            message: str) -> None:
    if as_json:
        json.dump({"status": status, "target": target, "message": message, "error": message},
                  out, indent=2)
        out.write("\n")
    print(f"specexact: {status}: {message}", file=err)
