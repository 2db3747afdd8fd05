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


def coalesce_streams(outputs: list) -> list:
    """Join consecutive writes to one stream: the kernel splits a print into
    messages by flush timing, which would make saved outputs depend on load."""
    joined: list = []
    for output in outputs:
        if (output.output_type == "stream" and joined
                and joined[-1].output_type == "stream"
                and joined[-1].name == output.name):
            joined[-1].text += output.text
        else:
            joined.append(output)
    return joined


def execute_in_place(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(HERE)}}).execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # timestamps would change every run
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
    nbformat.write(notebook, path)


def main(patterns: list[str]) -> None:
    for path in sorted(HERE.glob("*.ipynb")):
        if not patterns or any(p in path.name for p in patterns):
            print(f"executing {path.name}", flush=True)
            execute_in_place(path)


if __name__ == "__main__":
    main(sys.argv[1:])
