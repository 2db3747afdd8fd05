"""The ``specexact`` command line: its contract (synopsis, exit codes, JSON shape)."""

from __future__ import annotations

import functools
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from specexact import output_distribution
from specexact.audit import detect_kind, parse_vocab_sizes
from specexact.counterexamples.samplers import naive_resample
from specexact.errors import InvalidArgument
from specexact.frontends.cli import main
from specexact.frontends.cli.progress import Progress, configure
from tests.helpers import run_cli as run
from tests.helpers import run_cli_json as run_json
from tests.helpers import run_specexact, target

SAMPLERS = '''
import random
from fractions import Fraction


def residual(p, q):
    return [max(a - b, 0) for a, b in zip(p, q)]


def textbook(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(residual(p, q))


def naive(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(p)


def wrong_only_when_equal(p, q, rng):
    # A "fast path" for p == q that returns the draft's argmax: biased exactly when p = q.
    if list(p) == list(q):
        return max(range(len(q)), key=lambda i: q[i])
    return textbook(p, q, rng)


def wrong_only_from_three(p, q, rng):
    if len(p) >= 3:
        return naive(p, q, rng)
    return textbook(p, q, rng)


def proposed_only(p, q, rng):
    # The fallback only covers tokens that could have been proposed (q > 0).
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    weights = [r if b > 0 else 0 for r, b in zip(residual(p, q), q)]
    if sum(weights) == 0:
        return x
    return rng.categorical(weights)


def out_of_vocabulary(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return len(p)  # a padded lane winning


def divides_by_zero(p, q, rng):
    x = rng.categorical(q)
    r = residual(p, q)
    total = sum(r)
    fallback = [w / total for w in r]  # 0/0 when p = q
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(fallback)


def hidden(p, q, rng):
    x = rng.categorical(q)
    if random.random() * q[x] < p[x]:
        return x
    return rng.categorical(residual(p, q))


def endless(p, q, rng):
    for _ in range(5000):
        if rng.random() < Fraction(1, 2):
            pass
    return textbook(p, q, rng)


def chatty(p, q, rng):
    print("debug output from the sampler")
    return naive(p, q, rng)


def two_args(p, q):
    return 0


def exits(p, q, rng):
    import sys
    sys.exit(0)
'''


@pytest.fixture(scope="module")
def samplers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("targets") / "my_samplers.py"
    path.write_text(SAMPLERS)
    return path


# --------------------------------------------------------------------------
# exit codes and human output
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_lossless_sampler_passes_with_exit_0(samplers):
    code, out, err = run("audit", target(samplers, "textbook"))
    assert code == 0, out + err
    assert out.startswith("PASS")
    assert "exact cases" in out
    # Off a terminal, progress is a plain line every 10 s on stderr, never in the report.
    assert all(re.fullmatch(r"auditing \S+: \d+ cases  \[\d+s\]", line)
               for line in err.splitlines()), err
    code, out, err = run("audit", target(samplers, "textbook"), "-q")
    assert code == 0 and out.startswith("PASS")
    assert err == ""  # -q: no progress


def test_a_biased_sampler_fails_with_exit_1_and_an_exact_table(samplers):
    code, out, _ = run("audit", target(samplers, "naive"))
    assert code == 1
    assert out.startswith("FAIL")
    for header in ("token", "p", "q", "expected", "actual", "actual - expected"):
        assert header in out
    assert "TV(actual, p) = " in out
    assert "p = (" in out and "q = (" in out


@pytest.mark.parametrize("name", ["wrong_only_when_equal", "wrong_only_from_three",
                                  "proposed_only", "out_of_vocabulary", "divides_by_zero"])
@pytest.mark.slow
def test_default_audit_finds_the_hard_bugs(samplers, name):
    code, data = run_json("audit", target(samplers, name))
    assert code == 1, data
    assert data["verdict"] == "fail"


def test_bug_only_with_p_equal_q_has_a_witness_with_p_equal_q(samplers):
    _, data = run_json("audit", target(samplers, "wrong_only_when_equal"))
    witness = data["counterexample"]
    assert witness["p"] == witness["q"]


def test_bug_only_from_vocabulary_three_has_a_size_three_witness(samplers):
    _, data = run_json("audit", target(samplers, "wrong_only_from_three"))
    assert len(data["counterexample"]["p"]) == 3


