"""Argument parsing, dispatch, and the one place where every error becomes an exit code.

Exit codes: 0 no violation found, 1 a violation was found, 2 a usage error or
no verdict possible (import failure, budget exceeded, hidden randomness), 3 an output
error (the report or a plot cannot be written), 130 / 143 interrupted (SIGINT / SIGTERM).
No traceback ever reaches the user unless ``SPECEXACT_DEBUG=1`` is set.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.metadata
import io
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any, NoReturn, TextIO

from specexact.audit import TORCH_SIGNATURES, parse_integer, selectable_kinds
from specexact.errors import (
    BudgetExceeded,
    InvalidInput,
    OutputUnwritable,
    SamplerFailure,
    SpecexactError,
    Undecided,
)
from specexact.frontends.cli.flags import statistical_flags_given
from specexact.frontends.cli.output import (
    add_output_options,
    colour_error,
    colour_in_argv,
    colour_report,
    command_in_argv,
    format_in_argv,
    settle_output,
    write_document,
)
from specexact.frontends.cli.parallel import add_parallel_options, catalogue_jobs, parallel_audit
from specexact.frontends.cli.plot_option import add_plot_option, check_plot_option
from specexact.frontends.cli.progress import configure as configure_progress

__all__ = ["build_parser", "main"]

EXIT_PASS = 0
EXIT_VIOLATION = 1
EXIT_ERROR = 2
#: A report or plot that cannot be written (``/dev/full``, a closed stdout, a bad path).
EXIT_OUTPUT = 3


class UsageError(Exception):
    """A command-line usage mistake (argparse's own errors are routed here)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}{_suggestion(message)}\n"
                         f"(usage: run '{self.prog} --help')")


def _suggestion(message: str) -> str:
    """'; did you mean 'audit'?' for argparse's "invalid choice: 'adit' (choose from ...)"."""
    match = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if match is None:
        return ""
    choices = re.findall(r"'([^']*)'|([\w-]+)", match.group(2))
    names = [quoted or bare for quoted, bare in choices]
    close = difflib.get_close_matches(match.group(1), names, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _version() -> str:
    try:
        return importlib.metadata.version("specexact")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "unknown"


def _common_options() -> _Parser:
    """-q and -v, accepted after every subcommand."""
    common = _Parser(add_help=False)
    chat = common.add_mutually_exclusive_group()
    chat.add_argument("-q", "--quiet", action="store_true",
                      help="no progress lines on stderr")
    chat.add_argument("-v", "--verbose", action="store_true",
                      help="progress lines every second when stderr is not a terminal, and "
                           "the traceback of an internal error")
    common.add_argument("--max-seconds", type=_positive_seconds, metavar="S",
                        help="time limit of the whole run, any command or mode: past it the "
                             "run is stopped and there is no verdict (exit 2) (default: none)")
    add_output_options(common)
    return common


def _int_at_least(text: str, minimum: int) -> int:
    try:
        return parse_integer(text, minimum)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _nonnegative_int(text: str) -> int:
    return _int_at_least(text, 0)


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1)


