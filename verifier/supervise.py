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
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO, cast

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OUTPUT",
    "WORKER_FD",
    "command",
    "run_supervised",
    "send_result",
    "snapshot",
    "tampered",
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


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _in_group(pid: int, group: int) -> bool:
    """Whether process ``pid`` belongs to the child's process group ``group``."""
    if pid == group:
        return True
    try:
        return os.getpgid(pid) == group
    except (ProcessLookupError, PermissionError):
        return False


def _sent_by(proc: subprocess.Popen[bytes]) -> Callable[[float], tuple[int, bool] | None]:
    """A wait for SIGINT or SIGTERM (blocked while the child runs): the signal and
    whether the child's process group sent it, or None after ``timeout`` seconds."""

    def wait(timeout: float) -> tuple[int, bool] | None:
        info = signal.sigtimedwait(_SIGNALS, timeout)
        if info is None:
            return None
        return info.si_signo, _in_group(info.si_pid, proc.pid)

    return wait


def run_supervised(argv: Sequence[str]) -> int:
    """Run ``specexact argv`` in a supervised child; print its report; its exit code."""
    read_fd, write_fd = os.pipe()
    env = {**os.environ, WORKER_FD: str(write_fd)}
    command = [sys.executable, "-m", "specexact", *argv]
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)  # taken by sigtimedwait below
    try:
        proc = subprocess.Popen(command, env=env, pass_fds=(write_fd,),
                                start_new_session=True, stdin=subprocess.DEVNULL)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        raise
    os.close(write_fd)
    wait_signal = _sent_by(proc)
    limit = _max_seconds(argv)
    chunks: list[bytes] = []
    timed_out = False
    interrupted: tuple[int, bool] | None = None
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
                interrupted = wait_signal(0.02)
                if interrupted is not None:
                    break
                continue
            if not chunk:
                break
            chunks.append(chunk)
            if chunk.endswith(b"\n"):  # the whole report (forks may hold the pipe open)
                break
    finally:
        os.close(read_fd)
        _kill_group(proc)
        while wait_signal(0) is not None:  # signals sent meanwhile: the run is over
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    if interrupted is not None and not interrupted[1]:
        signum = interrupted[0]
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("specexact: interrupted\n")
        return EXIT_INTERRUPTED if signum == signal.SIGINT else 128 + signum
    result = None if interrupted is not None else _result(b"".join(chunks))
    if result is None:
        if interrupted is not None:
            why = (f"the code under test sent {signal.Signals(interrupted[0]).name} to "
                   "specexact, which a sampler must not do")
        elif timed_out:
            why = f"the run went past --max-seconds {limit:g}"
        else:
            why = (f"the process running the audited code ended before it reported a "
                   f"verdict ({_how_it_ended(proc.returncode)}): the code under test, or "
                   "what it started, ended, interrupted or replaced the process (os._exit, "
                   "exec, a signal)")
        with contextlib.suppress(OSError, ValueError):
            out = _undecided_report(argv, f"no verdict possible: {why}")
            if out:
                _write(sys.stdout, out, sys.stderr)
        return _UNDECIDED
    code, out = result
    failed = _write(sys.stdout, out, sys.stderr)
    return code if failed is None else failed


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


_Snapshot = dict[str, tuple[Any, dict[str, Any]]]


def _namespaces() -> Iterator[tuple[str, Any]]:
    """What the audited code could patch to forge a report: the builtins, specexact's
    modules and the classes they define."""
    import builtins

    yield "builtins", builtins
    for name, module in list(sys.modules.items()):
        if name != "specexact" and not name.startswith("specexact."):
            continue
        yield name, module
        for key, value in list(vars(module).items()):
            if isinstance(value, type) and getattr(value, "__module__", "") == name:
                yield f"{name}.{key}", value


def _callables(namespace: Any) -> dict[str, Any]:
    return {key: value for key, value in list(vars(namespace).items())
            if callable(value) or isinstance(value, (type, staticmethod, classmethod,
                                                      property))}


def snapshot() -> _Snapshot:
    """The functions and classes of :func:`_namespaces`, to compare after the run."""
    return {name: (namespace, _callables(namespace)) for name, namespace in _namespaces()}


