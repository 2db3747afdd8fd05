"""Run the user's tests and specexact's audit on each mutant, in an isolated copy.

The project is copied once into a temporary directory; each mutant is written
there in place of the original file, the user's test command is run in the copy
(its cwd, first on ``PYTHONPATH``) with a time limit, and the mutant is audited
by ``specexact audit`` in its own supervised process: the same audit, options and
verdicts as the command, and a mutant that hangs or kills its process is an
UNDECIDED verdict, never a pass.  The original files are never written.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Literal

from specexact.errors import InvalidArgument, Undecided
from specexact.mutation.operators import find_mutants, get_operators
from specexact.mutation.report import AuditVerdict, MutantResult, MutationReport, TestOutcome

__all__ = ["MUTANT_ENV", "mutate"]

#: Set in the environment of every command a mutation run starts: the mutant's id
#: (``M3``), or ``original`` for the run on the unmutated copy.  A test that runs
#: ``specexact mutate`` itself skips when it is set (the ``specexact_mutate`` fixture
#: does), so the mutation test does not mutate again inside its own runs.
MUTANT_ENV = "SPECEXACT_MUTANT"

#: Folders never copied: version control, environments, caches, build outputs.
_IGNORED = shutil.ignore_patterns(".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox",
                                  "__pycache__", ".mypy_cache", ".pytest_cache",
                                  ".ruff_cache", ".hypothesis", "node_modules", "*.egg-info",
                                  "build", "dist")
#: Exit codes of a shell whose command could not be run (not executable, not found).
_NOT_RUN = (126, 127)
_TAIL_LINES = 15
_BACKSTOP_S = 60.0


def _split_target(target: str, root: Path | None) -> tuple[Path, str, Path]:
    """The file, the function and the project root of ``path/to/file.py:fn``."""
    path_part, sep, function = target.rpartition(":")
    if not sep or not path_part.endswith(".py") or not function:
        msg = (f"target {target!r} must look like 'path/to/file.py:function' (mutation "
               "testing rewrites the file)")
        raise InvalidArgument(msg)
    path = Path(path_part).resolve()
    if not path.is_file():
        msg = f"no such file: {path_part}"
        raise InvalidArgument(msg)
    cwd = Path.cwd().resolve()
    base = Path(root).resolve() if root is not None else \
        (cwd if path.is_relative_to(cwd) else path.parent)
    if not base.is_dir():
        msg = f"root={str(root)!r} is not a directory"
        raise InvalidArgument(msg)
    if not path.is_relative_to(base):
        msg = f"{path_part} is not inside the project root {base}"
        raise InvalidArgument(msg)
    return path, function, base


def _environment(copy: Path, root: Path) -> dict[str, str]:
    """The tests' environment: the copy first on PYTHONPATH (its src/ too), entries that
    pointed into the project redirected to the copy, no bytecode written."""
    env = dict(os.environ)
    entries = [str(copy)] + ([str(copy / "src")] if (copy / "src").is_dir() else [])
    for entry in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
        resolved = Path(entry).resolve()
        entries.append(str(copy / resolved.relative_to(root))
                       if resolved.is_relative_to(root) else entry)
    env["PYTHONPATH"] = os.pathsep.join(entries)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env[MUTANT_ENV] = "original"
    return env


def _tail(text: str) -> str:
    return "\n".join(text.rstrip().splitlines()[-_TAIL_LINES:])


def _run(command: Sequence[str] | str, cwd: Path, env: dict[str, str],
         timeout: float | None) -> tuple[int | None, str]:
    """Run ``command`` in its own session; (exit code or None on timeout, output)."""
    process = subprocess.Popen(command, shell=isinstance(command, str), cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return None, out + err
    finally:
        # whatever the command left running in its session
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, out + err


def _run_tests(command: str, copy: Path, env: dict[str, str],
               timeout: float | None) -> tuple[TestOutcome, str]:
    try:
        code, output = _run(command, copy, env, timeout)
    except OSError as exc:
        return "error", str(exc)
    if code is None:
        return "timeout", _tail(output)
    if code in _NOT_RUN:
        return "error", _tail(output)
    return ("survived" if code == 0 else "killed"), _tail(output)


def _audit(spec: str, copy: Path, env: dict[str, str], audit_args: Sequence[str],
           seconds: float | None) -> tuple[AuditVerdict | Literal["error"], str | None]:
    """``specexact audit SPEC --json`` on the copy: its verdict and reason."""
    command = [sys.executable, "-m", "specexact", "audit", spec, "--json", *audit_args]
    if seconds is not None:
        command += ["--max-seconds", f"{seconds:g}"]
    try:
        # --max-seconds stops the audit; the process's own limit is only a backstop.
        process = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True,
                                 check=False, timeout=None if seconds is None
                                 else seconds + _BACKSTOP_S)
    except subprocess.TimeoutExpired:
        return "undecided", f"the audit did not end within {seconds:g} s"
    code = process.returncode
    try:
        data = json.loads(process.stdout)
    except json.JSONDecodeError:
        data = {}
    verdict = data.get("verdict") if isinstance(data, dict) else None
    if verdict == "pass" and code == 0:
        return "pass", None
    if verdict == "fail" and code == 1:
        found = data.get("counterexample")
        reason = found.get("reason") if isinstance(found, dict) else None
        return "fail", reason if isinstance(reason, str) else data.get("error")
    message = data.get("error") if isinstance(data, dict) else None
    if not isinstance(message, str):
        lines = process.stderr.strip().splitlines()
        message = lines[-1] if lines else f"the audit exited {code} without a report"
    # An error report is the audit's refusal (a bad option); anything else without a
    # verdict (a hang stopped by --max-seconds, a killed process) is undecided.
    return ("error" if verdict == "error" else "undecided"), message


def _check_original(spec: str, copy: Path, env: dict[str, str], tests: str,
                    audit_args: Sequence[str], timeout: float | None,
                    seconds: float | None) -> tuple[float, float]:
    """The tests pass and specexact passes on the original; the wall seconds of each."""
    start = time.monotonic()
    outcome, output = _run_tests(tests, copy, env, timeout)
    tests_seconds = time.monotonic() - start
    if outcome != "survived":
        what = "could not be run" if outcome == "error" else "fail on the original code"
        msg = (f"the tests {what}; mutation testing needs a passing test command "
               f"(tests={tests!r}). Its last lines:\n{output}")
        raise InvalidArgument(msg)
    start = time.monotonic()
    verdict, detail = _audit(spec, copy, env, audit_args, seconds)
    audit_seconds = time.monotonic() - start
    if verdict == "error":
        msg = f"specexact audit {spec} {' '.join(audit_args)}: {detail}"
        raise InvalidArgument(msg)
    if verdict == "fail":
        msg = (f"specexact finds the original {spec} wrong ({detail}); mutation testing "
               "needs a correct original (run specexact audit on it)")
        raise InvalidArgument(msg)
    if verdict == "undecided":
        msg = f"the audit of the original {spec} reached no verdict: {detail}"
        raise Undecided(msg)
    return tests_seconds, audit_seconds


def mutate(target: str, tests: str, *, root: str | os.PathLike[str] | None = None,
           operators: Sequence[str] | None = None, audit_args: Sequence[str] = (),
           timeout: float | None = None, audit_seconds: float | None = None,
           progress: Callable[[int, int, MutantResult], None] | None = None
           ) -> MutationReport:
    """Mutation-test the tests of ``target`` (``path/to/file.py:function``).

    Each mutant of the function (and of the module's functions it calls) by
    ``operators`` (names of :data:`~specexact.mutation.OPERATORS`; default all) is
    written into a temporary copy of ``root`` (default: the current directory when
    the file is inside it, else the file's folder); ``tests``, a shell command, is
    run there (cwd and first on PYTHONPATH) with ``timeout`` seconds (default 5x
    the original run's, at least 10 s); ``specexact audit`` judges the mutant with
    ``audit_args`` (``["--torch", "--signature", "chain"]``) and ``audit_seconds``
    (default 10x the original's audit, at least 60 s).  The tests and the audit
    must pass on the original: otherwise :class:`~specexact.errors.InvalidArgument`
    (or :class:`~specexact.errors.Undecided` when its audit reaches no verdict).
    """
    if os.environ.get(MUTANT_ENV):
        msg = (f"mutate() called inside a mutation run ({MUTANT_ENV}="
               f"{os.environ[MUTANT_ENV]}): the test that runs it is part of its own "
               "test command; leave it out of the command, or use the specexact_mutate "
               "fixture, which skips there")
        raise InvalidArgument(msg)
    if not isinstance(tests, str) or not tests.strip():
        msg = f"tests={tests!r} must be a shell command, like 'python -m pytest -q tests'"
        raise InvalidArgument(msg)
    for name, value in (("timeout", timeout), ("audit_seconds", audit_seconds)):
        if value is not None and not value > 0:
            msg = f"{name}={value!r} must be a positive number of seconds"
            raise InvalidArgument(msg)
    chosen = get_operators(operators)
    path, function, base = _split_target(target, Path(root) if root is not None else None)
    relative = path.relative_to(base)
    source = path.read_text()
    mutants = find_mutants(source, function, path=relative.as_posix(), operators=chosen)
    if not mutants:
        names = ", ".join(op.name for op in chosen)
        msg = f"no place in {target} where an operator applies ({names})"
        raise InvalidArgument(msg)
    spec = f"{relative.as_posix()}:{function}"
    with tempfile.TemporaryDirectory(prefix="specexact-mutate-") as tmp:
        copy = Path(tmp) / base.name
        shutil.copytree(base, copy, ignore=_IGNORED, symlinks=True)
        env = _environment(copy, base)
        tests_seconds, audit_base = _check_original(spec, copy, env, tests, audit_args,
                                                    timeout, audit_seconds)
        limit = timeout if timeout is not None else max(10.0, 5 * tests_seconds)
        audit_limit = audit_seconds if audit_seconds is not None \
            else max(60.0, 10 * audit_base)
        results: list[MutantResult] = []
        written = copy / relative
        for i, mutant in enumerate(mutants):
            written.write_text(mutant.source)
            env[MUTANT_ENV] = mutant.id
            outcome, output = _run_tests(tests, copy, env, limit)
            verdict, detail = _audit(spec, copy, env, audit_args, audit_limit)
            result = MutantResult(mutant, outcome,
                                  "undecided" if verdict == "error" else verdict,
                                  detail, output)
            results.append(result)
            if progress is not None:
                progress(i + 1, len(mutants), result)
    return MutationReport(target, tests, tuple(audit_args), chosen, tuple(results))
