"""Reference pages generated while the docs build, so that they cannot drift.

* ``{specexact-catalogue} KIND``: the table of the catalogue's rules of one kind
  (``sampler``, ``step``, ``cross-vocab``), from ``specexact.counterexamples.catalogue()``.
* ``{specexact-cli} COMMAND``: usage and options of ``specexact COMMAND`` (``specexact``
  alone: the commands), from the parser of the installed ``specexact`` command.
* ``{specexact-torch-ops}``: the ops and attributes torch exact mode runs.
* ``{specexact-script-table} PATH``: the Markdown table a script of the repository prints
  (``benchmarks/multidraft_gaps.py``).
* ``{specexact-layers}``: the import-linter layer contracts of ``pyproject.toml``.

When the build ends, a public name of ``specexact``, ``specexact.properties`` or
``specexact.counterexamples`` that no page documents, a command without its section,
or a catalogue kind without its table is a warning (an error in CI, under ``-W``).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Sequence
from fractions import Fraction
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

PUBLIC_PACKAGES = ("specexact", "specexact.properties", "specexact.counterexamples")
KINDS = {"sampler": "samplers", "step": "decoding steps", "cross-vocab": "cross-vocabulary steps"}
USAGE_WIDTH = 88


# -- small node builders ----------------------------------------------------------------

Cell = str | nodes.Node


def _cell(value: Cell) -> nodes.entry:
    entry = nodes.entry()
    paragraph = nodes.paragraph()
    paragraph += value if isinstance(value, nodes.Node) else nodes.Text(value)
    entry += paragraph
    return entry


def _table(headers: Sequence[str], rows: Iterable[Sequence[Cell]],
           widths: Sequence[int]) -> nodes.table:
    table = nodes.table(classes=["longtable"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    header = nodes.row()
    for text in headers:
        header += _cell(text)
    head += header
    body = nodes.tbody()
    group += body
    for values in rows:
        row = nodes.row()
        for value in values:
            row += _cell(value)
        body += row
    return table


def _paragraph(text: str) -> nodes.paragraph:
    return nodes.paragraph(text, text)


# -- the catalogue ----------------------------------------------------------------------


def _row(values: Sequence[Any]) -> str:
    return "(" + ", ".join(str(Fraction(v)) for v in values) + ")"


def _verdict(entry: Any) -> str:
    if entry.lossless:
        return "lossless"
    if entry.lossy_by_design:
        return f"lossy (max TV {entry.max_tv})" if entry.max_tv is not None else "lossy"
    return "wrong"


def _models(witness: Any) -> str:
    from specexact import CachedModel, ContextFreeModel

    target, draft = witness.target, witness.draft
    if isinstance(target, ContextFreeModel) and isinstance(draft, ContextFreeModel):
        return f"context-free target {_row(target(()))}, draft {_row(draft(()))}"
    if isinstance(target, CachedModel):
        return "stateful (cached) models with rows per prefix"
    return "models with rows per prefix"


def _witness(entry: Any) -> str:
    from specexact import CrossVocabWitness
    from specexact.counterexamples import SamplerWitness, StepWitness

    witness = entry.witness
    parts: list[str] = []
    if witness is None:
        parts.append("")
    elif isinstance(witness, SamplerWitness):
        parts.append(f"p = {_row(witness.p)}, q = {_row(witness.q)}")
    elif isinstance(witness, StepWitness):
        parts.append(f"{_models(witness)}; horizon {witness.horizon}")
    elif isinstance(witness, CrossVocabWitness):
        target, draft = tuple(witness.target.vocab), tuple(witness.draft.vocab)
        unit = "character" if witness.horizon == 1 else "characters"
        parts.append(f"target vocabulary {target}, draft {draft}; "
                     f"horizon {witness.horizon} {unit}")
    else:
        parts.append(repr(witness))
    if entry.processors is not None:
        parts.append(f"under {entry.processors}")
    if entry.uniform_bits is not None:
        parts.append(f"rng.random() on the {entry.uniform_bits}-bit grid")
    if entry.stateful and witness is None:
        parts.append("stateful models")
    if entry.target_kind != "any":
        parts.append(f"{entry.target_kind} targets only")
    return "; ".join(p for p in parts if p)


class CatalogueDirective(SphinxDirective):
    """The catalogue's rules of one kind, as a table."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        from specexact.counterexamples import catalogue

        kind = self.arguments[0]
        if kind not in KINDS:
            msg = f"specexact-catalogue: kind {kind!r} is not one of {', '.join(KINDS)}"
            raise self.error(msg)
        entries = [e for e in catalogue() if e.kind == kind]
        _rendered(self.env, "kinds").add(kind)
        counts = {label: sum(_verdict(e).split(" ")[0] == label for e in entries)
                  for label in ("lossless", "wrong", "lossy")}
        summary = (f"{len(entries)} {KINDS[kind]}: {counts['lossless']} lossless, "
                   f"{counts['wrong']} wrong, {counts['lossy']} lossy by design.")
        rows = [(nodes.literal(e.name, e.name), _verdict(e), _witness(e),
                 " ".join(e.summary.split()), e.source or "")
                for e in entries]
        headers = ("rule", "verdict", "minimal witness", "what it does", "source")
        return [_paragraph(summary), _table(headers, rows, (14, 8, 22, 40, 16))]