def tampered(before: _Snapshot) -> str | None:
    """The first function or class of ``before`` that was replaced or removed since
    (``builtins.sum``), or None.  A name added since is not tampering: specexact's
    package loads some of its names lazily (``specexact.ProcessorPipeline``)."""
    for name, (namespace, entries) in before.items():
        now = _callables(namespace)
        for key in sorted(entries):
            if now.get(key) is not entries[key]:
                return f"{name}.{key}"
    return None


def _undecided_report(argv: Sequence[str], message: str) -> str:
    """Say ``message`` (UNDECIDED) on stderr; the report for stdout: with a machine format
    (``--json``, ``--format sarif``, ...) the report document of a run without a report, so
    that CI still reads one object, a SARIF log, ...; else nothing."""
    from specexact.frontends.cli.output import (
        command_in_argv,
        format_in_argv,
        write_document,
    )

    sys.stderr.write(f"specexact: undecided: {message}\n")
    fmt = format_in_argv(argv)
    if fmt is None:
        return ""
    text = io.StringIO()
    payload: dict[str, Any] = {"verdict": "undecided", "kind": None, "cases": 0,
                               "counterexample": None, "error": message}
    command = command_in_argv(argv)
    if command == "prove":
        payload["status"] = "undecided"
    write_document(text, fmt, command, payload, _UNDECIDED)
    return text.getvalue()


def _tamper_report(argv: Sequence[str], where: str) -> str:
    """The report of a run whose code under test replaced ``where``: UNDECIDED."""
    return _undecided_report(argv, f"no verdict possible: the code under test replaced "
                                   f"{where}, which specexact's own checks and report use, "
                                   "so nothing it computed can be trusted; a sampler must "
                                   "not patch builtins or specexact")


#: How much the code under test may write to stdout and to stderr while it runs.
OUTPUT_LIMIT = 1 << 20


class _Bounded(io.TextIOBase):
    """A stream that passes on at most :data:`OUTPUT_LIMIT` characters written while the
    code under test runs (a sampler printing on each of its executions), then one line
    saying the rest is dropped; what specexact writes itself always passes."""

    def __init__(self, stream: TextIO, name: str, running: Callable[[], bool]) -> None:
        super().__init__()
        self.stream, self.name, self.running, self.written = stream, name, running, 0

    def write(self, text: str) -> int:
        if not self.running():
            return self.stream.write(text)
        before = self.written
        self.written += len(text)
        if self.written <= OUTPUT_LIMIT:
            return self.stream.write(text)
        if before <= OUTPUT_LIMIT:
            self.stream.write(text[:OUTPUT_LIMIT - before])
            with contextlib.suppress(Exception):
                note = sys.__stderr__ or self.stream
                note.write(f"\nspecexact: the code under test wrote over "
                           f"{OUTPUT_LIMIT >> 20} MiB to {self.name}; the rest of what it "
                           "writes there is dropped\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding


#: The modules each command imports lazily, loaded before the snapshot so that patching
#: them is seen too.
_COMMAND_MODULES = {"audit": ("audit_cmd", "catalogue_cmd"), "prove": ("prove_cmd",),
                    "power": ("power_cmd",), "mutate": ("mutate_cmd",),
                    "explain": ("catalogue_cmd",), "catalogue": ("catalogue_cmd",)}


def _preload(command: Sequence[str]) -> None:
    import importlib

    for name in _COMMAND_MODULES.get(command[0] if command else "", ()):
        importlib.import_module(f"specexact.frontends.cli.{name}")


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
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)  # blocked by the supervisor
    # A SIGINT the audited code sends its own process raises KeyboardInterrupt there
    # (no verdict), whatever the command inherited: a parent that ignores SIGINT (a
    # Ray driver, nohup) would leave it ignored and the code's run would go on.  The
    # user's interrupt reaches the supervisor, which has its own session.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from specexact.exact.guards import running
    from specexact.frontends.cli.main import main

    _preload(sys.argv[1:2])
    report = io.StringIO()
    err: TextIO | None = sys.stderr
    if sys.stdout is not None:
        sys.stdout = cast(TextIO, _Bounded(sys.stdout, "stdout", running))
    if err is not None:
        err = sys.stderr = cast(TextIO, _Bounded(err, "stderr", running))
    before = snapshot()
    code = main(None, out=report, err=err, supervised=True)
    out = report.getvalue()
    where = tampered(before)
    if where is not None:
        code, out = _UNDECIDED, _tamper_report(sys.argv[1:], where)
    send_result(fd, code, out)
    return code
