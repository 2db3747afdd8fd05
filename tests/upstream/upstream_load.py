"""Load upstream engine functions from git mirrors of their repositories, unmodified.

No upstream source is kept in this repository: each module is compiled either
from a local copy in the git-ignored folder ``tests/upstream/sources/`` (or
``SPECEXACT_UPSTREAM_SOURCES``), laid out as ``owner+name/COMMIT/PATH``, or from
``git show COMMIT:PATH`` of a bare mirror (``SPECEXACT_UPSTREAM_MIRRORS``, default
``/work/.mirror``, one ``owner+name/repo`` git directory per repository), under a
filename naming the repository, commit and path, so specexact's file:line
messages point into the upstream file.  Without either the tests are not collected.
"""

from __future__ import annotations

import linecache
import os
import subprocess
import sys
import types
from typing import Any

MIRRORS = os.environ.get("SPECEXACT_UPSTREAM_MIRRORS", "/work/.mirror")
SOURCES = os.environ.get("SPECEXACT_UPSTREAM_SOURCES",
                         os.path.join(os.path.dirname(os.path.abspath(__file__)), "sources"))


def source_dir(repo: str, commit: str) -> str:
    """The local copy of ``repo`` at ``commit`` (files at their repository paths)."""
    return os.path.join(SOURCES, repo.replace("/", "+"), commit)


def git_dir(repo: str) -> str:
    return os.path.join(MIRRORS, repo.replace("/", "+"), "repo")


def available(repo: str, commit: str) -> bool:
    """Whether a local copy or the mirror of ``repo`` holds ``commit``."""
    if os.path.isdir(source_dir(repo, commit)):
        return True
    if not os.path.isdir(git_dir(repo)):
        return False
    done = subprocess.run(["git", "--git-dir", git_dir(repo), "cat-file", "-e",
                           f"{commit}^{{commit}}"], capture_output=True, check=False)
    return done.returncode == 0


def module(name: str, repo: str, commit: str, path: str) -> types.ModuleType:
    """The module ``path`` of ``repo`` at ``commit``, registered as ``name``."""
    local = os.path.join(source_dir(repo, commit), path)
    if os.path.isfile(local):
        with open(local, encoding="utf-8") as f:
            text = f.read()
    else:
        text = subprocess.run(["git", "--git-dir", git_dir(repo), "show", f"{commit}:{path}"],
                              check=True, capture_output=True, text=True).stdout
    mod = types.ModuleType(name)
    mod.__file__ = f"{repo}@{commit[:7]}:{path}"
    sys.modules[name] = mod
    # the source as inspect sees it (torch.jit.script reads it at import, as from a file)
    linecache.cache[mod.__file__] = (len(text), None, text.splitlines(True), mod.__file__)
    exec(compile(text, mod.__file__, "exec"), mod.__dict__)  # the audited code itself
    return mod


def stub(name: str, **attrs: Any) -> types.ModuleType:
    """A stand-in module for an import the audited function never uses at run time."""
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod
