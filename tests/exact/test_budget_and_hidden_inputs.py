"""Issue 24: every enumeration has a counted bound that reports the settled mass and the
first undecided path; clocks, forks and other threads' draws give one stable answer."""

from __future__ import annotations

import os
import random
import threading
import time
from fractions import Fraction as F

import pytest

from specexact import Budget, check_sampler
from specexact.errors import BudgetExceeded, HiddenRandomness, Undecided

HALF = (F(1, 2), F(1, 2))


def textbook(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    r = [max(a - b, 0) for a, b in zip(p, q, strict=True)]
    t = sum(r)
    return rng.categorical([v / t for v in r])


def sixty_comparisons(p, q, rng):
    for _ in range(60):
        if rng.random() < F(1, 2):
            pass
    return rng.categorical(p)


def test_fresh_uniform_comparisons_stop_at_the_counted_budget_with_what_was_settled():
    with pytest.raises(BudgetExceeded) as info:
        check_sampler(sixty_comparisons, HALF, HALF, budget=Budget(max_total_operations=50_000))
    error = info.value
    assert error.limit == "max_total_operations"
    assert 0 < error.resolved_mass < 1
    assert error.path and error.path[0] == "u1 < 1/2: True"
    assert "settled " in str(error) and "first undecided path: u1 < 1/2: True" in str(error)


def test_the_counted_budget_gives_the_same_report_on_every_run():
    reports = set()
    for _ in range(2):
        with pytest.raises(BudgetExceeded) as info:
            check_sampler(sixty_comparisons, HALF, HALF,
                          budget=Budget(max_total_operations=20_000))
        reports.add(str(info.value))
    assert len(reports) == 1


def test_a_large_vocabulary_is_bounded_by_default_work_not_left_running():
    # A categorical draw charges one unit per weight: at V = 2000 a budget of 10^6
    # stops after a few hundred executions.
    v = 2000
    p = tuple(F(i + 1, v * (v + 1) // 2) for i in range(v))
    q = tuple(F(1, v) for _ in range(v))
    with pytest.raises(BudgetExceeded) as info:
        check_sampler(textbook, p, q, budget=Budget(max_total_operations=1_000_000))
    assert info.value.path == ("token of categorical draw #1: " + info.value.path[0]
                               .rsplit(": ", 1)[1],)


def test_a_loop_that_never_touches_rng_stops_on_its_cpu_clock():
    def spin(p, q, rng):
        while True:
            pass

    start = time.process_time()
    with pytest.raises(BudgetExceeded) as info:
        check_sampler(spin, HALF, HALF, budget=Budget(max_execution_cpu_seconds=0.5))
    assert info.value.limit == "max_execution_cpu_seconds"
    assert "first undecided path: the first execution" in str(info.value)
    assert time.process_time() - start < 10


def test_the_default_budget_bounds_every_execution():
    budget = Budget()
    assert budget.max_total_operations > 0 and budget.max_execution_cpu_seconds is not None


def clock_coin(p, q, rng):
    return rng.categorical(p if time.perf_counter_ns() % 2 else q)


def timed_textbook(p, q, rng):
    start = time.perf_counter()
    token = textbook(p, q, rng)
    rate = 1 / (time.perf_counter() - start)  # a logged rate: time moves
    assert rate > 0
    return token


def test_a_clock_used_as_a_coin_is_undecided_on_every_run():
    messages = set()
    for _ in range(3):
        with pytest.raises(HiddenRandomness) as info:
            check_sampler(clock_coin, (F(1, 3), F(2, 3)), HALF)
        messages.add(str(info.value))
    assert len(messages) == 1 and "depends on the clock" in messages.pop()


def test_a_clock_that_is_only_logged_keeps_the_verdict():
    assert check_sampler(timed_textbook, (F(1, 3), F(2, 3)), HALF).passed


def test_datetime_now_as_a_coin_is_undecided():
    import datetime

    def coin(p, q, rng):
        return rng.categorical(p if datetime.datetime.now().microsecond % 2 else q)

    with pytest.raises(HiddenRandomness, match="depends on the clock"):
        check_sampler(coin, (F(1, 3), F(2, 3)), HALF)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_fork_has_its_own_reason():
    def forks(p, q, rng):
        os.fork()
        return rng.categorical(p)

    with pytest.raises(Undecided, match=r"called os\.fork\(\)") as info:
        check_sampler(forks, HALF, HALF)
    assert "global random generator" not in str(info.value)


def test_draws_of_another_thread_are_not_blamed_on_the_code():
    stop = threading.Event()

    def heartbeat():
        while not stop.is_set():
            random.random()
            time.sleep(0.002)

    thread = threading.Thread(target=heartbeat, daemon=True)
    thread.start()
    try:
        for _ in range(20):
            assert check_sampler(textbook, (F(1, 3), F(2, 3)), HALF).passed
    finally:
        stop.set()
        thread.join()


def test_the_code_drawing_from_random_is_still_blamed():
    def global_coin(p, q, rng):
        random.random()
        return rng.categorical(p)

    with pytest.raises(HiddenRandomness, match="global random generator"):
        check_sampler(global_coin, HALF, HALF)



STOPPED_THEN_SEARCH = """
from fractions import Fraction as F
from specexact import Budget, check_sampler
from specexact.errors import BudgetExceeded
from tests.quality.planted import PLANTED_SAMPLERS
from specexact.properties import search_sampler

def spin(p, q, rng):
    while True:
        pass

try:
    check_sampler(spin, (F(1, 2), F(1, 2)), (F(1, 2), F(1, 2)),
                  budget=Budget(max_execution_cpu_seconds=0.3))
except BudgetExceeded:
    print(search_sampler(PLANTED_SAMPLERS["shared-smaller-support"], seed=1).status)
"""


def test_a_stopped_execution_leaves_the_thread_working():
    """Regression: the watchdog cleared its unwinding exception with
    PyThreadState_SetAsyncExc(NULL), which leaves CPython 3.11's pending-exception
    signal set for good; every later call on the thread took the slow path, and the
    next Hypothesis search in the process (a planted rule's shrink) never ended.
    The timeout only tells a hang from an answer."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", STOPPED_THEN_SEARCH], capture_output=True,
                          text=True, timeout=300, check=False,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "fail", done.stderr[-2000:]
