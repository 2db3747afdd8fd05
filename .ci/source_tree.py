"""Lay out the sources under their one import name, for the type checker and the layer linter.

The design card keeps ``verifier/``, ``properties/`` and ``counterexamples/`` as top-level
folders; setuptools installs them as ``specexact``, ``specexact.properties`` and
``specexact.counterexamples`` (``package-dir`` in pyproject.toml). mypy and import-linter
read a source tree, not an install, so this script builds ``build/src/specexact``: a folder
of symbolic links to the real files. Errors point at ``build/src/specexact/...``; drop that
prefix and map ``specexact/`` to ``verifier/`` (or ``specexact/properties`` to
``properties/``) to find the file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "src" / "specexact"
NESTED = {"properties": ROOT / "properties", "counterexamples": ROOT / "counterexamples"}


def main() -> None:
    if TREE.exists():
        shutil.rmtree(TREE)
    TREE.mkdir(parents=True)
    for entry in sorted((ROOT / "verifier").iterdir()):
        if entry.name == "__pycache__":
            continue
        (TREE / entry.name).symlink_to(entry)
    for name, target in NESTED.items():
        (TREE / name).symlink_to(target)
    print(f"source tree: {TREE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
