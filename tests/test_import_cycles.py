"""The specexact package has no import cycle.

Every import counts, at module level or inside a function; only those under
``if TYPE_CHECKING:`` do not.  The graph is grimp's, built from the installed
package: its three folders (``specexact``, ``specexact.properties``,
``specexact.counterexamples``) are laid out as one tree first, since an editable
install keeps them apart and grimp reads one folder per top-level package.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

_NESTED = ("properties", "counterexamples")

_GRAPH = """
import json, grimp
g = grimp.build_graph("specexact", exclude_type_checking_imports=True)
print(json.dumps({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}))
"""


def _folder(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def _lay_out(root: Path) -> None:
    """``root/specexact``: links to the installed package's files, one tree as in a wheel."""
    tree = root / "specexact"
    tree.mkdir()
    for entry in sorted(_folder("specexact").iterdir()):
        if entry.name != "__pycache__" and entry.name not in _NESTED:
            (tree / entry.name).symlink_to(entry)
    for name in _NESTED:
        (tree / name).symlink_to(_folder(f"specexact.{name}"))


def _imports(root: Path) -> dict[str, list[str]]:
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run([sys.executable, "-c", _GRAPH], env=env, cwd=root, check=True,
                         capture_output=True, text=True).stdout
    graph: dict[str, list[str]] = json.loads(out)
    return graph


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": ["b"], "b": []}) == []


def test_the_graph_covers_the_whole_package(tmp_path):
    _lay_out(tmp_path)
    graph = _imports(tmp_path)
    for name in ("specexact.torch.mode", "specexact.properties", "specexact.counterexamples"):
        assert name in graph


def test_specexact_has_no_import_cycle(tmp_path):
    _lay_out(tmp_path)
    cycles = _cycles(_imports(tmp_path))
    assert cycles == [], "import cycles:\n" + "\n".join(map(str, cycles))
