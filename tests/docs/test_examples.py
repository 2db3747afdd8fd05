"""Every example of README.md and docs/ runs, and shows the output it gives now.

Each page is run by ``docs/update_examples.py --check`` in its own process (see that
script for what runs); a drifted output fails with a diff.  Refresh the outputs with
``python docs/update_examples.py`` and commit the diff.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "update_examples.py"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

README_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/specexact audit",
    "python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && .venv/bin/python -m pytest",
)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
@pytest.mark.slow
def test_examples_show_what_they_print(page):
    done = subprocess.run([sys.executable, str(SCRIPT), "--check", str(page)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250, "README.md: at most 250 lines; the rest is in docs/"
    for command in README_COMMANDS:
        assert f"\n{command}\n" in text, f"README.md lost the newcomer's command: {command}"


def test_readme_links_exist():
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\((?!https?:|#)([^)#\s]+)(?:#[^)\s]*)?\)", text)
    assert targets, "README.md links into docs/"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
