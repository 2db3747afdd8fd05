"""Re-run every notebook here in a fresh kernel and save its outputs in place.

    python notebooks/execute.py            # all notebooks
    python notebooks/execute.py 02         # the ones whose name contains "02"

Outputs are deterministic (every search is seeded), so re-running only
changes a notebook when the code it shows changed.  Needs nbclient,
nbformat, ipykernel and matplotlib.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def execute_in_place(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(HERE)}}).execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # timestamps would change every run
    nbformat.write(notebook, path)


def main(patterns: list[str]) -> None:
    for path in sorted(HERE.glob("*.ipynb")):
        if not patterns or any(p in path.name for p in patterns):
            print(f"executing {path.name}", flush=True)
            execute_in_place(path)


if __name__ == "__main__":
    main(sys.argv[1:])
