"""``python -m specexact.frontends.cli`` is the ``specexact`` command."""

from __future__ import annotations

from specexact.supervise import command

raise SystemExit(command())
