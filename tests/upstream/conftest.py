"""Audits of unmodified upstream engine functions, read from local git mirrors.

No upstream source is kept in this repository (the code stays its authors');
``upstream_load`` compiles each function from a mirror of its repository at a
fixed commit.  Where the mirrors are absent (CI, a fresh clone) these tests are
not collected at all: they are an evaluation harness for a machine that has the
mirrors (``SPECEXACT_UPSTREAM_MIRRORS``), not part of the suite.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import served_engines
import upstream_engines
import vllm_v1_triton
from upstream_load import available

#: Each test file and the repositories (and commits) it reads.
_NEEDS = {"test_upstream_audits.py": upstream_engines.ALL_REPOSITORIES,
          "test_served_engines.py": served_engines.ALL_REPOSITORIES,
          "test_vllm_v1_triton.py": vllm_v1_triton.ALL_REPOSITORIES}

collect_ignore = [name for name, needs in _NEEDS.items()
                  if not all(available(repo, commit) for repo, commit in needs)]
