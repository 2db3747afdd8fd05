"""``specexact audit TARGET --processors MODULE:NAME`` and the catalogue's processor rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli as run

STEPS = '''
from specexact import ProcessorPipeline, RepetitionPenalty, Stopping

PIPELINE = ProcessorPipeline((RepetitionPenalty(2),), Stopping(eos=(1,)))
NOT_A_PIPELINE = 3


def right(target, draft, prefix, rng, processors):
    return (rng.categorical(processors(prefix, target(prefix))),)


def bonus_only(target, draft, prefix, rng, processors):
    ctx = tuple(prefix)
    x = rng.categorical(draft(ctx))
    q, p = draft(ctx), target(ctx)
    if rng.random() * q[x] < p[x]:
        if processors.finished((*ctx, x)):
            return (x,)
        return (x, rng.categorical(processors((*ctx, x), target((*ctx, x)))))
    return (rng.categorical([max(a - b, 0) for a, b in zip(p, q)]),)


def sampler(p, q, rng):
    return rng.categorical(p)
'''


@pytest.fixture
def steps(tmp_path: Path) -> Path:
    path = tmp_path / "steps.py"
    path.write_text(STEPS)
    return path


@pytest.mark.slow
def test_a_processed_step_passes_and_a_bonus_only_one_fails(steps):
    pipe = f"{steps}:PIPELINE"
    code, out, _ = run("audit", f"{steps}:right", "--processors", pipe, "--examples", "5")
    assert code == 0 and "under repetition penalty 2; stop at EOS 1" in " ".join(out.split())
    code, out, _ = run("audit", f"{steps}:bonus_only", "--processors", pipe, "--horizon", "2",
                       "--json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail"
    assert data["processors"]["processors"] == [{"kind": "repetition_penalty", "penalty": "2"}]
    assert data["counterexample"]["processors"]["stopping"]["eos"] == [1]
    assert data["counterexample"]["expected"]["1"] == "1/2"  # EOS ends the sequence


@pytest.mark.parametrize(("argv", "message"), [
    (("{s}:right", "--processors", "{s}:NOT_A_PIPELINE"),
     "must name a specexact.ProcessorPipeline"),
    (("{s}:sampler", "--processors", "{s}:PIPELINE"), "applies to steps only"),
    (("--processors", "{s}:PIPELINE"), "needs a TARGET"),
])
def test_bad_processor_options_are_usage_errors(steps, argv, message):
    code, _, err = run("audit", *(a.format(s=steps) for a in argv))
    assert code == 2 and message in err and "Traceback" not in err


def test_explain_shows_a_rules_processors():
    code, out, _ = run("explain", "grammar-lost-after-boundary")
    assert code == 0 and "judged under the processors: grammar after token 1" in out
    code, out, _ = run("explain", "cap-before-stop-sequence", "--json")
    data = json.loads(out)
    assert data["processors"]["stopping"] == {"eos": [], "stop_sequences": [[0]],
                                              "max_new_tokens": 2}
    assert data["witness"]["reproduced"] is True