AUDIT_EPILOG = """\
TARGET is package.module:function or path/to/file.py:function.
A sampler is fn(p, q, rng) -> token; a step is fn(target, draft, prefix, rng) -> tuple of
tokens.  The kind is read from the signature unless --kind is given; a step whose draft
has another vocabulary (judged on the law of text) is recognised by its code reading
model.vocab, or named with --kind cross-vocab.
Without TARGET, the targets listed in [tool.specexact] (pyproject.toml) are audited;
when there are none, every rule of the bundled catalogue is audited and compared with
its expected verdict.
exit codes: 0 no violation found, 1 violation found, 2 usage error or no verdict possible,
3 output error (the report or plot cannot be written), 130/143 interrupted (SIGINT/SIGTERM)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="specexact",
        description="Prove or refute, with exact arithmetic, that a speculative-decoding "
                    "sampler preserves the target distribution.",
        epilog="exit codes: 0 pass, 1 violation found, 2 usage error or no verdict, 3 output "
               "error (report or plot not writable), 130/143 interrupted")
    parser.add_argument("--version", action="version", version=f"specexact {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    common = [_common_options()]

    audit = sub.add_parser(
        "audit", parents=common,
        help="audit a sampler or step (or, without TARGET, the bundled catalogue)",
        description="Run the hand-picked edge cases, then the Hypothesis search, and report "
                    "the minimal exact witness of any violation.",
        epilog=AUDIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.add_argument("target", nargs="?", metavar="TARGET",
                       help="package.module:function or path/to/file.py:function")
    audit.add_argument("--kind", choices=tuple(selectable_kinds()),
                       help="what TARGET is (default: read from its signature, else "
                            "sampler); cross-vocab: fn(target, draft, prefix, rng) with "
                            "models over two vocabularies of strings, judged on the law of "
                            "the emitted text")
    audit.add_argument("--vocab-sizes", metavar="A..B",
                       help="vocabulary sizes to cover (default 2..5 for samplers, "
                            "2..3 for steps, 2..4 tokens per vocabulary for cross-vocab)")
    audit.add_argument("--horizon", type=_positive_int, metavar="N",
                       help="steps: number of emitted tokens whose joint law is compared; "
                            "cross-vocab: number of characters of text (default: each "
                            "case's longest token + 2, at least 3)")
    audit.add_argument("--stateful", action="store_true",
                       help="steps: hand the step stateful models (specexact.CachedModel: "
                            "next_distribution, append, rollback, ...) and check that each "
                            "cache holds exactly the emitted prefix after every step")
    audit.add_argument("--processors", metavar="MODULE:NAME",
                       help="steps: a specexact.ProcessorPipeline (processors and stopping) "
                            "the step is called with as processors=...; the reference is "
                            "then the processed target's joint law")
    audit.add_argument("--examples", type=_nonnegative_int, metavar="N",
                       help="generated cases for the Hypothesis search, on top of the edge "
                            "cases (default: the search's own, 200 for samplers)")
    audit.add_argument("--seed", type=int, default=0, metavar="N",
                       help="seed of the search, for reproducible runs (default 0)")
    add_parallel_options(audit)
    audit.add_argument("--json", action="store_true",
                       help="print one JSON object on stdout and nothing else")
    _add_float_options(audit)
    add_plot_option(audit)

    prove = sub.add_parser(
        "prove", parents=common, help="prove a sampler exact over the whole simplex, symbolically",
        description="Run the sampler on symbolic p and q for one vocabulary size; prove "
                    "that it preserves p for every pair, or print the region and the "
                    "bias formula where it does not.  A decoding step (--kind step, or read "
                    "from its signature) is proved with --horizon N: the joint law of its "
                    "first N tokens, for every pair of context-dependent models.",
        epilog="exit codes: 0 proved, 1 refuted, 2 usage error or undecided, 3 output error, "
               "130/143 interrupted")
    prove.add_argument("target", metavar="TARGET",
                       help="package.module:function or path/to/file.py:function")
    prove.add_argument("--vocab-size", type=_positive_int, required=True, metavar="N",
                       help="vocabulary size to prove for")
    prove.add_argument("--kind", choices=("sampler", "step"),
                       help="what TARGET is (default: read from its signature, else sampler)")
    prove.add_argument("--horizon", type=_positive_int, metavar="N",
                       help="steps (required): number of decoded tokens whose joint law is "
                            "proved, for every pair of context-dependent models")
    prove.add_argument("--json", action="store_true", help="print one JSON object")
    prove.add_argument("--first", action="store_true",
                       help="stop at the first confirmed refutation")
    prove.add_argument("--uniform-bits", type=_positive_int, default=None, metavar="K",
                       help="judge the grid hazards (comparisons where '<' and '<=' differ "
                            "on a grid) with rng.random() on the K-bit grid (24: float32 "
                            "torch.rand): refuted when one puts mass on a token with p = 0")
    add_plot_option(prove)

    explain = sub.add_parser("explain", parents=common,
                             help="a catalogue rule: why it is wrong, its witness")
    explain.add_argument("name", metavar="NAME", help="a rule name from 'specexact catalogue'")
    explain.add_argument("--json", action="store_true", help="print one JSON object")

    catalogue = sub.add_parser("catalogue", parents=common,
                               help="list the bundled rules, right and wrong")
    formats = catalogue.add_mutually_exclusive_group()
    formats.add_argument("--json", action="store_true", help="print a JSON list")
    formats.add_argument("--markdown", action="store_true",
                         help="print a Markdown table (the README's catalogue table)")

    from specexact.frontends.cli.power_cmd import add_power_parser

    add_power_parser(sub, common)
    from specexact.frontends.cli.mutate_cmd import add_mutate_parser

    add_mutate_parser(sub, common)
    return parser


def _add_float_options(audit: argparse.ArgumentParser) -> None:
    group = audit.add_argument_group(
        "floats and discrete uniforms",
        "Judge float code exactly: the deviation from p is split into rounding (passes, "
        "bounded by a stated tolerance) and structure (fails).")
    # No argparse choices: FORMAT is optional, so in `--floats TARGET` argparse hands
    # TARGET to --floats; _settle_floats moves it back.
    group.add_argument("--floats", nargs="?", const="float64", metavar="FORMAT",
                       help="hand p and q to the sampler as floats (float64, the default, "
                            "or float32 numpy arrays)")
    group.add_argument("--arrays", action="store_true",
                       help="with --floats: numpy arrays instead of Python floats")
    group.add_argument("--uniform-bits", type=_positive_int, metavar="K",
                       help="model rng.random() as the grid of K-bit values in [0, 1), "
                            "0 included (24 = torch.rand float32, 53 = float64)")
    torch_mode = audit.add_argument_group(
        "torch exact mode",
        "For unmodified torch code: torch.rand, multinomial, exponential races and "
        "generators are modelled exactly (see specexact.torch).")
    torch_mode.add_argument("--torch", action="store_true",
                            help="run the target as torch code in exact mode")
    torch_mode.add_argument("--numpy", action="store_true",
                            help="run fn(p, q, rng) with p, q as numpy object arrays of "
                                 "exact values and rng a numpy.random.Generator stand-in "
                                 "(random, uniform, integers, choice) in exact mode")
    torch_mode.add_argument("--signature", choices=tuple(TORCH_SIGNATURES),
                            default="single",
                            help="single: fn(p, q[, generator]) -> token; chain: "
                                 "fn(draft_ids, draft_probs, target_probs) -> [1, k+1] "
                                 "padded with -1; hf: transformers' _speculative_sampling; "
                                 "decode: fn(input_ids, draft_model, target_model, "
                                 "max_new_tokens), a whole generation loop")
    torch_mode.add_argument("--gamma", type=_positive_int, default=2, metavar="K",
                            help="drafts per step for --signature chain/hf (default 2)")
    torch_mode.add_argument("--dtype", choices=("float32", "float64", "bfloat16"),
                            default="float32",
                            help="dtype of the probability tensors handed to the code "
                                 "(default float32)")
    torch_mode.add_argument("--uniform", choices=("dtype", "continuous"), default="dtype",
                            help="dtype (default): every case is judged exactly with an "
                                 "ideal uniform and again with the uniform on its float "
                                 "grid k / 2**K, 0 included, as torch.rand draws it (float32 "
                                 "for rng.random()), for support violations and crashes "
                                 "(grid rounding passes); continuous: the ideal uniform "
                                 "only")
    torch_mode.add_argument("--semantics", choices=("dtype", "exact"), default=None,
                            help="values of the faithful (--uniform dtype) run: dtype "
                                 "(default): each value as torch computes it in its dtype; "
                                 "exact: exact rationals (the structural run always is)")
    stats = audit.add_argument_group(
        "black-box statistical audit",
        "For samplers that use their own randomness: fn(p, q, rng) gets numpy float64 "
        "arrays and a numpy.random.Generator; counts are tested against the exact p. "
        "A pass only bounds the detectable bias.")
    stats.add_argument("--statistical", action="store_true",
                       help="sample instead of enumerating (--seed seeds the generator)")
    stats.add_argument("--samples", type=_positive_int, metavar="N",
                       help="draws per case (default 30000; 550000 with --batched, "
                            "500000 sequences for --batched --signature chain)")
    _add_batched_options(stats)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        msg = f"{text!r} is not a positive number of seconds"
        raise argparse.ArgumentTypeError(msg)
    return value


def _add_batched_options(stats: argparse._ArgumentGroup) -> None:
    stats.add_argument("--batched", action="store_true",
                       help="call TARGET once per batch: fn(P, Q, generator) -> tokens with "
                            "P, Q of shape [N, V]; with --signature chain --gamma K, "
                            "fn(draft_ids [N, K], draft_probs [N, K, V], target_probs "
                            "[N, K+1, V], generator) -> [N, K+1] padded with -1. "
                            "Without --statistical, with --torch --signature chain or hf: "
                            "judge the batched function exactly on the batch properties "
                            "(row law, independence, batch invariance, and seeds when it "
                            "takes generators)")
    stats.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                       help="--batched torch code: device of the tensors and generators "
                            "(default cpu)")
    stats.add_argument("--array", choices=("auto", "numpy", "torch"), default="auto",
                       help="what P and Q are: numpy float64 arrays or torch tensors of "
                            "--dtype (default auto: torch when TARGET's module imports "
                            "torch; --torch means torch)")
    stats.add_argument("--generators", choices=("shared", "per-row", "seeded-dict"),
                       default="shared",
                       help="--batched: the generator argument: one generator (shared), a "
                            "list with a generator or None per row (per-row), or "
                            "{row: generator} for the seeded rows (seeded-dict); unseeded "
                            "rows must use the global generator, seeded from --seed")
    stats.add_argument("--batch-rows", type=_positive_int, metavar="N",
                       help="--batched: rows per call, at most (default 65536)")


FLOAT_FORMATS = ("float64", "float32")


def _settle_floats(args: argparse.Namespace) -> None:
    """Check --floats FORMAT; in ``audit --floats TARGET`` the TARGET is not a FORMAT."""
    fmt = getattr(args, "floats", None)
    if fmt is None or fmt in FLOAT_FORMATS:
        return
    if args.target is None and ":" in fmt:
        args.target, args.floats = fmt, "float64"
        return
    choices = ", ".join(repr(f) for f in FLOAT_FORMATS)
    msg = f"argument --floats: invalid choice: {fmt!r} (choose from {choices})"
    raise UsageError(msg)


def _check_catalogue_options(args: argparse.Namespace) -> None:
    """``audit`` without TARGET runs each catalogue rule with its own settings: refuse
    the options it would silently ignore."""
    given = [flag for flag, value in (
        ("--kind", args.kind), ("--vocab-sizes", args.vocab_sizes),
        ("--horizon", args.horizon), ("--stateful", getattr(args, "stateful", None) or None),
        ("--processors", getattr(args, "processors", None)),
        ("--floats", args.floats), ("--arrays", args.arrays or None),
        ("--uniform-bits", args.uniform_bits), ("--statistical", args.statistical or None))
        if value is not None] + statistical_flags_given(args)
    if given:
        verb = "needs" if len(given) == 1 else "need"
        msg = (f"{', '.join(given)} {verb} a TARGET; without one, audit checks the bundled "
               "catalogue, where only --examples, --seed, --jobs, --executor and --json apply")
        raise UsageError(msg)


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.command == "audit":
        if args.target is None:
            from specexact.frontends.cli.catalogue_cmd import audit_catalogue

            if args.project.targets:
                return _audit_configured(args, out, err)
            _check_catalogue_options(args)
            if not args.quiet:
                err.write("specexact: no targets configured in [tool.specexact] "
                          "(pyproject.toml); auditing the bundled catalogue\n")
            default_jobs = args.project.jobs if args.project.jobs is not None \
                else catalogue_jobs()
            with parallel_audit(args, default_jobs) as executor:
                return audit_catalogue(as_json=args.json, executor=executor,
                                       examples=args.examples, seed=args.seed, out=out,
                                       err=err)
        from specexact.frontends.cli.audit_cmd import audit_target

        return audit_target(args, out=out, err=err)
    if args.command == "prove":
        from specexact.frontends.cli.prove_cmd import run_prove

        code: int = run_prove(args.target, args.vocab_size, as_json=args.json, out=out,
                              err=err, first=args.first, uniform_bits=args.uniform_bits,
                              kind=args.kind, horizon=args.horizon, plot=args.plot)
        return code
    if args.command == "explain":
        from specexact.frontends.cli.catalogue_cmd import explain

        return explain(args.name, as_json=args.json, out=out)
    if args.command == "catalogue":
        from specexact.frontends.cli.catalogue_cmd import list_catalogue

        return list_catalogue(as_json=args.json, markdown=args.markdown, out=out)
    if args.command == "power":
        from specexact.frontends.cli.power_cmd import run_power

        return run_power(args, out=out, err=err)
    if args.command == "mutate":
        from specexact.frontends.cli.mutate_cmd import run_mutate

        return run_mutate(args, out=out, err=err, parser=build_parser)
    msg = f"unknown command {args.command!r}"
    raise UsageError(msg)


def _audit_configured(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from specexact.frontends.cli.audit_cmd import audit_target
    from specexact.frontends.cli.project_cmd import audit_configured

    return audit_configured(args.project, args.given, parser=build_parser,
                            settle=_settle_floats, run_one=lambda a, o, e: audit_target(
                                a, out=o, err=e),
                            out=out, err=err, machine=args.json, quiet=args.quiet)


def _settle(args: argparse.Namespace, arguments: Sequence[str]) -> None:
    """Read the project's [tool.specexact] table; settle --floats and the output format."""
    from specexact.frontends.cli.project_cmd import project_config

    _settle_floats(args)
    args.project = project_config(build_parser())
    # the options typed after the command (they win over the table)
    args.given = list(arguments[arguments.index(args.command) + 1:])
    if args.command == "audit" and args.target is None and not args.project.targets:
        defaults = args.project.defaults
        for key in ("seed", "examples"):
            if f"--{key}" not in args.given and key in defaults:
                setattr(args, key, _int_at_least(str(defaults[key]), 0))
    settle_output(args, fmt=args.project.format, color=args.project.color)
    check_plot_option(args)


