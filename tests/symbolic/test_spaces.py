"""The prover's two spaces share one construction: a StepSpace is a Space built by Space."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from specexact.symbolic.region import Space, Variables, pq_variables
from specexact.symbolic.step_space import StepSpace


def test_step_space_is_built_by_space_init(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    original = Space.__init__

    def recording(self: Space, *args: Any, **kwargs: Any) -> None:
        calls.append(type(self))
        original(self, *args, **kwargs)

    monkeypatch.setattr(Space, "__init__", recording)
    StepSpace(3, [("p", ()), ("q", ())])
    assert calls == [StepSpace]


def test_step_space_has_every_field_of_a_space_and_its_own_cache_key() -> None:
    space, steps = Space(3), StepSpace(3, [("p", ()), ("q", ()), ("p", (0,))])
    assert set(vars(space)) <= set(vars(steps))
    assert steps.n == 2 * 3 and len(steps.simplex_rows) == 3
    assert steps.cache_key != space.cache_key == 3
    assert StepSpace(3, [("p", ())]).cache_key != StepSpace(3, [("p", ())]).cache_key


def test_a_space_over_the_sampler_variables_is_the_default() -> None:
    default, given = Space(3), Space(3, pq_variables(3))
    assert (default.variables, default.simplex_rows) == (given.variables, given.simplex_rows)
    assert isinstance(pq_variables(2), Variables)


def test_contains_checks_the_simplex_then_the_constraints() -> None:
    steps = StepSpace(2, [("p", ()), ("q", ())])
    assert steps.contains([], (Fraction(1, 2), Fraction(1, 3)))
    assert not steps.contains([], (Fraction(3, 2), Fraction(1, 3)))  # row sum above 1
    assert not steps.contains([], (Fraction(-1, 2), Fraction(1, 3)))
