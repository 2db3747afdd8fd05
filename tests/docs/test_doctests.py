"""The docstring examples (``>>>``) of every module of the installed package run.

Modules are found from the three import roots (``specexact``,
``specexact.properties``, ``specexact.counterexamples``), since setuptools maps
each from its own folder.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

ROOTS = ("specexact", "specexact.properties", "specexact.counterexamples")


def _modules() -> list[str]:
    names: set[str] = set()
    for root in ROOTS:
        package = importlib.import_module(root)
        names.add(root)
        names.update(info.name for info in pkgutil.walk_packages(package.__path__, f"{root}."))
    return sorted(n for n in names if n.rsplit(".", 1)[-1] != "__main__")


MODULES = _modules()


def test_the_docstrings_hold_examples():
    finder = doctest.DocTestFinder()
    examples = sum(len(t.examples) for name in MODULES
                   for t in finder.find(importlib.import_module(name), name))
    assert examples >= 70


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    if not tests:
        return
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test, out=out.append)
    assert not runner.failures, "".join(out)
