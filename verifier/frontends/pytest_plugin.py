"""pytest plugin (registered through the ``pytest11`` entry point as ``specexact``).

* Options for :func:`specexact.assert_preserves_target` and
  :func:`specexact.assert_step_preserves_target`: ``--specexact-examples N``,
  ``--specexact-seed N``, ``--specexact-vocab-sizes A..B`` and
  ``--specexact-horizon N`` on the command line, or the ini settings
  ``specexact_examples``, ``specexact_seed``, ``specexact_vocab_sizes`` and
  ``specexact_horizon``.  The command line wins over the ini file.
* ``@pytest.mark.specexact(examples=..., vocab_sizes=..., ...)`` sets the
  defaults for one test (or class, or module).
* Hypothesis: without ``--specexact-seed``, ``--hypothesis-seed`` seeds the
  search; with ``--hypothesis-profile``, the loaded profile's settings
  (max_examples, database, phases) are handed to the search.
* The ``specexact_mutate`` fixture runs :func:`specexact.mutate` from a test
  (``specexact_mutate("sampler.py:fn", tests="python -m pytest -q tests/x.py")``,
  the project root defaulting to pytest's rootdir) and returns the
  :class:`~specexact.mutation.MutationReport`; ``report.assert_killed()`` fails the
  test with the table of mutants when one survives.  The fixture skips the test
  inside a mutation run of its own, so the command may include it.
* ``[tool.specexact]`` in the project's ``pyproject.toml`` (the table the command
  reads): its ``seed``, ``examples``, ``vocab-sizes`` and ``horizon`` are the
  assertions' defaults when neither the command line nor the ini file sets them, and
  ``--specexact-targets`` adds one test item per configured target, audited as
  ``specexact audit`` would (in the test process), failing with the report.
* ``assert law == p`` on a :class:`~specexact.Distribution` shows an exact
  per-token diff; like the witness tables of failed assertions, it leaves
  out identical outcomes beyond the first few unless pytest runs with ``-vv``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Generator, Hashable, Mapping
from fractions import Fraction
from typing import Any

import pytest

from specexact.audit import parse_integer, parse_vocab_sizes
from specexact.distribution import Distribution, total_variation
from specexact.errors import InvalidArgument
from specexact.frontends import assertions
from specexact.tables import omit_identical, render_table, signed

_INI = {
    "specexact_examples": "generated cases per specexact assertion (default: the search's own)",
    "specexact_seed": "seed of the specexact search (default 0)",
    "specexact_vocab_sizes": "vocabulary sizes for specexact assertions, like 2..4",
    "specexact_horizon": "tokens whose joint law specexact step assertions compare",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specexact", "exact checks of speculative samplers")
    group.addoption("--specexact-examples", type=int, default=None, metavar="N",
                    help="generated cases per assert_preserves_target call")
    group.addoption("--specexact-seed", type=int, default=None, metavar="N",
                    help="seed of the search (default: --hypothesis-seed, else 0)")
    group.addoption("--specexact-vocab-sizes", default=None, metavar="A..B",
                    help="vocabulary sizes (default 2..5 for samplers, 2..3 for steps)")
    group.addoption("--specexact-horizon", type=int, default=None, metavar="N",
                    help="horizon of step assertions (default 3)")
    group.addoption("--specexact-targets", action="store_true", default=False,
                    help="add one test per target of [tool.specexact] in pyproject.toml, "
                         "audited as 'specexact audit' would")
    for name, text in _INI.items():
        parser.addini(name, text, default=None)


def _project(config: pytest.Config) -> Any:
    """The ``[tool.specexact]`` table above pytest's rootdir (a usage error when bad)."""
    from specexact.frontends.cli.main import build_parser
    from specexact.frontends.cli.project_cmd import config_keys
    from specexact.frontends.config import find_config

    try:
        return find_config(config.rootpath, valid=config_keys(build_parser()))
    except InvalidArgument as exc:
        raise pytest.UsageError(str(exc)) from None


def _int_setting(config: pytest.Config, name: str, minimum: int = 0) -> int | None:
    value = config.getoption(f"--{name.replace('_', '-')}")
    if value is None:
        raw = config.getini(name)
        if raw in (None, "", []):
            raw = _project(config).defaults.get(name.removeprefix("specexact_"))
        if raw is None:
            return None
        value = str(raw).strip()
    try:
        return parse_integer(str(value), minimum)
    except ValueError as exc:
        msg = f"{name} = {exc}"
        raise pytest.UsageError(msg) from None


def _session_options(config: pytest.Config) -> dict[str, Any]:
    options: dict[str, Any] = {
        "examples": _int_setting(config, "specexact_examples"),
        "seed": _int_setting(config, "specexact_seed"),
        "horizon": _int_setting(config, "specexact_horizon", minimum=1),
    }
    sizes = config.getoption("--specexact-vocab-sizes") or config.getini("specexact_vocab_sizes") \
        or _project(config).defaults.get("vocab-sizes")
    if isinstance(sizes, list) and len(sizes) == 2:
        sizes = f"{sizes[0]}..{sizes[1]}"
    if sizes:
        try:
            options["vocab_sizes"] = parse_vocab_sizes(str(sizes))
        except InvalidArgument as exc:
            raise pytest.UsageError(f"specexact_vocab_sizes: {exc}") from None
    if options["seed"] is None:
        options["seed"] = _hypothesis_seed(config)
    if _option(config, "--hypothesis-profile") is not None:
        import hypothesis

        # The loaded profile (max_examples, database, phases) drives the search.
        options["settings"] = hypothesis.settings()
    return options


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # Hypothesis's plugin not loaded
        return None


