"""``python -m verifier.doors.cli`` is the ``specexact`` command."""

from __future__ import annotations

import sys

from verifier.doors.cli.main import main

sys.exit(main())
