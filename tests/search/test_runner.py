"""The one search runner, the float search from Python, the tables and the option checks."""

from __future__ import annotations

import json
from fractions import Fraction as F

import pytest

from specexact.audit import AuditOptions
from specexact.counterexamples.samplers import naive_resample, textbook
from specexact.errors import InvalidArgument
from specexact.frontends.assertions import assert_preserves_target
from specexact.properties import ExitReason, Phase, search_floats, search_sampler, search_step
from specexact.tables import omit_identical, render_table, signed
from specexact.witness import SamplerWitness, StepWitness, step_witness_json

# The catalogue's rules are plain Python: handed floats, they are float code.
float_naive = naive_resample


def float_textbook(p, q, rng):
    """The textbook rule as float code must be: rounded rows can have p <= q everywhere."""
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    r = [max(a - b, 0) for a, b in zip(p, q, strict=True)]
    return rng.categorical(r) if any(r) else x


def test_a_failure_runs_every_phase_up_to_shrink() -> None:
    result = search_sampler(naive_resample, examples=0)
    assert result.status == "fail"
    assert result.phases == (Phase.explicit, Phase.shrink)
    assert result.exit_reason is ExitReason.found
    assert isinstance(result.witness, SamplerWitness)


def test_a_pass_reports_the_phases_it_ran() -> None:
    result = search_sampler(textbook, vocab_sizes=2, examples=5)
    assert result.passed and result.exit_reason is ExitReason.finished
    assert result.phases[:2] == (Phase.explicit, Phase.generate)


def test_the_step_search_returns_the_one_step_witness_type() -> None:
    from specexact.counterexamples.steps import get_step_rule

    result = search_step(get_step_rule("shared-uniform").rule, examples=0, horizon=2)
    assert result.status == "fail" and isinstance(result.witness, StepWitness)
    assert result.witness.spec is not None


@pytest.mark.slow
def test_float_search_from_python() -> None:
    bad = search_floats(float_naive, examples=0)
    assert bad.status == "fail" and bad.verdict.severity == "structural"
    assert len(bad.witness.p) == 2  # shrunk
    good = search_floats(float_textbook, examples=5)
    assert good.passed


def test_float_mode_from_the_assertion_helper() -> None:
    assert assert_preserves_target(float_textbook, floats="float64", examples=5).passed
    with pytest.raises(AssertionError, match="structural"):
        assert_preserves_target(float_naive, floats="float64", examples=0)


@pytest.mark.parametrize("options", [{"fmt": "float16"}, {"fmt": "float32"},
                                     {"arrays": 1}, {"uniform_bits": True}])
def test_float_search_checks_its_options(options) -> None:
    with pytest.raises(InvalidArgument):
        search_floats(float_textbook, **options)


@pytest.mark.parametrize("options", [{"horizon": True}, {"examples": True}, {"seed": 1.5},
                                     {"uniform_bits": False}, {"vocab_sizes": (True, 3)},
                                     {"kind": "step", "floats": "float64"},
                                     {"arrays": True}, {"stateful": 1, "kind": "step"}])
def test_bools_and_wrong_types_are_not_options(options) -> None:
    with pytest.raises(InvalidArgument):
        AuditOptions(**options)


def test_the_table_renderer_cuts_identical_rows_unless_verbose() -> None:
    rows = [(str(i), signed(F(i % 2, 7)) if i < 2 else "0") for i in range(8)]
    same = [row[1] == "0" for row in rows]
    shown, footer = omit_identical(rows, same, keep=2)
    assert len(shown) == 3 and footer == ["5 identical outcomes omitted, use -vv to show"]
    assert omit_identical(rows, same, verbose=True) == (rows, [])
    text = render_table(("token", "diff"), shown, footer=footer)
    assert text.splitlines()[1] == "-----------"
    assert all(line == line.rstrip() for line in text.splitlines())


def test_one_step_witness_json_lists_rows_shortest_first() -> None:
    rows = {(1, 0): (F(1),), (): (F(1, 2),), (0,): (F(1, 3),)}
    data = json.loads(json.dumps(step_witness_json(rows, rows, 2, None, None)))
    assert list(data["target"]) == ["", "0", "1,0"]
    assert data["expected"] == {} and data["actual"] == {}
