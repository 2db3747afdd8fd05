"""The audited code cannot forge the result (issue 24): the command supervises it from
another process, so exits, exec, atexit handlers, forks, threads, endless loops and
signals become an UNDECIDED (or the verdict already reached), never exit 0 and never a
hang; output faults get their own exit code."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import run_specexact, write_module

TEXTBOOK = '''
def textbook(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    r = [max(a - b, 0) for a, b in zip(p, q)]
    return rng.categorical([v / sum(r) for v in r])
'''

NAIVE = '''
def naive(p, q, rng):
    x = rng.categorical(q)
    if rng.random() * q[x] < p[x]:
        return x
    return rng.categorical(p)
'''

SMALL = ("--vocab-sizes", "2", "--examples", "2", "-q")


def audit(tmp_path: Path, source: str, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    module = write_module(tmp_path, "hostile", source)
    return run_specexact("audit", f"{module}:{name}", *SMALL, *extra, cwd=tmp_path,
                         timeout=120)


@pytest.mark.parametrize(("source", "how"), [
    ("import os\nos._exit(0)\ndef rule(p, q, rng):\n    return 0\n", "os._exit at import"),
    ("import posix\ndef rule(p, q, rng):\n    posix._exit(0)\n", "posix._exit"),
    ("import os\ndef rule(p, q, rng):\n    os.execv('/bin/true', ['/bin/true'])\n", "exec"),
    ("import os, signal\ndef rule(p, q, rng):\n    os.kill(os.getpid(), signal.SIGKILL)\n",
     "a signal to itself"),
])
def test_ending_the_process_is_undecided_never_exit_0(tmp_path, source, how):
    done = audit(tmp_path, source, "rule")
    assert done.returncode == 2, (how, done.stdout, done.stderr)
    assert done.stdout == ""
    assert "ended before it reported a verdict" in done.stderr


def test_an_atexit_handler_cannot_turn_a_failure_into_exit_0(tmp_path):
    source = "import atexit, os\natexit.register(lambda: os._exit(0))\n" + NAIVE
    done = audit(tmp_path, source, "naive")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("FAIL")


def test_a_thread_left_running_does_not_keep_the_command_alive(tmp_path):
    source = "import threading, time\n" + TEXTBOOK.replace(
        "    x = rng.categorical(q)",
        "    threading.Thread(target=time.sleep, args=(1000,)).start()\n"
        "    x = rng.categorical(q)", 1)
    start = time.monotonic()
    done = audit(tmp_path, source, "textbook")
    assert done.returncode == 0 and done.stdout.startswith("PASS"), done.stderr
    assert time.monotonic() - start < 100


def test_a_fork_on_each_call_leaves_no_copies_behind(tmp_path):
    source = "import os\n" + TEXTBOOK.replace(
        "    x = rng.categorical(q)", "    os.fork()\n    x = rng.categorical(q)", 1)
    marker = tmp_path / "hostile.py"
    done = audit(tmp_path, source, "textbook")
    assert done.returncode in (0, 2), done.stderr  # a verdict or UNDECIDED, never a hang
    assert done.stdout.count("PASS") + done.stdout.count("FAIL") <= 1
    time.sleep(0.5)
    survivors = subprocess.run(["pgrep", "-f", str(marker)], capture_output=True, text=True,
                               check=False).stdout.split()
    assert survivors == []


def test_an_endless_loop_stops_at_max_seconds(tmp_path):
    source = "def rule(p, q, rng):\n    while True:\n        pass\n"
    start = time.monotonic()
    done = audit(tmp_path, source, "rule", "--max-seconds", "2")
    assert done.returncode == 2
    assert "went past --max-seconds 2" in done.stderr
    assert time.monotonic() - start < 60


def test_sigterm_kills_the_whole_run_quietly(tmp_path):
    module = write_module(tmp_path, "loop", "def rule(p, q, rng):\n    while True:\n"
                                            "        pass\n")
    proc = subprocess.Popen([sys.executable, "-m", "specexact", "audit", f"{module}:rule",
                             "-q"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert "Traceback" not in err and err.strip() == "specexact: interrupted"
    time.sleep(0.5)
    survivors = subprocess.run(["pgrep", "-f", f"{module}:rule"], capture_output=True,
                               text=True, check=False).stdout.split()
    assert survivors == []


def test_an_unwritable_report_is_an_output_error(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    module = write_module(tmp_path, "rules", TEXTBOOK)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "specexact", "audit",
                               f"{module}:textbook", *SMALL], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert done.returncode == 3
    assert done.stderr.startswith("specexact: error: cannot write the report")


def test_a_closed_stdout_is_an_output_error_without_a_traceback():
    done = subprocess.run([sys.executable, "-m", "specexact", "catalogue"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=120, check=False, close_fds=True,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 3
    assert "Traceback" not in done.stderr


def test_a_reader_that_leaves_keeps_the_verdict_exit_code():
    shell = f"{sys.executable} -m specexact catalogue | head -1; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stdout.splitlines()[-1] == "0", done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("source", "what"), [
    ("def rule(p, q, rng):\n    yield 0\n", "generator function"),
    ("async def rule(p, q, rng):\n    return 0\n", "async function"),
])
def test_generator_and_async_samplers_are_named(tmp_path, source, what):
    done = audit(tmp_path, source, "rule")
    assert done.returncode == 2
    assert what in done.stderr and "plain function" in done.stderr
