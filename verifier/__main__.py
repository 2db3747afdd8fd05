"""``python -m verifier`` is the ``specexact`` command."""

from __future__ import annotations

from specexact.frontends.cli import main

raise SystemExit(main())
