"""The command follows the conventions of the tools it sits next to in CI (issue 26)."""

from __future__ import annotations

import io
import sys

import pytest

from specexact import MissingDependency
from specexact.floats.scalars import numpy_module
from specexact.frontends.cli.main import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--version")[0] == 0
    assert capsys.readouterr().out.startswith("specexact ")


@pytest.mark.parametrize(("argv", "suggestion"), [
    (("adit", "x.py:f"), "did you mean 'audit'?"),
    (("audit", "x.py:f", "--kind", "stpe"), "did you mean 'step'?"),
    (("prove", "x.py:f", "--vocab-size", "2", "--kind", "sampelr"), "did you mean 'sampler'?"),
])
def test_a_mistyped_choice_gets_a_suggestion_and_a_one_line_usage_hint(argv, suggestion):
    code, out, err = run(*argv)
    assert code == 2 and out == ""
    assert err.startswith("specexact: error: ")
    assert suggestion in err
    assert len(err.splitlines()) == 2 and "--help" in err.splitlines()[1]


def test_prove_errors_have_the_same_prefix(tmp_path):
    (tmp_path / "two.py").write_text("def f(p, q):\n    return 0\n")
    code, _, err = run("prove", f"{tmp_path / 'two.py'}:f", "--vocab-size", "2")
    assert code == 2
    assert err.startswith("specexact: error: ")


@pytest.mark.parametrize("argv", [("audit", "x.py:f"), ("prove", "x.py:f", "--vocab-size", "2"),
                                  ("explain", "naive-resample"), ("catalogue",), ("power",)])
def test_quiet_and_verbose_are_taken_after_every_command(argv):
    from specexact.frontends.cli.main import build_parser

    assert build_parser().parse_args([*argv, "-q"]).quiet
    assert build_parser().parse_args([*argv, "-v"]).verbose


def test_install_hints_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(MissingDependency, match=r"pip install 'specexact\[stats\]'"):
        numpy_module("float mode")