# -- the command line -------------------------------------------------------------------


def command_parser() -> argparse.ArgumentParser:
    """The parser of the installed ``specexact`` command.

    The console script (found from its entry point) is the supervisor; the parser is
    the CLI's that it runs (``specexact.frontends.cli.main.build_parser``).
    """
    (script,) = entry_points(group="console_scripts", name="specexact")
    script.load()  # the command is installed
    from specexact.frontends.cli.main import build_parser

    return build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = parser.formatter_class(prog=parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _option_name(action: argparse.Action) -> Cell:
    text = ", ".join(action.option_strings) or (action.metavar or action.dest)
    return nodes.literal(str(text), str(text))


def _value(action: argparse.Action) -> str:
    if action.nargs == 0 or not action.option_strings:
        return ""
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        shown = "|".join(str(c) for c in action.choices)
    else:
        shown = str(action.metavar or action.dest.upper())
    return f"[{shown}]" if action.nargs == "?" and action.option_strings else shown


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = parser.formatter_class(prog=parser.prog)
    text = formatter._expand_help(action) if action.help else ""
    if action.required and action.option_strings:
        text = f"required. {text}"
    if action.nargs == "+" or action.nargs == "*" or action.nargs == argparse.REMAINDER:
        text = f"{text} (repeatable)".strip() if action.option_strings else text
    return " ".join(text.split())


class CliDirective(SphinxDirective):
    """Usage and options of ``specexact COMMAND``."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        parser = command_parser()
        name = self.arguments[0]
        commands = _subcommands(parser)
        _rendered(self.env, "commands").add(name)
        if name == "specexact":
            return self._top(parser, commands)
        if name not in commands:
            msg = f"specexact-cli: no command {name!r}; the commands: {', '.join(commands)}"
            raise self.error(msg)
        return self._command(commands[name])

    def _top(self, parser: argparse.ArgumentParser,
             commands: dict[str, argparse.ArgumentParser]) -> list[nodes.Node]:
        helps = {}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help or "" for a in action._choices_actions}
        rows = [(nodes.literal(f"specexact {n}", f"specexact {n}"), helps.get(n, ""))
                for n in commands]
        out: list[nodes.Node] = [nodes.literal_block(_usage(parser), _usage(parser))]
        if parser.description:
            out.append(_paragraph(parser.description))
        out.append(_table(("command", "what it does"), rows, (20, 60)))
        if parser.epilog:
            out.append(_paragraph(parser.epilog))
        return out

    def _command(self, parser: argparse.ArgumentParser) -> list[nodes.Node]:
        usage = _usage(parser)
        out: list[nodes.Node] = [nodes.literal_block(usage, usage)]
        if parser.description:
            out.append(_paragraph(" ".join(parser.description.split())))
        for group in parser._action_groups:
            actions = [a for a in group._group_actions if a.help != argparse.SUPPRESS
                       and not isinstance(a, argparse._HelpAction)]
            if not actions:
                continue
            title = group.title or "options"
            section = nodes.rubric(title, title)
            out.append(section)
            if group.description:
                out.append(_paragraph(" ".join(group.description.split())))
            rows = [(_option_name(a), _value(a), _help(parser, a)) for a in actions]
            out.append(_table(("option", "value", "meaning"), rows, (18, 14, 60)))
        if parser.epilog:
            out.append(nodes.literal_block(parser.epilog.strip(), parser.epilog.strip()))
        return out


# -- torch ops --------------------------------------------------------------------------


def supported_torch_ops() -> list[str]:
    """The op table of torch exact mode, wherever the package keeps it."""
    import specexact

    for info in pkgutil.walk_packages(specexact.__path__, "specexact."):
        if info.name.rsplit(".", 1)[-1] == "optable":
            module = importlib.import_module(info.name)
            ops: list[str] = module.supported_ops()
            return ops
    msg = "no optable module with supported_ops() under specexact"
    raise LookupError(msg)


class TorchOpsDirective(SphinxDirective):
    """The ops and attributes torch exact mode runs, comma-separated."""

    def run(self) -> list[nodes.Node]:
        ops = supported_torch_ops()
        paragraph = nodes.paragraph()
        for i, op in enumerate(ops):
            if i:
                paragraph += nodes.Text(", ")
            paragraph += nodes.literal(op, op)
        return [paragraph]


# -- tables printed by the repository's scripts ----------------------------------------


class ScriptTableDirective(SphinxDirective):
    """The Markdown a script of the repository prints (a path from the repository root)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        script = Path(self.env.srcdir).parent / self.arguments[0]
        if not script.is_file():
            raise self.error(f"specexact-script-table: no script {script}")
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=300, check=False)
        if done.returncode:
            raise self.error(f"specexact-script-table: {script} failed:\n{done.stderr}")
        container = nodes.container()
        self.state.nested_parse(StringList(done.stdout.splitlines()), 0, container)
        return list(container.children)


