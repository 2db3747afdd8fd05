"""``python -m verifier`` is the ``specexact`` command."""

from __future__ import annotations

from specexact.doors.cli import main

raise SystemExit(main())
