"""How users reach the audit: assertions, the pytest plugin and the CLI.

They parse what the user gave, call :mod:`specexact.audit` (or another mode) and
print; the policy and the reports are the audit layer's.
"""

from __future__ import annotations

from specexact.audit import AuditOptions, AuditResult
from specexact.frontends.assertions import (
    assert_crossvocab_preserves_target,
    assert_preserves_target,
    assert_step_preserves_target,
)

__all__ = [
    "AuditOptions",
    "AuditResult",
    "assert_crossvocab_preserves_target",
    "assert_preserves_target",
    "assert_step_preserves_target",
]