def _fail(message: str, *, status: str, argv: Sequence[str], out: TextIO, err: TextIO,
          args: argparse.Namespace | None = None, code: int = EXIT_ERROR,
          cause: BaseException | None = None) -> int:
    fmt = getattr(args, "format", None) or format_in_argv(argv)
    if fmt is not None and fmt != "text":
        command = getattr(args, "command", None) or command_in_argv(argv)
        kind = getattr(args, "resolved_kind", None) or getattr(args, "kind", None)
        # the audit's fields where the audit has them; every command: verdict and error
        data: dict[str, Any] = {"verdict": status, "kind": kind, "cases": 0,
                                "counterexample": None, "error": message} \
            if command == "audit" else {"verdict": status, "error": message}
        if isinstance(cause, BudgetExceeded):
            # What was settled before the budget ran out, and where it stopped.
            data["budget"] = {"limit": cause.limit,
                              "settled_mass": str(cause.resolved_mass),
                              "settled_fraction": float(cause.resolved_mass),
                              "first_undecided_path": None if cause.path is None
                              else list(cause.path)}
        if getattr(args, "target", None):
            data["target"] = args.target  # type: ignore[union-attr]
        if command == "prove":
            data["status"] = status
        write_document(out, fmt, command, data, code)
    line = f"specexact: {'error' if status == 'error' else status}: {message}\n"
    colour = getattr(args, "colour", None)
    err.write(colour_error(line) if (colour_in_argv(argv) if colour is None else colour)
              else line)
    return code


