"""How users reach the engine: audits, reports, assertions, the pytest plugin and the CLI.

Only this subpackage may import :mod:`properties` and :mod:`counterexamples`.
"""

from __future__ import annotations

from specexact.frontends.assertions import (
    assert_crossvocab_preserves_target,
    assert_preserves_target,
    assert_step_preserves_target,
)
from specexact.frontends.audit import AuditOptions, AuditResult

__all__ = [
    "AuditOptions",
    "AuditResult",
    "assert_crossvocab_preserves_target",
    "assert_preserves_target",
    "assert_step_preserves_target",
]
