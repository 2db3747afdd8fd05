"""``python -m specexact.doors.cli`` is the ``specexact`` command."""

from __future__ import annotations

import sys

from specexact.doors.cli.main import main

sys.exit(main())