def _silence_stdout() -> None:
    """The reader of stdout went away (``| head``): drop the rest quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _hypothesis_files_to_cache() -> None:
    """Keep Hypothesis's files (its constants cache) out of the user's working directory.

    The command sets them under ``$XDG_CACHE_HOME/specexact/hypothesis``
    (``~/.cache/...``) unless ``HYPOTHESIS_STORAGE_DIRECTORY`` says where they
    go; searches use no example database unless the user's own settings name one.
    """
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    from hypothesis.configuration import set_hypothesis_home_dir

    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    set_hypothesis_home_dir(os.path.join(cache, "specexact", "hypothesis"))


@contextlib.contextmanager
def _interrupts() -> Iterator[list[int] | None]:
    """Record a real SIGINT (a list that gets the signal) while the body runs, so that a
    KeyboardInterrupt the code under test raises itself is told from one: None where
    Python's default handler is not in place (not the main thread, a caller's handler)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield None
        return
    received: list[int] = []

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None,
         err: TextIO | None = None, supervised: bool = False) -> int:
    """Run ``specexact`` with ``argv`` (default ``sys.argv[1:]``) in this process; return
    the exit code.

    The ``specexact`` command runs this in a supervised child process
    (:func:`specexact.supervise.command`), so the audited code can forge neither the
    report nor the exit code; there (``supervised``) an interrupt of the command reaches
    the supervisor, never this process, so a KeyboardInterrupt here is the code's own.
    """
    if argv is None:  # run as the ``specexact`` command, not called from Python
        _hypothesis_files_to_cache()
    arguments = list(sys.argv[1:] if argv is None else argv)
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    with _interrupts() as received:
        return _main(arguments, stdout, stderr, [] if supervised else received)