def _hypothesis_seed(config: pytest.Config) -> int | None:
    seed = _option(config, "--hypothesis-seed")
    if seed is None:
        return None
    try:
        return int(seed)
    except ValueError:
        # Hypothesis accepts any string as a seed; map it to an int stably.
        import zlib

        return zlib.crc32(str(seed).encode())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "specexact(**options): defaults for assert_preserves_target / "
        "assert_step_preserves_target in this test (vocab_sizes, horizon, examples, "
        "seed, uniform_bits, budget, settings, stateful, one_hot_target)")
    assertions.set_session_defaults(_session_options(config))
    assertions.set_verbose(config.get_verbosity() > 1)


def pytest_unconfigure(config: pytest.Config) -> None:
    assertions.set_session_defaults({})
    assertions.set_verbose(True)


def pytest_report_header(config: pytest.Config) -> str | None:
    options = {k: v for k, v in _session_options(config).items()
               if v is not None and k != "settings"}
    if not options:
        return None
    shown = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
    return f"specexact: {shown}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    overrides: dict[str, Any] = {}
    # closest marker last, so a test's marker beats its class's and module's
    for marker in reversed(list(item.iter_markers("specexact"))):
        if marker.args:
            msg = (f"{item.nodeid}: @pytest.mark.specexact takes keyword options only, "
                   f"got positional {marker.args!r}")
            raise pytest.UsageError(msg)
        overrides.update(marker.kwargs)
    if not overrides:
        yield
        return
    with assertions.option_defaults(**overrides):
        yield


class TargetAuditFailed(Exception):
    """A configured target's audit did not pass: its report and exit code."""

    def __init__(self, code: int, report: str) -> None:
        super().__init__(report)
        self.code = code
        self.report = report


class SpecexactTarget(pytest.Item):
    """One target of ``[tool.specexact]``, audited as ``specexact audit`` would."""

    def __init__(self, *, argv: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.argv = argv

    def runtest(self) -> None:
        from specexact.frontends.cli.main import main

        out, err = io.StringIO(), io.StringIO()
        code = main([*self.argv, "-q"], out=out, err=err)
        if code != 0:
            raise TargetAuditFailed(code, out.getvalue() + err.getvalue())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, TargetAuditFailed):
            what = {1: "FAIL", 2: "no verdict (exit 2)"}.get(excinfo.value.code,
                                                             f"exit {excinfo.value.code}")
            return f"specexact audit {' '.join(self.argv[1:])}: {what}\n{excinfo.value.report}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        from specexact.frontends.targets import target_location

        found = target_location(self.argv[1])
        if found is None:
            return self.path, None, f"specexact audit {self.argv[1]}"
        return found[0], found[1] - 1, f"specexact audit {self.argv[1]}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if not config.getoption("--specexact-targets"):
        return
    from specexact.frontends.config import target_argv

    project = _project(config)
    if not project.targets:
        msg = (f"--specexact-targets: no targets in [tool.specexact] (looked from "
               f"{config.rootpath} upwards for a pyproject.toml with the table)")
        raise pytest.UsageError(msg)
    for i, item in enumerate(project.targets):
        argv = target_argv(project, i)
        items.append(SpecexactTarget.from_parent(session, name=f"{item['target']}[{i}]",
                                                 argv=argv))


@pytest.fixture
def specexact_mutate(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``specexact_mutate(target, tests, **options)`` -> the
    :class:`~specexact.mutation.MutationReport` of :func:`specexact.mutate`, with
    ``root`` defaulting to pytest's rootdir; skips inside a mutation run."""
    from specexact.mutation import MUTANT_ENV, mutate

    if os.environ.get(MUTANT_ENV):
        pytest.skip(f"inside specexact mutate's own run ({MUTANT_ENV}="
                    f"{os.environ[MUTANT_ENV]})")

    def run(target: str, tests: str, **options: Any) -> Any:
        options.setdefault("root", request.config.rootpath)
        return mutate(target, tests, **options)

    return run


# --------------------------------------------------------------------------
# Readable failures for `assert law == p`
# --------------------------------------------------------------------------


def _as_distribution(value: Any) -> Distribution | None:
    if isinstance(value, Distribution):
        return value
    try:
        if isinstance(value, Mapping):
            return Distribution(value)
        if isinstance(value, (list, tuple)):
            return Distribution.from_probabilities(list(value))
    except (TypeError, ValueError):
        return None
    return None


def _label(outcome: Hashable) -> str:
    if isinstance(outcome, tuple):
        return "(" + ", ".join(map(str, outcome)) + ")"
    return str(outcome) if isinstance(outcome, int) else repr(outcome)


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any,
                              right: Any) -> list[str] | None:
    """An exact per-outcome diff when a Distribution is compared with ``==``.

    Outcomes that differ come first; beyond a few, the identical ones are
    left out unless pytest runs with ``-vv``.
    """
    if op != "==" or not (isinstance(left, Distribution) or isinstance(right, Distribution)):
        return None
    a, b = _as_distribution(left), _as_distribution(right)
    if a is None or b is None:
        return None
    difference = a.difference(b)
    lines = [f"exact laws differ on {len(difference)} outcome(s), "
             f"TV = {total_variation(a, b)}"]
    keys = list(a) + [k for k in b if k not in a]
    rows = []
    same = []
    for key in sorted(keys, key=lambda k: (k not in difference, keys.index(k))):
        delta = difference.get(key, Fraction(0))
        rows.append((_label(key), str(a.prob(key)), str(b.prob(key)), signed(delta),
                     "<--" if delta else ""))
        same.append(not delta)
    shown, footer = omit_identical(rows, same, verbose=config.get_verbosity() > 1)
    lines.extend(render_table(("outcome", "left", "right", "left - right", ""), shown,
                              rule=False, footer=footer).splitlines())
    if a.total != b.total:
        lines.append(f"total mass: left {a.total}, right {b.total}")
    return lines
