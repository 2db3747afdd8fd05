"""specexact installs as one import name, whatever the folders are called in the repository."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import specexact
import specexact.properties

ROOT = Path(__file__).resolve().parent.parent


def test_every_source_package_is_installed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    declared = set(config["packages"])
    found = set()
    for name, folder in mapping.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *parts)))
    assert found <= declared, f"packages missing from pyproject.toml: {sorted(found - declared)}"
    assert declared <= found, f"packages listed with no folder: {sorted(declared - found)}"


def test_a_users_modules_named_like_our_folders_do_not_break_an_audit(tmp_path):
    # The folders of the design card are not import names: a user's properties.py or
    # verifier.py beside the audited file is the user's, and ours still loads.
    for name in ("properties", "verifier", "counterexamples"):
        (tmp_path / f"{name}.py").write_text("raise ImportError('the user module ran')\n")
    (tmp_path / "rule.py").write_text(
        "def textbook(p, q, rng):\n"
        "    x = rng.categorical(q)\n"
        "    if rng.random() * q[x] < p[x]:\n"
        "        return x\n"
        "    r = [max(a - b, 0) for a, b in zip(p, q)]\n"
        "    return rng.categorical([v / sum(r) for v in r])\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "specexact", "audit", "rule.py:textbook", "--examples", "5",
         "--vocab-sizes", "2..3"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS"), done.stdout


def test_the_package_is_importable_under_its_one_name():
    assert specexact.__name__ == "specexact"
    assert specexact.properties.__name__ == "specexact.properties"
