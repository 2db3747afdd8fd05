"""pytest plugin: readable exact diffs when comparing Distributions."""

from __future__ import annotations

from typing import Any

from verifier.distribution import Distribution


def pytest_assertrepr_compare(config: Any, op: str, left: Any, right: Any) -> list[str] | None:
    if op != "==" or not (isinstance(left, Distribution) or isinstance(right, Distribution)):
        return None
    dist, other = (left, right) if isinstance(left, Distribution) else (right, left)
    try:
        diff = dist.difference(other)
    except TypeError:
        return None
    lines = ["exact distributions differ:", "outcome: left - right"]
    sign = 1 if dist is left else -1
    for outcome, delta in diff.items():
        lines.append(f"  {outcome!r}: {sign * delta}")
    return lines
