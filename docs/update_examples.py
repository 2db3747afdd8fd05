"""Run every example of README.md and docs/, and check or rewrite the outputs they show.

    python docs/update_examples.py                    # rewrite every shown output in place
    python docs/update_examples.py docs/how-to/prove.md README.md   # only these pages
    python docs/update_examples.py --check            # change nothing; a diff and exit 1
                                                      # where an output drifted

``tests/docs/test_examples.py`` runs ``--check`` on each page, so a message changed in
the code fails the tests until this script is run and its diff committed.

What runs, by the language of each fenced block:

* ``python`` whose first line is ``# NAME.py``: written as NAME.py into the page's
  working folder, for the commands and imports after it (nothing runs).
* other ``python``: executed, in page order, in one namespace per page; it must not
  raise and shows no output.
* ``pycon``: each ``>>>`` line (with its ``...`` continuations) runs in that namespace;
  the lines after it, up to the next ``>>>``, are its output: what it printed, the
  repr of an expression's value, or ``Traceback (most recent call last):``, ``  ...``
  and the exception.
* ``console``: each ``$`` line (a trailing backslash continues it) runs in bash in the
  page's working folder, with the ``specexact`` and ``python`` of this interpreter
  first on PATH; the lines up to the next ``$`` are its stdout and stderr together.
  ``$?`` is the exit status of the command before.
* ``sh``, ``text``, ``ini``, ``toml``, ``json``, ``yaml`` and MyST directives are shown, never
  run; an ``sh`` block may not hold a ``$`` prompt (that is a console block).

Trailing blank lines of an output are not part of it.  Each page runs in a fresh
process and a fresh working folder; the folder's path, where an output shows it, is
written as ``.``.
"""

from __future__ import annotations

