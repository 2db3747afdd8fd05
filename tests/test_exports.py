"""Each package's public API is exactly its ``__all__``."""

from __future__ import annotations

import importlib
import types

import pytest


@pytest.mark.parametrize("name", ["specexact", "specexact.properties", "specexact.counterexamples"])
def test_all_is_exactly_the_public_api(name):
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    assert sorted(module.__all__) == list(module.__all__), "keep __all__ sorted"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"
    public = {
        attr for attr, value in vars(module).items()
        if not attr.startswith("_") and not isinstance(value, types.ModuleType)
        and attr != "annotations"
    }
    assert public == exported, f"public but not exported: {public - exported}"
