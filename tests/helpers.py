"""What many test files share: running the CLI, writing target modules, the plain step.

Known right and wrong samplers come from the catalogue itself
(``from specexact.counterexamples.samplers import textbook, naive_resample``);
only what the catalogue does not hold lives here.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specexact.frontends.cli import main

__all__ = ["plain_step", "run_cli", "run_cli_json", "run_specexact", "target", "write_module"]


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``specexact ARGV`` in this process: the exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def run_cli_json(*argv: str) -> tuple[int, Any]:
    """``specexact ARGV --json`` in this process: the exit code and the one JSON object that
    is all of stdout (an error with a traceback fails the test)."""
    code, out, err = run_cli(*argv, "--json")
    assert "Traceback" not in err, err
    return code, json.loads(out)


def run_specexact(*argv: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                  timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m specexact ARGV`` in a fresh process (for exits, workers and signals)."""
    return subprocess.run([sys.executable, "-m", "specexact", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def write_module(directory: Path, name: str, source: str) -> Path:
    """Write ``source`` (dedented) as ``directory/name.py`` and return its path."""
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def target(path: Path, name: str) -> str:
    """The CLI's ``FILE:FUNCTION`` for function ``name`` in the module at ``path``."""
    return f"{path}:{name}"


def plain_step(target: Any, draft: Any, prefix: Any, rng: Any) -> tuple[Any, ...]:
    """Sample one token from the target and ignore the draft: lossless by construction."""
    return (rng.categorical(target(prefix)),)