# -- the layer contracts ----------------------------------------------------------------


class LayersDirective(SphinxDirective):
    """The import-linter contracts of ``pyproject.toml``, as lists."""

    def run(self) -> list[nodes.Node]:
        pyproject = Path(self.env.srcdir).parent / "pyproject.toml"
        contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
        out = nodes.bullet_list()
        for contract in contracts:
            item = nodes.list_item()
            item += nodes.paragraph(text=f"{contract['name']} ({contract['type']}):")
            if contract["type"] == "layers":
                text = " > ".join(contract["layers"])
                containers = ", ".join(contract["containers"])
                item += nodes.paragraph(text=f"in {containers}, from the top: {text}")
            elif contract["type"] == "forbidden":
                sources = ", ".join(contract["source_modules"])
                forbidden = ", ".join(contract["forbidden_modules"])
                item += nodes.paragraph(text=f"{sources} never import {forbidden}")
            out += item
        return [out]


# -- nothing left out -------------------------------------------------------------------


def _rendered(env: BuildEnvironment, what: str) -> set[str]:
    store: dict[str, set[str]] = env.__dict__.setdefault("specexact_rendered", {})
    return store.setdefault(what, set())


def check_complete(app: Sphinx, env: BuildEnvironment) -> None:
    documented = set(env.get_domain("py").objects)  # type: ignore[attr-defined]
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            if f"{package}.{name}" not in documented:
                logger.warning("the public name %s.%s is documented on no page "
                               "(add it to docs/reference/api.md)", package, name)
    commands = {"specexact", *_subcommands(command_parser())}
    for name in sorted(commands - _rendered(env, "commands")):
        logger.warning("the command %r has no {specexact-cli} section in the docs", name)
    for kind in sorted(set(KINDS) - _rendered(env, "kinds")):
        logger.warning("the catalogue kind %r has no {specexact-catalogue} table", kind)


SUBSTITUTION = re.compile(r"(?<![\\`])\|(?=[^\s|`])([^|`]*?[^\s|`\\])\|")
INLINE_LITERAL = re.compile(r"(``.+?``)")


def _escape_bars(line: str) -> str:
    parts = INLINE_LITERAL.split(line)
    return "".join(part if i % 2 else SUBSTITUTION.sub(r"\\|\1\\|", part)
                   for i, part in enumerate(parts))


def escape_bars(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                lines: list[str]) -> None:
    """Docstrings are plain text: ``|support of q|`` is a size, not an rST substitution."""
    lines[:] = [_escape_bars(line) for line in lines]


def drop_type_docstrings(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                         lines: list[str]) -> None:
    """A constant has no docstring of its own: not ``int``'s or ``tuple``'s."""
    if what in ("data", "attribute") and not callable(obj) \
            and getattr(obj, "__doc__", None) == type(obj).__doc__:
        lines.clear()


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", escape_bars)
    app.connect("autodoc-process-docstring", drop_type_docstrings)
    app.add_directive("specexact-catalogue", CatalogueDirective)
    app.add_directive("specexact-cli", CliDirective)
    app.add_directive("specexact-torch-ops", TorchOpsDirective)
    app.add_directive("specexact-script-table", ScriptTableDirective)
    app.add_directive("specexact-layers", LayersDirective)
    app.connect("env-check-consistency", check_complete)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
