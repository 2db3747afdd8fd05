"""The ``[tool.specexact]`` table of a project's ``pyproject.toml``.

Read by the command line and the pytest plugin.  The table holds defaults for every
target and a list of targets, each with the options of ``specexact audit`` spelt as
keys (``vocab-sizes = "2..4"``, ``torch = true``, ``signature = "chain"``), plus
``mode``::

    [tool.specexact]
    seed = 0
    examples = 100
    format = "text"

    [[tool.specexact.targets]]
    target = "engine/sampler.py:accept"
    vocab-sizes = "2..4"

    [[tool.specexact.targets]]
    target = "engine/chain.py:rejection_sample"
    mode = "torch"
    signature = "chain"
    gamma = 2

Options given on the command line override the table.  An unknown key is an error
that names the valid ones.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specexact.errors import InvalidArgument
from specexact.validation import check_keys, check_type

__all__ = ["MODES", "OUTPUT_KEYS", "ProjectConfig", "find_config", "target_argv"]

#: ``mode = ...`` and the audit flag it stands for.
MODES: dict[str, tuple[str, ...]] = {
    "exact": (), "torch": ("--torch",), "numpy": ("--numpy",), "floats": ("--floats",),
    "statistical": ("--statistical",),
}
#: Keys of the table itself that are not audit options.
OUTPUT_KEYS = ("format", "color", "jobs", "targets")
TABLE = "[tool.specexact]"


@dataclass(frozen=True)
class ProjectConfig:
    """The ``[tool.specexact]`` table (empty when there is none): ``path`` is the
    ``pyproject.toml`` it came from."""

    path: Path | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    targets: tuple[Mapping[str, Any], ...] = ()
    format: str | None = None
    color: str | None = None
    jobs: int | None = None

    @property
    def root(self) -> Path:
        """The folder of the ``pyproject.toml``; relative targets are read from there."""
        return Path.cwd() if self.path is None else self.path.parent

    def describe(self) -> str:
        where = "pyproject.toml" if self.path is None else str(self.path)
        return f"{TABLE} in {where}"


def _read(path: Path) -> Mapping[str, Any] | None:
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        msg = f"cannot read {path}: {exc}"
        raise InvalidArgument(msg) from None
    except OSError:
        return None
    tool = data.get("tool")
    table = tool.get("specexact") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def find_config(start: Path | None = None, *, valid: Iterable[str]) -> ProjectConfig:
    """The nearest ``pyproject.toml`` at or above ``start`` (default: the current
    directory) that has a ``[tool.specexact]`` table, checked against the ``valid``
    option keys; an empty configuration when there is none."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        path = folder / "pyproject.toml"
        if path.is_file():
            table = _read(path)
            if table is not None:
                return _parse(path, table, set(valid))
    return ProjectConfig()


def _parse(path: Path, table: Mapping[str, Any], valid: set[str]) -> ProjectConfig:
    options = valid | {"mode"}
    check_keys(table, TABLE, options | set(OUTPUT_KEYS))
    raw = table.get("targets", [])
    check_type(raw, f"{TABLE} targets", list,
               "a list of tables ([[tool.specexact.targets]]) or of 'file.py:function'")
    targets = []
    for i, item in enumerate(raw):
        name = f"{TABLE} targets[{i}]"
        if isinstance(item, str):
            item = {"target": item}
        check_type(item, name, dict, "a table with target = 'file.py:function' or a string")
        check_keys(item, name, options | {"target"})
        if not isinstance(item.get("target"), str):
            msg = f"{name} needs target = 'path/to/file.py:function' (or 'package.module:fn')"
            raise InvalidArgument(msg)
        targets.append(item)
    defaults = {k: v for k, v in table.items() if k not in OUTPUT_KEYS}
    fmt, color, jobs = table.get("format"), table.get("color"), table.get("jobs")
    for key, value in (("format", fmt), ("color", color)):
        if value is not None:
            check_type(value, f"{TABLE} {key}", str, "a string")
    if jobs is not None:
        check_type(jobs, f"{TABLE} jobs", int, "an integer >= 0")
    return ProjectConfig(path=path, defaults=defaults, targets=tuple(targets), format=fmt,
                         color=color, jobs=jobs)


def _value_args(key: str, value: Any, where: str) -> list[str]:
    flag = f"--{key.replace('_', '-')}"
    if key == "mode":
        if value not in MODES:
            msg = (f"{where} mode = {value!r} must be one of "
                   f"{', '.join(repr(m) for m in MODES)}")
            raise InvalidArgument(msg)
        return list(MODES[value])
    if isinstance(value, bool):
        return [flag] if value else []
    if key == "vocab-sizes" and isinstance(value, list) and len(value) == 2 \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return [flag, f"{value[0]}..{value[1]}"]
    if isinstance(value, (int, float, str)):
        return [flag, str(value)]
    msg = (f"{where} {key} = {value!r} must be a string, a number or a boolean"
           + (" (or [low, high])" if key == "vocab-sizes" else ""))
    raise InvalidArgument(msg)


def _resolve(target: str, root: Path) -> str:
    """A file target relative to the configuration's folder, as seen from the current
    directory."""
    module, sep, attr = target.rpartition(":")
    if not (module.endswith(".py") or "/" in module) or os.path.isabs(module):
        return target
    full = root / module
    try:
        shown = os.path.relpath(full, Path.cwd())
    except ValueError:  # another drive
        shown = str(full)
    return f"{Path(shown).as_posix()}{sep}{attr}"


def target_argv(config: ProjectConfig, index: int,
                given: Sequence[str] = ()) -> list[str]:
    """``specexact audit`` arguments for the configured target ``index``: the table's
    defaults, then the target's own keys, then ``given`` (the command line's options,
    which win)."""
    item = config.targets[index]
    where = f"{TABLE} targets[{index}] ({item['target']})"
    argv = ["audit", _resolve(item["target"], config.root)]
    for key, value in {**config.defaults, **item}.items():
        if key != "target":
            argv += _value_args(key, value, where)
    return [*argv, *given]