import argparse
import difflib
import io
import os
import re
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import chdir, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>`{3,}|~{3,})[ ]*(?P<info>[^`\s]*)[^`]*$")
FILE_LINE = re.compile(r"^# (?P<name>[\w./-]+\.py)\s*$")
RUN = ("python", "pycon", "console")
SHOWN = ("sh", "text", "ini", "toml", "json", "yaml", "")
COMMAND_TIMEOUT_S = 300


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@dataclass
class Block:
    """One fenced code block: ``lines`` without the fence's indent, ``start`` the
    index of its first content line in the page."""

    info: str
    indent: str
    start: int
    lines: list[str]
    new_lines: list[str] = field(default_factory=list)


def blocks(text_lines: list[str]) -> Iterator[Block]:
    """The code blocks of a Markdown page (MyST directive fences are looked into)."""
    directives: list[str] = []
    i = 0
    while i < len(text_lines):
        match = FENCE.match(text_lines[i])
        if match is None:
            i += 1
            continue
        indent, fence, info = match["indent"], match["fence"], match["info"]
        if not info and directives and fence.startswith(directives[-1]):
            directives.pop()
            i += 1
            continue
        if info.startswith("{"):
            directives.append(fence)
            i += 1
            continue
        end = i + 1
        while end < len(text_lines):
            close = FENCE.match(text_lines[end])
            if close and not close["info"] and close["fence"].startswith(fence):
                break
            end += 1
        else:
            msg = f"line {i + 1}: the block opened here is never closed"
            raise ValueError(msg)
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                for line in text_lines[i + 1:end]]
        yield Block(info, indent, i + 1, body)
        i = end + 1


def _split_output(lines: list[str]) -> tuple[list[str], list[str]]:
    """An output's lines and the blank lines after it (kept as they are)."""
    cut = len(lines)
    while cut > 0 and not lines[cut - 1].strip():
        cut -= 1
    return lines[:cut], lines[cut:]


@dataclass
class Page:
    path: Path
    workdir: Path
    namespace: dict[str, object] = field(default_factory=dict)
    last_status: int = 0
    errors: list[str] = field(default_factory=list)

    def where(self, block: Block, offset: int = 0) -> str:
        return f"{self.path.relative_to(ROOT)}:{block.start + offset + 1}"

    def clean(self, text: str) -> str:
        return text.replace(str(self.workdir), ".")

    # -- python -------------------------------------------------------------------

    def run_python(self, block: Block) -> None:
        first = block.lines[0] if block.lines else ""
        named = FILE_LINE.match(first)
        if named:
            target = self.workdir / named["name"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(block.lines[1:]) + "\n")
            return
        source = "\n".join(block.lines) + "\n"
        try:
            with chdir(self.workdir), redirect_stdout(io.StringIO()):
                exec(compile(source, self.where(block), "exec"), self.namespace)
        except BaseException:
            self.errors.append(f"{self.where(block)}: the python block raised\n"
                               f"{traceback.format_exc()}")

    def run_statement(self, source: str, where: str) -> str:
        out = io.StringIO()
        try:
            code = compile(source, where, "single")
            with chdir(self.workdir), redirect_stdout(out):
                exec(code, self.namespace)
        except BaseException as exc:
            shown = "".join(traceback.format_exception_only(exc))
            out.write(f"Traceback (most recent call last):\n  ...\n{shown}")
        return self.clean(out.getvalue())

    def run_pycon(self, block: Block) -> None:
        lines, new = block.lines, []
        i = 0
        while i < len(lines):
            if not lines[i].startswith(">>>"):
                self.errors.append(f"{self.where(block, i)}: a pycon block starts with >>>")
                block.new_lines = lines
                return
            start = i
            source = [lines[i][4:]]
            i += 1
            while i < len(lines) and (lines[i].startswith("... ") or lines[i] == "..."):
                source.append(lines[i][4:])
                i += 1
            end = i
            while i < len(lines) and not lines[i].startswith(">>>"):
                i += 1
            _, blank = _split_output(lines[end:i])
            got = self.run_statement("\n".join(source) + "\n", self.where(block, start))
            new += lines[start:end] + got.rstrip("\n").splitlines() + blank
        block.new_lines = new

    # -- console ------------------------------------------------------------------

    def run_command(self, command: str) -> str:
        bin_dir = str(Path(sys.executable).parent)
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               "PYTHONUNBUFFERED": "1", "COLUMNS": "80",
               "HYPOTHESIS_STORAGE_DIRECTORY": str(self.workdir / ".hypothesis")}
        # What the examples show must not depend on where they run: CI=true changes
        # pytest's summary (no truncation) and Hypothesis's profile.
        for name in ("SPECEXACT_DEBUG", "CI", "GITHUB_ACTIONS", "TF_BUILD", "BUILD_NUMBER"):
            env.pop(name, None)
        done = subprocess.run(
            ["bash", "-c", f"(exit {self.last_status}); {command}"], cwd=self.workdir,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=COMMAND_TIMEOUT_S, check=False)
        self.last_status = done.returncode
        return self.clean(done.stdout)

    def run_console(self, block: Block) -> None:
        lines, new = block.lines, []
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                self.errors.append(f"{self.where(block, i)}: a console block starts with $")
                block.new_lines = lines
                return
            start = i
            command = [lines[i][2:]]
            while command[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                command.append(lines[i])
            i += 1
            end = i
            while i < len(lines) and not lines[i].startswith("$ "):
                i += 1
            _, blank = _split_output(lines[end:i])
            got = self.run_command("\n".join(command))
            new += lines[start:end] + got.rstrip("\n").splitlines() + blank
        block.new_lines = new

    # -- the page -----------------------------------------------------------------

    def run(self, block: Block) -> None:
        block.new_lines = block.lines
        if block.info == "python":
            self.run_python(block)
        elif block.info == "pycon":
            self.run_pycon(block)
        elif block.info == "console":
            self.run_console(block)
        elif block.info == "sh" and any(line.startswith("$ ") for line in block.lines):
            self.errors.append(f"{self.where(block)}: a $ prompt in an sh block; make it a "
                               "console block, which runs")
        elif block.info not in SHOWN:
            self.errors.append(f"{self.where(block)}: unknown block language "
                               f"{block.info!r} (run: {', '.join(RUN)}; shown: "
                               f"{', '.join(s for s in SHOWN if s)})")


def run_page(path: Path) -> tuple[str, str, list[str]]:
    """The page's text as it is, as it should be, and the errors met."""
    text = path.read_text()
    lines = text.split("\n")
    with tempfile.TemporaryDirectory(prefix="specexact-docs-") as tmp:
        page = Page(path, Path(tmp).resolve())
        sys.path.insert(0, str(page.workdir))
        try:
            found = list(blocks(lines))
            for block in found:
                page.run(block)
        finally:
            sys.path.remove(str(page.workdir))
    out: list[str] = []
    cursor = 0
    for block in found:
        out += lines[cursor:block.start]
        out += [f"{block.indent}{line}" if line else line for line in block.new_lines]
        cursor = block.start + len(block.lines)
    out += lines[cursor:]
    return text, "\n".join(out), page.errors


def one_page(path: Path, *, check: bool) -> int:
    old, new, errors = run_page(path)
    for error in errors:
        print(error, file=sys.stderr)
    shown = str(path.relative_to(ROOT))
    if old != new:
        if check:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                f"{shown} (shown)", f"{shown} (as run now)"))
            print(f"{shown}: shown outputs differ from the outputs now; run "
                  f"python docs/update_examples.py {shown}", file=sys.stderr)
            return 1
        path.write_text(new)
        print(f"{shown}: outputs rewritten")
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path,
                        help="pages to run (default: README.md and docs/**/*.md)")
    parser.add_argument("--check", action="store_true",
                        help="rewrite nothing; print a diff and exit 1 where outputs drifted")
    args = parser.parse_args(argv)
    chosen = [p.resolve() for p in args.pages] or pages()
    if len(chosen) == 1:
        return one_page(chosen[0], check=args.check)
    status = 0
    for path in chosen:  # a fresh process per page: a fresh namespace and imports
        command = [sys.executable, __file__, str(path), *(["--check"] if args.check else [])]
        status |= subprocess.run(command, check=False).returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