def _main(arguments: list[str], stdout: TextIO, stderr: TextIO,
          received: list[int] | None) -> int:
    args: argparse.Namespace | None = None

    def fail(message: str, status: str, code: int = EXIT_ERROR,
             cause: BaseException | None = None) -> int:
        return _fail(message, status=status, argv=arguments, out=stdout, err=stderr,
                     args=args, code=code, cause=cause)

    try:
        try:
            args = build_parser().parse_args(arguments)
        except SystemExit as exc:  # --help
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        _settle(args, arguments)
        configure_progress(quiet=args.quiet, verbose=args.verbose,
                           color=args.color or args.project.color or "auto")
        try:
            # With --json, stdout holds one JSON object: anything else printed while
            # the target is imported or run (prints at module level included) goes to
            # stderr.  The report itself is written to ``stdout``, captured above.
            quiet = contextlib.redirect_stdout(stderr) if args.json \
                else contextlib.nullcontext()
            report = io.StringIO()
            with quiet:
                code = _run(args, report, stderr)
            if args.format != "text":
                write_document(stdout, args.format, args.command, report.getvalue(), code)
            else:
                stdout.write(colour_report(report.getvalue()) if args.colour
                             else report.getvalue())
            return code
        except SystemExit as exc:
            # Only the code under test can get here: its exit must never read as a pass.
            msg = f"the code under test called sys.exit({exc.code!r}) instead of returning"
            raise Undecided(msg) from None
        except (Exception, KeyboardInterrupt):
            raise
        except BaseException as exc:
            # GeneratorExit or a home-made BaseException from the code under test: the
            # engine only records Exceptions as crashes, so no verdict, and no traceback.
            name = type(exc).__name__
            msg = (f"the code under test raised {f'{name}({exc})' if str(exc) else name}, "
                   "a BaseException that is not an Exception")
            raise Undecided(msg) from None
    except KeyboardInterrupt:
        if received is not None and not received:
            # No SIGINT reached the command: the code under test raised it, or signalled
            # its own process.
            return fail("no verdict possible: the code under test raised KeyboardInterrupt "
                        "(or sent SIGINT to its own process) while no interrupt reached "
                        "specexact; a sampler must return a token", "undecided")
        stderr.write("specexact: interrupted\n")
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_ERROR
    except UsageError as exc:
        return fail(str(exc), "error")
    except OutputUnwritable as exc:
        return fail(str(exc), "error", EXIT_OUTPUT)
    except Undecided as exc:
        return fail(f"no verdict possible: {exc}", "undecided", cause=exc)
    except InvalidInput as exc:
        return fail(str(exc), "error")
    except SamplerFailure as exc:
        return fail(f"the code under test failed: {exc}", "fail", EXIT_VIOLATION)
    except SpecexactError as exc:
        return fail(str(exc), "error")
    except Exception as exc:
        if os.environ.get("SPECEXACT_DEBUG") or getattr(args, "verbose", False):
            traceback.print_exc(file=stderr)
        detail = f"{type(exc).__name__}: {exc}"
        return fail(f"internal error ({detail}); set SPECEXACT_DEBUG=1 to see the traceback",
                    "error")
