"""``python -m specexact.frontends.cli`` is the ``specexact`` command."""

from __future__ import annotations

import sys

from specexact.frontends.cli.main import main

sys.exit(main())
