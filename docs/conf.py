"""Sphinx configuration: MyST Markdown pages, furo, autodoc of the public API.

Build (CI runs it with warnings as errors):

    sphinx-build -W --keep-going -b html docs /tmp/specexact-docs

The catalogue and the CLI reference are generated while building, by the directives
of ``_ext/specexact_docs.py``, from ``specexact.counterexamples.catalogue()`` and from
the ``specexact`` command's own argument parser.
"""

from __future__ import annotations

import sys
from importlib.metadata import version as _version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "specexact"
author = "specexact developers"
copyright = "specexact developers"
release = _version("specexact")
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "specexact_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "update_examples.py"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = "specexact"

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": False}
