"""Load the function to audit from ``pkg.module:function`` or ``path/to/file.py:function``."""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specexact.errors import InvalidArgument

__all__ = ["article", "load_target", "target_location"]

#: Import names before specexact installed as one package; a target spelt the old way is
#: still found (with a FutureWarning) when no module of that name exists.
_RENAMED = {"verifier": "specexact", "properties": "specexact.properties",
            "counterexamples": "specexact.counterexamples"}


def _renamed(spec: str) -> str | None:
    head, dot, rest = spec.partition(".")
    new = _RENAMED.get(head)
    return None if new is None else new + dot + rest


def _load_module(spec: str) -> Any:
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        path = Path(spec)
        if not path.is_file():
            siblings = [p.name for p in path.parent.glob("*.py")] if path.parent.is_dir() else []
            close = difflib.get_close_matches(path.name, siblings, n=3)
            hint = f"; did you mean {', '.join(str(path.parent / c) for c in close)}?" \
                if close else ""
            msg = f"no such file: {spec}{hint}"
            raise InvalidArgument(msg)
        name = f"_specexact_target_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            msg = f"cannot import {spec} as a Python module"
            raise InvalidArgument(msg)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        parent = str(path.resolve().parent)
        if parent not in sys.path:
            sys.path.insert(0, parent)
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            msg = f"importing {spec} failed: {type(exc).__name__}: {exc}"
            raise InvalidArgument(msg) from exc
        return module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        renamed = _renamed(spec)
        if renamed is not None and exc.name == spec.partition(".")[0]:
            warnings.warn(f"target module {spec!r} is now {renamed!r}; the old name is "
                          "deprecated", FutureWarning, stacklevel=2)
            return _load_module(renamed)
        msg = f"cannot import module {spec!r}: {exc}"
        raise InvalidArgument(msg) from exc
    except Exception as exc:
        msg = f"importing {spec!r} failed: {type(exc).__name__}: {exc}"
        raise InvalidArgument(msg) from exc


def load_target(target: str) -> Callable[..., Any]:
    """Import and return the callable named by ``module:function`` or ``file.py:function``.

    A misspelt function name gets a suggestion of near-miss names.
    """
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        msg = (f"target {target!r} must look like 'package.module:function' "
               "or 'path/to/file.py:function'")
        raise InvalidArgument(msg)
    module = _load_module(module_part)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            msg = f"{module_part} has no attribute {part!r}{hint}"
            raise InvalidArgument(msg)
        obj = getattr(obj, part)
    if not callable(obj):
        msg = f"{target} is {article(type(obj).__name__)}, not a function"
        raise InvalidArgument(msg)
    result: Callable[..., Any] = obj
    return result


def article(noun: str) -> str:
    """``noun`` with its indefinite article: "an int", "a float"."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _module_file(spec: str) -> Path | None:
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        return Path(spec)
    module = sys.modules.get(spec)
    file = getattr(module, "__file__", None)
    if file is None:
        try:
            found = importlib.util.find_spec(spec)
        except (ImportError, ValueError):
            return None
        file = None if found is None else found.origin
    return None if file is None or not str(file).endswith(".py") else Path(file)


def _definition_line(tree: ast.Module, parts: list[str]) -> int | None:
    """The line of ``a.b.c``'s ``def`` (or ``class``, or assignment) in ``tree``."""
    body: list[ast.stmt] = tree.body
    line: int | None = None
    for part in parts:
        line = None
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and node.name == part:
                line, body = node.lineno, node.body
            elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == part for t in node.targets):
                line, body = node.lineno, []
        if line is None:
            return None
    return line


def target_location(target: str) -> tuple[str, int] | None:
    """Where ``target`` (``file.py:fn`` or ``pkg.module:fn``) is defined: its file, relative
    to the current directory when inside it (``/``-separated), and the line of its ``def``;
    None when the source cannot be found.  The file is parsed, never imported."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        return None
    path = _module_file(module_part)
    if path is None or not path.is_file():
        return None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    line = _definition_line(tree, attr.split(".")) or 1
    resolved = path.resolve()
    try:
        shown = resolved.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        shown = resolved.as_posix()
    return shown, line
