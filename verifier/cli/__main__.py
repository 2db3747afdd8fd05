"""``python -m verifier.cli`` is the ``specexact`` command."""

from __future__ import annotations

import sys

from verifier.cli.main import main

sys.exit(main())
