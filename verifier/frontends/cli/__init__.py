"""The ``specexact`` command line: ``audit``, ``prove``, ``explain`` and ``catalogue``.

Exit codes, as ruff and mypy use them: 0 no violation found, 1 a violation
was found, 2 a usage error or no verdict was possible.
"""

from __future__ import annotations

from specexact.frontends.cli.main import main

__all__ = ["main"]
