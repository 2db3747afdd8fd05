"""The docs' engine example: ``specexact mutate`` on ``examples/engine`` (a vectorised
torch kernel and a vLLM-style histogram test) prints the table and the scores that
docs/how-to/mutation-testing.md shows.  Slow: eight mutants, each audited in torch exact
mode and run against a 100,000-sample histogram test."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import run_specexact

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "how-to" / "mutation-testing.md"
COMMAND = ("mutate", "rejection_sampler.py:rejection_sample",
           "--tests", "python -m pytest -q -p no:cacheprovider test_rejection_sampler.py",
           "--audit", "--torch --signature chain --gamma 2", "-q")


def shown_report() -> str:
    """The ```text block of the page that follows its 'The report's table' line."""
    text = PAGE.read_text()
    match = re.search(r"The report's table and scores.*?```text\n(.*?)```", text, re.S)
    assert match, "the page lost its engine report"
    return match.group(1)


@pytest.mark.slow
def test_the_engine_example_prints_what_the_docs_show():
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = run_specexact(*COMMAND, cwd=ROOT / "examples" / "engine", env=env, timeout=3000)
    assert done.returncode == 1, done.stderr  # mutants refuted by specexact survive
    head = done.stdout.split("\n\nM", 1)[0]  # the table and scores, not the diffs
    assert head + "\n" == shown_report()
