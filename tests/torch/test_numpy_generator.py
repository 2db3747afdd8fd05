"""Exact mode for numpy code using a ``numpy.random.Generator``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from specexact.errors import UnsupportedOperation
from specexact.torch.numpy_generator import numpy_output_distribution

F = Fraction
P = (F(1, 4), F(1, 2), F(1, 4))
Q = (F(1, 2), F(1, 4), F(1, 4))
P_ZERO = (F(1, 2), F(1, 2), F(0))
Q_ZERO = (F(1, 4), F(1, 4), F(1, 2))


def textbook(p: np.ndarray, q: np.ndarray, rng: Any) -> Any:
    x = rng.choice(len(q), p=q)
    if rng.random() < p[x] / q[x]:
        return x
    r = np.maximum(p - q, 0)
    return rng.choice(len(r), p=r / r.sum())


def inclusive(p: np.ndarray, q: np.ndarray, rng: Any) -> Any:
    x = rng.choice(len(q), p=q)
    if rng.random() <= p[x] / q[x]:
        return x
    r = np.maximum(p - q, 0)
    return rng.choice(len(r), p=r / r.sum())


def naive(p: np.ndarray, q: np.ndarray, rng: Any) -> Any:
    x = rng.choice(len(q), p=q)
    if rng.uniform(0, 1) < p[x] / q[x]:
        return x
    return rng.choice(len(p), p=p)


def test_textbook_numpy_is_exact() -> None:
    assert dict(numpy_output_distribution(textbook, P, Q).items()) == dict(enumerate(P))


def test_inclusive_numpy_shows_2_pow_minus_53() -> None:
    law = numpy_output_distribution(inclusive, P_ZERO, Q_ZERO)
    assert law[2] == F(1, 2**53) * Q_ZERO[2]
    assert 2 not in numpy_output_distribution(inclusive, P_ZERO, Q_ZERO,
                                              uniform="continuous")


def test_naive_numpy_fails() -> None:
    law = numpy_output_distribution(naive, P, Q)
    assert law != dict(enumerate(P))


def test_unmodelled_draws_are_refused() -> None:
    def gaussian(p: np.ndarray, q: np.ndarray, rng: Any) -> Any:
        return int(np.argmax(p + rng.normal(size=len(p))))

    with pytest.raises(UnsupportedOperation, match="normal"):
        numpy_output_distribution(gaussian, P, Q)