def test_id_outside_the_vocabulary_is_reported_in_actual(samplers):
    _, data = run_json("audit", target(samplers, "out_of_vocabulary"))
    witness = data["counterexample"]
    vocab = len(witness["p"])
    assert str(vocab) in witness["actual"]
    assert Fraction(witness["invalid_mass"]) > 0


def test_a_crash_on_valid_input_is_a_violation(samplers):
    code, out, err = run("audit", target(samplers, "divides_by_zero"))
    assert code == 1
    assert "crash on valid input" in out
    assert "ZeroDivisionError" in out
    assert "Traceback" not in out + err


# --------------------------------------------------------------------------
# --json
# --------------------------------------------------------------------------


def test_json_on_a_pass(samplers):
    code, data = run_json("audit", target(samplers, "textbook"), "--vocab-sizes", "2..3",
                          "--examples", "20")
    assert code == 0
    assert data["verdict"] == "pass"
    assert data["kind"] == "sampler"
    assert isinstance(data["cases"], int) and data["cases"] > 0
    assert data["counterexample"] is None
    assert "error" not in data


def test_json_on_a_fail_holds_the_exact_witness(samplers):
    code, data = run_json("audit", target(samplers, "naive"))
    assert code == 1
    assert data["verdict"] == "fail"
    assert data["kind"] == "sampler"
    witness = data["counterexample"]
    p = [Fraction(x) for x in witness["p"]]
    q = [Fraction(x) for x in witness["q"]]
    assert all(isinstance(x, str) for x in witness["p"] + witness["q"])
    assert sum(p) == 1 and sum(q) == 1
    expected = {int(k): Fraction(v) for k, v in witness["expected"].items()}
    actual = {int(k): Fraction(v) for k, v in witness["actual"].items() if Fraction(v)}
    assert expected == dict(enumerate(p))
    # the reported actual law is the true exact law of the sampler on the witness
    naive_law = output_distribution(naive_resample, p, q)
    assert actual == dict(naive_law)
    assert actual != {k: v for k, v in expected.items() if v}
    assert Fraction(witness["tv"]) > 0


def test_json_stdout_stays_clean_when_the_sampler_prints(samplers):
    code, out, err = run("audit", target(samplers, "chatty"), "--json")
    assert code == 1
    json.loads(out)
    assert "debug output from the sampler" in err


# --------------------------------------------------------------------------
# exit 2: usage errors and no verdict possible, never a traceback
# --------------------------------------------------------------------------


def test_hidden_randomness_exits_2_with_an_error(samplers):
    code, data = run_json("audit", target(samplers, "hidden"))
    assert code == 2
    assert "error" in data and "random" in data["error"]
    assert data["verdict"] == "undecided"
    assert data["kind"] == "sampler"
    assert data["counterexample"] is None


def test_budget_exceeded_exits_2(samplers):
    code, out, err = run("audit", target(samplers, "endless"))
    assert code == 2
    assert "max_choices" in err
    assert "Traceback" not in out + err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sys_exit_in_the_sampler_is_never_a_pass(samplers, jobs):
    code, _, err = run("audit", target(samplers, "exits"), "--jobs", jobs)
    assert code == 2
    assert "sys.exit(0)" in err


def test_help_exits_0(capsys):
    assert main(["audit", "--help"]) == 0
    assert "exit codes" in capsys.readouterr().out


def test_a_typo_in_the_function_suggests_near_misses(samplers):
    code, out, err = run("audit", target(samplers, "textbok"))
    assert code == 2
    assert "did you mean textbook" in err
    assert out == ""


def test_a_typo_in_the_module_exits_2():
    code, data = run_json("audit", "specexact.counterexamples.samplerz:textbook")
    assert code == 2
    assert "specexact.counterexamples.samplerz" in data["error"]


