"""The ``specexact`` command's entry point, a supervisor: the audited code cannot forge
the result.

This module imports nothing of specexact's own until it runs the command in the
supervised child, so the supervising process stays light.

The command runs itself again in a child process, in a session of its own, and
the report and exit code travel back over a pipe only specexact writes to.  The
parent prints the report and sets the exit code; whatever the audited code does
in the child (``os._exit(0)`` at import, ``posix._exit``, ``exec``, ``atexit``
handlers, forks, threads left running) can end the child, but never turn into
a verdict:

* the child ends without a report: UNDECIDED (exit 2), saying how it ended;
* after the report, the child's whole process group is killed: forks and
  threads of the audited code cannot keep the command alive or print late;
* ``--max-seconds S``: past S seconds the group is killed, UNDECIDED;
* SIGINT or SIGTERM to the parent: the group is killed, one line, exit 130 / 143;
* an unwritable report (``/dev/full``, a closed stdout): exit 3 (output error);
  a reader that went away (``| head``) keeps the verdict's exit code, quietly.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any, TextIO

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OUTPUT",
    "WORKER_FD",
    "command",
    "run_supervised",
    "send_result",
]

#: The variable that tells the child which file descriptor carries its result.
WORKER_FD = "SPECEXACT_RESULT_FD"
#: Exit code when the report cannot be written.
EXIT_OUTPUT = 3
#: Exit code after SIGINT (SIGTERM gives 143), as shells report them.
EXIT_INTERRUPTED = 130
_UNDECIDED = 2


def send_result(fd: int, code: int, out: str) -> None:
    """In the child: hand the report and its exit code to the supervisor, as one line of
    JSON on the file descriptor ``fd``."""
    data = json.dumps({"code": code, "out": out}).encode() + b"\n"
    with os.fdopen(fd, "wb", closefd=True) as pipe:
        pipe.write(data)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def _how_it_ended(status: int | None) -> str:
    if status is None:
        return "it did not end"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"it was killed by {name}"
    return f"it exited with status {status}"


def _max_seconds(argv: Sequence[str]) -> float | None:
    """``--max-seconds S`` from the arguments, for every command (None without it)."""
    for i, arg in enumerate(argv):
        text = arg.partition("=")[2] if arg.startswith("--max-seconds=") else (
            argv[i + 1] if arg == "--max-seconds" and i + 1 < len(argv) else None)
        if text is not None:
            try:
                value = float(text)
            except ValueError:
                return None
            return value if value > 0 else None
    return None


def _write(stream: TextIO | None, text: str, err: TextIO | None) -> int | None:
    """Write the report; None when written (or the reader left), else the exit code."""
    if stream is None:
        if err is not None:
            with contextlib.suppress(OSError, ValueError):
                err.write("specexact: error: cannot write the report: standard output is "
                          "closed\n")
        return EXIT_OUTPUT
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
        return None
    except (OSError, ValueError) as exc:
        if err is not None:
            with contextlib.suppress(OSError, ValueError):
                err.write(f"specexact: error: cannot write the report: {exc}\n")
        return EXIT_OUTPUT
    return None


def run_supervised(argv: Sequence[str]) -> int:
    """Run ``specexact argv`` in a supervised child; print its report; its exit code."""
    read_fd, write_fd = os.pipe()
    env = {**os.environ, WORKER_FD: str(write_fd)}
    command = [sys.executable, "-m", "specexact", *argv]
    interrupted: list[int] = []
    proc = subprocess.Popen(command, env=env, pass_fds=(write_fd,), start_new_session=True,
                            stdin=subprocess.DEVNULL)
    os.close(write_fd)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        interrupted.append(signum)
        _kill_group(proc)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    limit = _max_seconds(argv)
    chunks: list[bytes] = []
    timed_out = False
    try:
        deadline = None if limit is None else time.monotonic() + limit
        os.set_blocking(read_fd, False)
        while True:
            if deadline is not None and time.monotonic() > deadline:
                timed_out = True
                break
            try:
                chunk = os.read(read_fd, 1 << 16)
            except BlockingIOError:
                if proc.poll() is not None and not _readable(read_fd):
                    break
                time.sleep(0.02)
                continue
            if not chunk:
                break
            chunks.append(chunk)
            if chunk.endswith(b"\n"):  # the whole report (forks may hold the pipe open)
                break
    finally:
        os.close(read_fd)
        _kill_group(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if interrupted:
        signum = interrupted[0]
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("specexact: interrupted\n")
        return EXIT_INTERRUPTED if signum == signal.SIGINT else 128 + signum
    result = _result(b"".join(chunks))
    if result is None:
        why = (f"the run went past --max-seconds {limit:g}" if timed_out else
               f"the process running the audited code ended before it reported a verdict "
               f"({_how_it_ended(proc.returncode)}): the code under test, or what it "
               "started, ended or replaced the process (os._exit, exec, a signal)")
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"specexact: undecided: no verdict possible: {why}\n")
        failed = _undecided_document(argv, f"no verdict possible: {why}")
        return _UNDECIDED if failed is None else failed
    code, out = result
    failed = _write(sys.stdout, out, sys.stderr)
    return code if failed is None else failed


def _undecided_document(argv: Sequence[str], message: str) -> int | None:
    """With a machine format, the report document of a run without a report (so that
    CI still reads one object, a SARIF log, ...); None, or the output error's code."""
    from specexact.frontends.cli.output import (
        command_in_argv,
        format_in_argv,
        write_document,
    )

    fmt = format_in_argv(argv)
    if fmt is None:
        return None
    text = io.StringIO()
    payload: dict[str, Any] = {"verdict": "undecided", "cases": 0, "counterexample": None,
                               "error": message}
    command = command_in_argv(argv)
    if command == "prove":
        payload["status"] = "undecided"
    write_document(text, fmt, command, payload, _UNDECIDED)
    return _write(sys.stdout, text.getvalue(), sys.stderr)


def _readable(fd: int) -> bool:
    import select

    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)


def _result(data: bytes) -> tuple[int, str] | None:
    try:
        parsed: Any = json.loads(data.decode())
        return int(parsed["code"]), str(parsed["out"])
    except (ValueError, KeyError, TypeError):
        return None


def command() -> int:
    """The ``specexact`` console script and ``python -m specexact``: supervise a child
    that runs the command, or, in that child, run it and send the report."""
    if os.environ.get("SPECEXACT_NO_SUPERVISOR"):  # one process (debugging specexact)
        from specexact.frontends.cli.main import main

        return main()
    if WORKER_FD not in os.environ:
        return run_supervised(sys.argv[1:])
    # The supervised child.  A specexact the audited code starts is not a worker.
    fd = int(os.environ.pop(WORKER_FD))
    from specexact.frontends.cli.main import main

    report = io.StringIO()
    code = main(None, out=report, err=sys.stderr)
    send_result(fd, code, report.getvalue())
    return code