def test_a_file_that_fails_to_import_exits_2(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("def f(p, q, rng):\n    return (\n")
    code, _, err = run("audit", f"{bad}:f")
    assert code == 2
    assert "SyntaxError" in err
    assert "Traceback" not in err


def test_a_function_with_the_wrong_arity_exits_2(samplers):
    code, _, err = run("audit", target(samplers, "two_args"))
    assert code == 2
    assert "fn(p, q, rng)" in err


def test_kind_step_overrides_the_signature(samplers):
    code, _, err = run("audit", target(samplers, "textbook"), "--kind", "step")
    assert code == 2
    assert "fn(target, draft, prefix, rng)" in err


@pytest.mark.parametrize("argv", [
    ["audit", "x:y", "--vocab-sizes", "4..2"],
    ["audit", "x:y", "--vocab-sizes", "two"],
    ["audit", "x:y", "--examples", "-3"],
    ["audit", "x:y", "--kind", "tree"],
    ["frobnicate"],
    [],
])
def test_usage_errors_exit_2(argv):
    code, out, err = run(*argv)
    assert code == 2
    assert "Traceback" not in out + err
    assert err.startswith("specexact: error:")


def test_usage_error_with_json_prints_one_json_object():
    code, data = run_json("audit", "x:y", "--vocab-sizes", "zero")
    assert code == 2
    assert "error" in data and data["counterexample"] is None


def test_horizon_is_refused_for_a_sampler(samplers):
    code, _, err = run("audit", target(samplers, "textbook"), "--horizon", "2")
    assert code == 2
    assert "--horizon" in err


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_vocab_sizes_restrict_the_search(samplers):
    # wrong only from vocabulary 3: invisible when only size 2 is covered
    code, data = run_json("audit", target(samplers, "wrong_only_from_three"),
                          "--vocab-sizes", "2")
    assert code == 0
    assert data["vocab_sizes"] == [2, 2]


@pytest.mark.slow
def test_examples_change_the_number_of_cases(samplers):
    _, few = run_json("audit", target(samplers, "textbook"), "--examples", "0")
    _, more = run_json("audit", target(samplers, "textbook"), "--examples", "20")
    assert few["cases"] < more["cases"]


@pytest.mark.slow
def test_seed_makes_runs_reproducible(samplers):
    first = run_json("audit", target(samplers, "textbook"), "--seed", "7", "--examples", "30")
    again = run_json("audit", target(samplers, "textbook"), "--seed", "7", "--examples", "30")
    assert first == again


@pytest.mark.slow
def test_jobs_split_the_sweep_and_agree(samplers):
    code1, one = run_json("audit", target(samplers, "wrong_only_from_three"))
    code2, two = run_json("audit", target(samplers, "wrong_only_from_three"), "--jobs", "2")
    assert code1 == code2 == 1
    assert len(two["counterexample"]["p"]) == 3
    assert one["counterexample"]["actual"].keys() == two["counterexample"]["actual"].keys()


@pytest.mark.slow
def test_jobs_on_a_pass(samplers):
    code, data = run_json("audit", target(samplers, "textbook"), "--jobs", "2",
                          "--examples", "10")
    assert code == 0
    assert data["verdict"] == "pass"


# --------------------------------------------------------------------------
# kinds, vocabulary sizes, progress
# --------------------------------------------------------------------------


def test_detect_kind_reads_the_signature():
    def sampler(p, q, rng): ...
    def renamed(a, b, c): ...
    def step(target, draft, prefix, rng, gamma=3): ...
    def other(a, b, c, d): ...
    def odd(a): ...

    assert detect_kind(sampler) == "sampler"
    assert detect_kind(renamed) == "sampler"
    assert detect_kind(step) == "step"
    assert detect_kind(other) == "step"
    assert detect_kind(odd) is None


def test_detect_kind_a_step_reading_model_vocab_is_cross_vocab():
    def tli(target, draft, prefix, rng):
        return (target.vocab.id("a"),)

    def nested(target, draft, prefix, rng):
        ids = [target.vocab.id(s) for s in draft.vocab]
        return (ids[0],)

    def plain(target, draft, prefix, rng):
        vocab = 2  # a name, not an attribute read
        return (rng.categorical(target(prefix)[:vocab]),)

    assert detect_kind(tli) == "cross-vocab"
    assert detect_kind(nested) == "cross-vocab"
    assert detect_kind(functools.partial(tli)) == "cross-vocab"
    assert detect_kind(plain) == "step"


@pytest.mark.slow
def test_a_cross_vocab_step_is_audited_as_one_without_kind(tmp_path, capsys):
    path = tmp_path / "tli.py"
    path.write_text(
        "def tli(target, draft, prefix, rng):\n"
        "    tv, dv = target.vocab, draft.vocab\n"
        "    return (rng.categorical(target(prefix)),)\n")
    assert main(["audit", f"{path}:tli", "--examples", "2"]) == 0
    assert "(cross-vocab)" in capsys.readouterr().out
    assert main(["prove", f"{path}:tli", "--vocab-size", "2", "--horizon", "1"]) == 2
    err = capsys.readouterr().err
    assert "cross-vocabulary step" in err and "--kind cross-vocab" in err


def _reads_vocab_in_a_helper(target):
    return target.vocab


def test_detect_kind_follows_the_helpers_a_step_calls():
    # Before: the catalogue's own lossless tli, slem and slrs (def tli(...): return
    # _tli(...)) were audited as same-vocabulary steps and FAILed with a crash.
    from specexact.counterexamples import crossvocab_steps

    def through_a_global(target, draft, prefix, rng):
        return (_reads_vocab_in_a_helper(target).id("a"),)

    def through_a_closure():
        def helper(model):
            return model.vocab

        def step(target, draft, prefix, rng):
            return (helper(target).id("a"),)
        return step

    def recursive(target, draft, prefix, rng):
        def down(n):
            return down(n - 1) if n else (rng.categorical(target(prefix)),)
        return down(2)

    for rule in (crossvocab_steps.tli, crossvocab_steps.slem, crossvocab_steps.slrs):
        assert detect_kind(rule) == "cross-vocab"
    assert detect_kind(through_a_global) == "cross-vocab"
    assert detect_kind(through_a_closure()) == "cross-vocab"
    assert detect_kind(recursive) == "step"
    assert detect_kind(functools.partial(crossvocab_steps.tli, gamma=3)) == "cross-vocab"


def test_a_vocab_read_the_detection_misses_is_undecided_never_a_crash(tmp_path):
    # Before: FAIL, "crash on valid input: ... 'RecordingModel' object has no attribute
    # 'vocab'": the tool handed the wrong models, the step had no bug.
    path = tmp_path / "hidden.py"
    path.write_text("def step(target, draft, prefix, rng):\n"
                    "    vocab = getattr(target, 'vo' + 'cab')\n"
                    "    return (rng.categorical(target(prefix)),)\n")
    done = run_specexact("audit", f"{path}:step", cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the step reads target.vocab, so it is a cross-vocabulary step" in done.stderr
    assert "--kind cross-vocab" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("text", "sizes"), [("2..4", (2, 4)), ("3", (3, 3)),
                                             (" 1..1 ", (1, 1))])
def test_parse_vocab_sizes(text, sizes):
    assert parse_vocab_sizes(text) == sizes


@pytest.mark.parametrize("text", ["4..2", "0..3", "a..b", "2..", ""])
def test_parse_vocab_sizes_rejects(text):
    with pytest.raises(InvalidArgument):
        parse_vocab_sizes(text)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_on_a_terminal_and_writes_a_line_every_10_s_elsewhere(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("specexact.frontends.cli.progress.time.monotonic", lambda: clock[0])
    tty, pipe = _Terminal(), io.StringIO()
    with Progress("auditing", stream=tty) as shown, Progress("auditing", stream=pipe) as log:
        shown(3, 10)
        log(3, 10)
        assert pipe.getvalue() == ""  # nothing in a log before 10 s
        clock[0] += 10.5
        log(7, 10)
    assert "auditing: 3/10" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[1A\x1b[2K")  # the line is erased at the end
    assert pipe.getvalue() == "auditing: 7/10  [10s]\n"


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def test_the_terminal_line_is_richs_transient_progress_and_leaves_stdout_alone(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("specexact.frontends.cli.progress.time.monotonic", lambda: clock[0])
    monkeypatch.delenv("TERM", raising=False)
    tty, stdout = _Terminal(), sys.stdout
    with Progress("auditing [mod:fn]", stream=tty) as shown:
        shown(1, 4, "case [0, 1]")
        assert sys.stdout is stdout  # rich does not take over the report's stream
        shown(2, 4)  # within a tenth of a second: not redrawn
        clock[0] += 1
        shown(3, 4)
    text = _COLOUR.sub("", tty.getvalue())
    assert text.startswith("\x1b[?25lauditing [mod:fn]: 1/4 ")  # cursor hidden, count shown
    assert "case [0, 1]" in text and "━" in text  # the detail and rich's bar
    assert re.search(r"━ +\d:\d\d:\d\d\n", text)  # then the time taken
    assert "2/4" not in text and "auditing [mod:fn]: 3/4" in text
    assert "\x1b[?25h" in text  # the cursor is given back


@pytest.mark.parametrize("columns", [80, 120])
def test_a_long_label_is_shortened_first_and_the_count_and_detail_stay_whole(
        monkeypatch, columns):
    # The CI checkout's paths are long: the count and the detail used to be cut off.
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.delenv("TERM", raising=False)
    label = "sampling /check/work/main/tests/statistical/test_batched.py:textbook"
    tty = _Terminal()
    with Progress(label, stream=tty) as shown:
        shown(16, 16, "3,116,000 draws, 1,234,567 draws/s")
    lines = _COLOUR.sub("", tty.getvalue()).split("\r\x1b[2K")
    last = lines[-1].split("\n")[0].removeprefix("\x1b[?25l")
    assert "textbook: 16/16 " in last and "1,234,567 draws/s" in last
    assert last.startswith("…") and re.search(r"\d:\d\d:\d\d$", last.rstrip())
    assert len(last.rstrip()) <= columns


@pytest.mark.parametrize("color", ["never", "always"])
def test_the_terminal_line_is_coloured_as_color_says(monkeypatch, color):
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("NO_COLOR", "1")  # --color always wins over it, as for the report
    configure(color=color)
    try:
        tty = _Terminal()
        with Progress("auditing", stream=tty) as shown:
            shown(1, 2)
        assert bool(_COLOUR.search(tty.getvalue())) == (color == "always")
    finally:
        configure()


def test_a_dumb_terminal_gets_the_plain_lines_of_a_log(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("specexact.frontends.cli.progress.time.monotonic", lambda: clock[0])
    monkeypatch.setenv("TERM", "dumb")  # it cannot redraw a line
    configure(verbose=True)
    try:
        tty = _Terminal()
        with Progress("auditing", stream=tty) as shown:
            shown(1, 2)  # like a log: nothing before a second (-v)
            clock[0] += 1.2
            shown(2, 2)
        assert tty.getvalue() == "auditing: 2/2  [1s]\n"
    finally:
        configure()


def test_quiet_progress_shows_nothing():
    configure(quiet=True)
    try:
        tty = _Terminal()
        with Progress("auditing", stream=tty) as shown:
            shown(3, 10)
        assert tty.getvalue() == ""
    finally:
        configure()


# --------------------------------------------------------------------------
# catalogue, explain, the console script
# --------------------------------------------------------------------------


def test_catalogue_lists_every_rule():
    from specexact.counterexamples import catalogue

    code, out, _ = run("catalogue")
    assert code == 0
    for entry in catalogue():
        assert entry.name in out
    code, data = run_json("catalogue")
    assert code == 0
    assert [e["name"] for e in data["rules"]] == [e.name for e in catalogue()]
    for item in data["rules"]:
        # A batch entry's witness is found by the audit (the smallest failing panel case).
        assert item["lossless"] == (item["witness"] is None) or item["lossy_by_design"] \
            or item["kind"] == "batch"


def test_explain_shows_why_and_the_witness():
    code, out, _ = run("explain", "naive-resample")
    assert code == 0
    assert "witness" in out and "FAIL" in out
    code, data = run_json("explain", "naive-resample")
    assert code == 0
    assert data["witness"]["reproduced"] is True
    assert Fraction(data["witness"]["tv"]) > 0


def test_explain_suggests_near_names():
    code, _, err = run("explain", "naive-resampel")
    assert code == 2
    assert "naive-resample" in err


@pytest.mark.slow
def test_console_script_runs():
    script = Path(sys.executable).with_name("specexact")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "specexact"]
    done = subprocess.run([*command, "explain", "naive-resample"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr
    assert "naive-resample" in done.stdout
    done = subprocess.run([*command, "audit", "no_such_module:fn"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert textwrap.dedent(done.stderr).startswith("specexact: error:")


# --------------------------------------------------------------------------
# --floats, --uniform-bits, --statistical
# --------------------------------------------------------------------------

FLOAT_SAMPLERS = '''
def textbook(p, q, rng):
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    r = [max(a - b, 0.0) for a, b in zip(p, q)]
    return rng.categorical(r) if any(r) else x  # rounded rows: p <= q everywhere happens


def unguarded(p, q, rng):
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.categorical([max(a - b, 0.0) for a, b in zip(p, q)])


def inclusive(p, q, rng):
    x = rng.categorical(q)
    if rng.random() <= p[x] / q[x]:  # accepts p(x) = 0 when u is exactly 0
        return x
    return rng.categorical([max(a - b, 0.0) for a, b in zip(p, q)])


def naive(p, q, rng):
    x = rng.categorical(q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.categorical(p)


def numpy_textbook(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < p[x] / q[x]:
        return x
    r = (p - q).clip(min=0)
    return rng.choice(len(p), p=r / r.sum())


def numpy_naive(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.choice(len(p), p=p)
'''


@pytest.fixture(scope="module")
def float_samplers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("targets") / "float_samplers.py"
    path.write_text(FLOAT_SAMPLERS)
    return path


def test_floats_rounding_alone_passes(float_samplers):
    code, data = run_json("audit", target(float_samplers, "textbook"), "--floats",
                          "--examples", "10")
    assert code == 0, data
    assert data["verdict"] == "pass" and "floats" in data["mode"]


def test_floats_rounding_hazard_fails(float_samplers):
    # Issue 13: rounded rows with q >= p everywhere (p != q) leave an all-zero residual.
    code, data = run_json("audit", target(float_samplers, "unguarded"), "--floats")
    assert code == 1, data
    witness = data["counterexample"]
    assert witness["severity"] == "crash"
    # The exact rows differ, but in the dtype q >= p everywhere: the residual is all zero.
    floats = witness["floats"]
    assert floats["p"] != floats["q"]
    p_float = [float(x) for x in floats["p_float"]]
    q_float = [float(x) for x in floats["q_float"]]
    assert all(a <= b for a, b in zip(p_float, q_float, strict=True))
    assert "rounding hazards" in data["coverage"] or "round to p <= q" in data["coverage"]


def test_floats_structural_bias_fails(float_samplers):
    code, data = run_json("audit", target(float_samplers, "naive"), "--floats")
    assert code == 1
    witness = data["counterexample"]
    assert witness["severity"] == "structural"
    assert len(witness["p"]) == 2  # shrunk


def test_inclusive_comparison_needs_the_grid(float_samplers):
    # Issue 13: the default audit checks the float32 grid too, so it sees this bug;
    # with the ideal uniform only, it is invisible.
    code, _ = run_json("audit", target(float_samplers, "inclusive"), "--examples", "10")
    assert code == 1
    code, _ = run_json("audit", target(float_samplers, "inclusive"), "--examples", "10",
                       "--uniform", "continuous")
    assert code == 0
    code, data = run_json("audit", target(float_samplers, "inclusive"), "--uniform-bits", "24")
    assert code == 1
    witness = data["counterexample"]
    assert witness["severity"] == "support"
    p = [Fraction(x) for x in witness["p"]]
    leaked = sum(Fraction(v) for k, v in witness["actual"].items() if p[int(k)] == 0)
    assert leaked == Fraction(1, 2**24)


@pytest.mark.slow
def test_statistical_mode(float_samplers):
    pytest.importorskip("numpy")
    code, data = run_json("audit", target(float_samplers, "numpy_naive"), "--statistical",
                          "--samples", "3000")
    assert code == 1
    assert data["mode"] == "statistical" and data["verdict"] == "fail"
    assert data["counterexample"]["p_value"] < 1e-3
    code, data = run_json("audit", target(float_samplers, "numpy_textbook"), "--statistical",
                          "--samples", "3000")
    assert code == 0, data


@pytest.mark.parametrize("argv", [["--samples", "10"], ["--arrays"],
                                  ["--statistical", "--floats"]])
def test_mode_options_need_their_mode(float_samplers, argv):
    code, _, err = run("audit", target(float_samplers, "textbook"), *argv)
    assert code == 2
    assert err.startswith("specexact: error:")


# --------------------------------------------------------------------------
# steps
# --------------------------------------------------------------------------

STEPS = '''
def residual(p, q):
    return [max(a - b, 0) for a, b in zip(p, q)]


def chain(target, draft, prefix, rng, gamma=2):
    ctx = tuple(prefix)
    xs, qs = [], []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    for i, x in enumerate(xs):
        if not rng.random() * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i], qs[i])))
    return (*xs, rng.categorical(ps[gamma]))


def one_uniform(target, draft, prefix, rng, gamma=2):
    # One uniform for every position: the first token's marginal stays right,
    # the joint law does not.
    ctx = tuple(prefix)
    xs, qs = [], []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    u = rng.random()
    for i, x in enumerate(xs):
        if not u * qs[i][x] < ps[i][x]:
            return (*xs[:i], rng.categorical(residual(ps[i], qs[i])))
    return (*xs, rng.categorical(ps[gamma]))


def empty(target, draft, prefix, rng):
    return ()
'''


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("targets") / "my_steps.py"
    path.write_text(STEPS)
    return path


@pytest.mark.slow
def test_a_lossless_step_passes_and_its_kind_is_read_from_the_signature(steps):
    code, data = run_json("audit", target(steps, "chain"), "--examples", "10")
    assert code == 0, data
    assert data["kind"] == "step"
    assert data["horizon"] == 3


def test_a_joint_law_bug_fails_with_replayable_models(steps):
    from specexact import decode_distribution
    from specexact.steps.models import TableModel

    code, data = run_json("audit", target(steps, "one_uniform"))
    assert code == 1
    witness = data["counterexample"]
    horizon = witness["horizon"]

    def rows(model):
        return {tuple(int(t) for t in key.split(",")) if key else (): [Fraction(x) for x in row]
                for key, row in model.items()}

    # Tables without a default: replaying must only ask for prefixes the JSON lists.
    target_model, draft_model = TableModel(rows(witness["target"])), \
        TableModel(rows(witness["draft"]))
    expected = {tuple(int(t) for t in k.split(",")): Fraction(v)
                for k, v in witness["expected"].items() if Fraction(v)}
    actual = {tuple(int(t) for t in k.split(",")): Fraction(v)
              for k, v in witness["actual"].items() if Fraction(v)}
    assert all(len(k) == horizon for k in expected)
    assert sum(expected.values()) == 1 == sum(actual.values())
    assert dict(decode_distribution(one_uniform_step, target_model, draft_model,
                                    horizon)) == actual
    assert actual != expected


def one_uniform_step(target, draft, prefix, rng, gamma=2):
    ctx = tuple(prefix)
    xs, qs = [], []
    for _ in range(gamma):
        q = draft((*ctx, *xs))
        qs.append(q)
        xs.append(rng.categorical(q))
    ps = [target((*ctx, *xs[:i])) for i in range(gamma + 1)]
    u = rng.random()
    for i, x in enumerate(xs):
        if not u * qs[i][x] < ps[i][x]:
            residual = [max(a - b, 0) for a, b in zip(ps[i], qs[i], strict=True)]
            return (*xs[:i], rng.categorical(residual))
    return (*xs, rng.categorical(ps[gamma]))


@pytest.mark.slow
def test_horizon_one_only_sees_the_first_token(steps):
    code, data = run_json("audit", target(steps, "one_uniform"), "--horizon", "1")
    assert code == 0, data
    assert data["horizon"] == 1


def test_a_step_returning_nothing_is_a_violation(steps):
    code, out, _ = run("audit", target(steps, "empty"))
    assert code == 1
    assert "crash on valid input" in out or "empty" in out


def test_kind_sampler_overrides_a_step_signature(steps):
    code, _, err = run("audit", target(steps, "chain"), "--kind", "sampler")
    assert code == 2
    assert "fn(p, q, rng)" in err


# --------------------------------------------------------------------------
# audit with no target: the bundled catalogue
# --------------------------------------------------------------------------


# One of each kind and label (lossless, wrong, lossy by design): a few seconds.
CATALOGUE_SAMPLE = ("textbook", "naive-resample", "lenient-acceptance", "chain-gamma1",
                    "shared-uniform", "tli", "tli-unnormalised-q")


@pytest.mark.slow
def test_audit_without_target_checks_each_kind_of_catalogue_entry(monkeypatch):
    from specexact.counterexamples import get
    from specexact.frontends.cli import catalogue_cmd

    entries = tuple(get(name) for name in CATALOGUE_SAMPLE)
    assert {e.kind for e in entries} == {"sampler", "step", "cross-vocab"}
    monkeypatch.setattr(catalogue_cmd, "_entries", lambda: entries)
    code, data = run_json("audit")
    assert code == 0, [r for r in data["rules"] if not r["match"]]
    assert data["verdict"] == "pass" and data["mismatches"] == 0
    assert [r["rule"] for r in data["rules"]] == list(CATALOGUE_SAMPLE)
    assert [r["expected"] for r in data["rules"]] == [
        "lossless", "wrong", "lossy", "lossless", "wrong", "lossless", "wrong"]
    for row, entry in zip(data["rules"], entries, strict=True):
        assert row["found"] == ("lossless" if entry.lossless else "wrong")


# The whole catalogue is CI's last step (`.ci/run`: `specexact audit`); here it is slow.
@pytest.mark.slow
def test_audit_without_target_checks_the_whole_catalogue():
    from specexact.counterexamples import catalogue

    code, data = run_json("audit", "--jobs", "2")
    assert code == 0, [r for r in data["rules"] if not r["match"]]
    assert data["verdict"] == "pass" and data["mismatches"] == 0
    assert [r["rule"] for r in data["rules"]] == [e.name for e in catalogue()]
    for row, entry in zip(data["rules"], catalogue(), strict=True):
        assert row["found"] == ("lossless" if entry.lossless else "wrong")


NO_TORCH = """
import sys

class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, _NoTorch())
"""


def _without_torch(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(NO_TORCH)  # the supervised child too
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


def test_the_catalogue_without_torch_leaves_the_batch_kernels_out_and_says_so(tmp_path):
    # Before: the README's first command (pip install ., no extras) ended in
    # "internal error (ModuleNotFoundError: No module named 'torch')".
    from specexact.counterexamples import catalogue

    done = run_specexact("catalogue", env=_without_torch(tmp_path))
    assert done.returncode == 0, done.stderr
    batch = sum(1 for e in catalogue() if e.kind == "batch")
    assert f"\n{len(catalogue()) - batch} rules: " in done.stdout
    assert "left out: the batch kernels' rules (--signature batch) need torch" in done.stdout
    assert "pip install 'specexact[torch]'" in done.stdout
    explained = run_specexact("explain", "batch-vllm-rejection", env=_without_torch(tmp_path))
    assert explained.returncode == 2 and "need torch" in explained.stderr, explained.stderr


@pytest.mark.slow
def test_the_catalogue_audit_without_torch_judges_the_rest(tmp_path):
    done = run_specexact("audit", "--json", "--jobs", "2", env=_without_torch(tmp_path),
                         timeout=1200)
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["mismatches"] == 0, done.stderr
    assert data["left_out"] and "need torch" in data["left_out"][0]
    assert not any(r["kind"] == "batch" for r in data["rules"])


def test_audit_without_target_reports_a_mismatch(monkeypatch):
    from types import SimpleNamespace

    from specexact.frontends.cli import catalogue_cmd

    def naive(p, q, rng):
        x = rng.categorical(q)
        if rng.random() * q[x] < p[x]:
            return x
        return rng.categorical(p)

    mislabelled = SimpleNamespace(name="naive-called-lossless", kind="sampler", lossless=True,
                                  rule=naive, summary="", source=None, witness=None)
    monkeypatch.setattr(catalogue_cmd, "_entries", lambda: (mislabelled,))
    monkeypatch.setattr(catalogue_cmd, "_get", lambda name: mislabelled)
    code, out, _ = run("audit")
    assert code == 1
    assert "MISMATCH" in out
    assert "naive-called-lossless: expected lossless, found wrong" in out


# --------------------------------------------------------------------------
# prove (the symbolic engine, wired through the CLI)
# --------------------------------------------------------------------------


def test_prove_exit_codes(samplers):
    code, out, _ = run("prove", target(samplers, "textbook"), "--vocab-size", "2")
    assert code == 0
    assert "PROVED" in out
    code, out, _ = run("prove", target(samplers, "naive"), "--vocab-size", "2")
    assert code == 1
    assert "REFUTED" in out and "region" in out
    code, _, err = run("prove", target(samplers, "textbook"), "--vocab-size", "0")
    assert code == 2
    assert "Traceback" not in err


def test_prove_of_a_function_with_the_wrong_arity_is_a_usage_error(tmp_path):
    # fn(p, q) is not a sampler fn(p, q, rng): a usage error, as in audit, not a
    # "refutation" by the TypeError of calling it the wrong way.
    path = tmp_path / "arity.py"
    path.write_text("def two(p, q):\n    return 0\n\nNUMBER = 3\n")
    code, out, err = run("prove", f"{path}:two", "--vocab-size", "2")
    assert code == 2 and "REFUTED" not in out
    assert "a sampler is called as fn(p, q, rng)" in err
    code, _, err = run("prove", f"{path}:NUMBER", "--vocab-size", "2")
    assert code == 2 and "is an int, not a function" in err


def test_prove_needs_a_vocabulary_size(samplers):
    code, _, err = run("prove", target(samplers, "textbook"))
    assert code == 2
    assert "--vocab-size" in err
