"""The audited code cannot forge the result (issue 24): the command supervises it from
another process, so exits, exec, atexit handlers, forks, threads, endless loops and
signals become an UNDECIDED (or the verdict already reached), never exit 0 and never a
hang; output faults get their own exit code."""

from __future__ import annotations

import json
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


# --- The rest of issue 24's list: each test names the behaviour it guards. ---------------

IMPORT_EXIT = "import os\nos._exit(0)\ndef rule(p, q, rng):\n    return 0\n"


@pytest.mark.parametrize("argv", [
    ("audit",), ("audit", "--json"), ("prove", "--vocab-size", "2"),
    ("prove", "--vocab-size", "2", "--json"),
])
def test_os_exit_at_import_is_undecided_for_audit_prove_and_json(tmp_path, argv):
    # Before: audit, prove and --json all exited 0 with no output.
    module = write_module(tmp_path, "exits_at_import", IMPORT_EXIT)
    done = run_specexact(argv[0], f"{module}:rule", *argv[1:], cwd=tmp_path, timeout=120)
    assert done.returncode == 2, (argv, done.stdout, done.stderr)
    assert "ended before it reported a verdict (it exited with status 0)" in done.stderr
    if "--json" in argv:  # the one JSON object every outcome prints
        data = json.loads(done.stdout)
        assert data["verdict"] == "undecided" and "status 0" in data["error"]
    else:
        assert done.stdout == ""


ONE_FORK = '''
import os
forked = []
''' + TEXTBOOK.replace("    x = rng.categorical(q)", """    if not forked:
        forked.append(1)
        try:
            {fork}
        except BaseException:
            pass
    x = rng.categorical(q)""", 1)


@pytest.mark.parametrize("fork", ["os.fork()", "fork()"])
def test_one_fork_never_lets_the_parent_pass(tmp_path, fork):
    # Before: the parent printed PASS with exit 0 while the child printed "undecided".
    # ``fork()`` is a name bound before the guards were installed (from os import fork).
    source = ("from os import fork\n" if fork == "fork()" else "") + \
        ONE_FORK.replace("{fork}", fork)
    done = audit(tmp_path, source, "textbook")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "PASS" not in done.stdout
    assert "fork()" in done.stderr and "a sampler must not start processes" in done.stderr


def _session_members(sid: int) -> list[str]:
    """The live processes of session ``sid`` (a zombie waiting for its reaper is dead)."""
    ps = subprocess.run(["ps", "-eo", "pid=,sid=,stat="], capture_output=True, text=True,
                        check=False).stdout.split("\n")
    return [line.split()[0] for line in ps
            if line.split()[1:2] == [str(sid)] and not line.split()[2].startswith("Z")]


def test_sigterm_during_jobs_2_leaves_no_worker_and_no_traceback(tmp_path):
    # Before: the workers were orphaned and printed raw BrokenPipeError tracebacks.  The
    # catalogue audit is what --jobs splits over processes (a target is one search).
    proc = subprocess.Popen([sys.executable, "-m", "specexact", "audit", "--jobs", "2"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    child = None
    for _ in range(200):  # the supervised child, then its pool of two workers
        time.sleep(0.1)
        kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                              text=True, check=False).stdout.split()
        if kids and len(_session_members(int(kids[0]))) >= 3:
            child = int(kids[0])
            break
    assert child is not None, "the workers never started"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    # the catalogue says which targets it judges, then the interrupt, nothing else
    assert err.strip().splitlines()[-1] == "specexact: interrupted" and out == ""
    assert "Traceback" not in err
    time.sleep(0.5)
    assert _session_members(child) == []


@pytest.mark.parametrize("argv", [
    ("audit", "{module}:textbook", *SMALL, "--json"),
    ("prove", "{module}:textbook", "--vocab-size", "2"),
])
def test_a_json_or_proof_report_to_dev_full_is_an_output_error(tmp_path, argv):
    # Before: two raw tracebacks and exit 1, which reads as "violation found".
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    module = write_module(tmp_path, "rules", TEXTBOOK)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "specexact",
                               *(a.format(module=module) for a in argv)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == ("specexact: error: cannot write the report: [Errno 28] "
                                   "No space left on device")


@pytest.mark.parametrize("argv", [
    ("power", "--replicates", "100000", "--plot", "{missing}/power.png"),
    ("mutate", "{module}:textbook", "--tests", "true", "--plot", "{missing}/mutants.png"),
])
def test_a_bad_output_path_is_refused_before_the_computing(tmp_path, argv):
    # Before: "internal error (FileNotFoundError...)" after all the computing.
    module = write_module(tmp_path, "rules", TEXTBOOK)
    missing = tmp_path / "no" / "such" / "folder"
    start = time.monotonic()
    done = run_specexact(*(a.format(module=module, missing=missing) for a in argv),
                         cwd=tmp_path, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (f"specexact: error: cannot write --plot {missing}/"
                                   f"{Path(argv[-1]).name}: its folder {missing} does not "
                                   "exist; give a path in a writable folder")
    assert time.monotonic() - start < 60  # 10^5 replicates of every rule take far longer


def test_a_crash_names_its_type_and_the_users_file_and_line(tmp_path):
    # Before: "RuntimeError (no message)" without where it was raised.
    source = "def rule(p, q, rng):\n    x = rng.categorical(q)\n    if x == 1:\n" \
             "        raise RuntimeError()\n    return x\n"
    done = audit(tmp_path, source, "rule")
    assert done.returncode == 1, done.stderr
    assert f"raised RuntimeError (no message) (at {tmp_path / 'hostile.py'}:4)" in done.stdout


COINS = {
    "id": "id(object()) % 32 == 0",
    "id-bits": "(id([]) >> 4) % 2",
    "hash-of-object": "hash(object()) % 2",
    "time": "time.time_ns() % 2",
    "perf-counter": "int(time.perf_counter() * 1000) % 2",
    "urandom": "os.urandom(1)[0] % 2",
    "uuid4": "uuid.uuid4().int % 2",
    "secrets": "secrets.randbelow(2)",
}


@pytest.mark.parametrize("coin", sorted(COINS))
def test_a_hidden_coin_is_one_stable_undecided(tmp_path, coin):
    # Before: id(x) % 2 and hash(object()) gave FAIL with a made-up TV, the clock gave
    # exit 1 or 2 from run to run.
    source = ("import os, secrets, time, uuid\n"
              f"def rule(p, q, rng):\n    return rng.categorical(p if {COINS[coin]} else q)\n")
    runs = [audit(tmp_path, source, "rule") for _ in range(2)]
    assert [r.returncode for r in runs] == [2, 2], [r.stdout + r.stderr for r in runs]
    assert runs[0].stderr == runs[1].stderr and runs[0].stdout == ""
    assert "no verdict possible" in runs[0].stderr
    assert ("os.urandom" if coin in ("urandom", "uuid4", "secrets")
            else "clock or the object addresses") in runs[0].stderr


#: Coins that escaped the guards (issue 24, hidden randomness): the address shown by a
#: default repr, the process and thread ids, the CPU ticks read from /proc.  Before, each
#: gave PASS or FAIL, and the pid, the thread id and /proc moved from run to run.
PROCESS_COINS = {
    "repr-address": ("int(repr(object())[-3], 16) % 2",
                     "repr() of an object that shows its address"),
    "format-address": ("int(format(object(), '')[-4], 16) % 2",
                       "format() of an object that shows its address"),
    "getpid": ("os.getpid() % 2", "(os.getpid())"),
    "getppid": ("os.getppid() % 2", "(os.getppid())"),
    "get-ident": ("(threading.get_ident() >> 8) % 2", "(threading.get_ident())"),
    "get-native-id": ("threading.get_native_id() % 2", "(threading.get_native_id())"),
    "bound-getpid": ("getpid() % 2", "(os.getpid())"),
    "proc-self-stat": ("int(open('/proc/self/stat').read().split()[13]) % 2",
                       "the code read the file /proc/self/stat, the state of its own process"),
    "proc-through-pathlib": ("int(Path('/proc/self/stat').read_text().split()[13]) % 2",
                             "the code read the file /proc/self/stat"),
    "dev-urandom": ("open('/dev/urandom', 'rb').read(1)[0] % 2",
                    "the code read the file /dev/urandom, entropy from the operating system"),
}


@pytest.mark.parametrize("coin", sorted(PROCESS_COINS))
def test_a_process_id_address_or_proc_file_used_as_a_coin_is_one_stable_undecided(
        tmp_path, coin):
    expression, needle = PROCESS_COINS[coin]
    source = ("import os, threading\nfrom os import getpid\nfrom pathlib import Path\n"
              f"def rule(p, q, rng):\n    return rng.categorical(p if {expression} else q)\n")
    runs = [audit(tmp_path, source, "rule") for _ in range(2)]
    assert [r.returncode for r in runs] == [2, 2], [r.stdout + r.stderr for r in runs]
    assert runs[0].stderr == runs[1].stderr and runs[0].stdout == ""
    assert "no verdict possible" in runs[0].stderr and needle in runs[0].stderr
    assert "draw from rng instead" in runs[0].stderr and "Traceback" not in runs[0].stderr


def test_a_sampler_that_only_logs_its_pid_and_reprs_keeps_its_verdict(tmp_path):
    # The twin of the coins above: ids and reprs that do not decide anything, a file
    # read that is not /proc.
    source = "import os, threading\n" + TEXTBOOK.replace("    x = rng.categorical(q)", f"""\
    tag = f"{{os.getpid()}}-{{threading.get_ident()}}-{{repr(object())}}"
    assert len(tag) > 3 and open({str(tmp_path / "hostile.py")!r}).read()
    x = rng.categorical(q)""", 1)
    done = audit(tmp_path, source, "textbook")
    assert done.returncode == 0 and done.stdout.startswith("PASS"), done.stderr
    naive = audit(tmp_path, source.replace("r = [max(a - b, 0)", "r = [a"), "textbook")
    assert naive.returncode == 1 and naive.stdout.startswith("FAIL"), naive.stderr


THREAD_COIN = '''
import os, random, threading, time
def rule(p, q, rng):
    out = []
    worker = threading.Thread(target=lambda: out.append({coin}))
    worker.start()
    worker.join()
    return rng.categorical(p if out and out[0] else q)
'''


@pytest.mark.parametrize(("coin", "reason"), [
    ("time.time_ns() % 2", "clock or the object addresses"),
    ("os.urandom(1)[0] % 2", "os.urandom(1)"),
    ("random.random() < 0.5", "global random generator"),
])
def test_a_coin_drawn_in_a_thread_the_code_started_is_undecided(tmp_path, coin, reason):
    # Before: a clock or os.urandom read on another thread escaped the guards: FAIL.
    done = audit(tmp_path, THREAD_COIN.format(coin=coin), "rule")
    assert done.returncode == 2, done.stdout + done.stderr
    assert reason in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("body", "needle"), [
    ("import sys\n    sys.exit(0)", "called sys.exit(0) instead of returning"),
    ("raise SystemExit(0)", "called sys.exit(0) instead of returning"),
    ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
    ("import os, signal\n    os.kill(os.getpid(), signal.SIGINT)", "raised KeyboardInterrupt"),
    ("import os, signal\n    os.kill(os.getppid(), signal.SIGTERM)",
     "the code under test sent SIGTERM to specexact"),
    ("import signal, time\n    signal.alarm(1)\n    time.sleep(30)", "killed by SIGALRM"),
])
def test_exits_interrupts_and_signals_of_the_code_are_undecided(tmp_path, body, needle):
    # Before: a KeyboardInterrupt of the code read as "interrupted" (exit 130), a SIGTERM
    # it sent the command as an interrupt (143): the code chose the exit code.
    done = audit(tmp_path, f"def rule(p, q, rng):\n    {body}\n    return 0\n", "rule")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(("patch", "where"), [
    ("import builtins\n    builtins.sum = lambda *a, **k: 0", "builtins.sum"),
    ("from specexact.exact import verdict\n"
     "    verdict.ComparedVerdict.passed = property(lambda self: True)",
     "specexact.exact.verdict.ComparedVerdict.passed"),
    ("import specexact.frontends.cli.audit_cmd as a\n"
     "    a.audit_target = lambda *args, **kw: 0", "specexact.frontends.cli.audit_cmd"),
])
def test_patching_builtins_or_specexact_cannot_forge_a_verdict(tmp_path, patch, where):
    source = NAIVE.replace("    x = rng.categorical(q)", f"    {patch}\n    x = rng.categorical(q)",
                           1)
    done = audit(tmp_path, source, "naive")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "PASS" not in done.stdout
    assert f"the code under test replaced {where}" in done.stderr


def test_a_sampler_that_only_uses_threads_and_ids_honestly_keeps_its_verdict(tmp_path):
    # The twin of the coins above: a worker thread and id() as a dictionary key.
    source = "import threading\n" + TEXTBOOK.replace("    x = rng.categorical(q)", """\
    seen = {id(p): p}
    out = []
    worker = threading.Thread(target=lambda: out.append(len(seen[id(p)])))
    worker.start()
    worker.join()
    assert out == [len(p)]
    x = rng.categorical(q)""", 1)
    done = audit(tmp_path, source, "textbook")
    assert done.returncode == 0 and done.stdout.startswith("PASS"), done.stderr
    naive = audit(tmp_path, source.replace("r = [max(a - b, 0)", "r = [a"), "textbook")
    assert naive.returncode == 1 and naive.stdout.startswith("FAIL"), naive.stderr


def test_huge_outputs_of_the_code_are_cut(tmp_path):
    # A sampler printing 8 MB on each execution wrote gigabytes; a 20 MB exception
    # message became a 20 MB report.
    printing = "import sys\n" + TEXTBOOK.replace(
        "    x = rng.categorical(q)", "    sys.stdout.write('y' * 8_000_000)\n"
                                     "    x = rng.categorical(q)", 1)
    done = audit(tmp_path, printing, "textbook")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) < 2 << 20 and "PASS" in done.stdout
    assert "wrote over 1 MiB to stdout; the rest of what it writes there is dropped" \
        in done.stderr
    shouting = audit(tmp_path, "def rule(p, q, rng):\n    raise ValueError('x' * 20_000_000)\n",
                     "rule")
    assert shouting.returncode == 1
    assert len(shouting.stdout) < 20_000
    assert "(cut: 20000000 characters in all)" in shouting.stdout


def test_endless_recursion_is_a_crash_at_the_users_line(tmp_path):
    module = write_module(tmp_path, "hostile", "def rule(p, q, rng):\n"
                                               "    return rule(p, q, rng)\n")
    done = audit(tmp_path, module.read_text(), "rule")
    assert done.returncode == 1, done.stderr
    assert f"raised RecursionError: maximum recursion depth exceeded (at {module}:2)" \
        in done.stdout


@pytest.mark.slow
def test_an_endless_loop_stops_at_the_default_budget_without_max_seconds(tmp_path):
    # Before: `while True: pass` printed nothing and never stopped.  10 CPU seconds.
    done = audit(tmp_path, "def rule(p, q, rng):\n    while True:\n        pass\n", "rule")
    assert done.returncode == 2
    assert "max_execution_cpu_seconds=10 CPU seconds" in done.stderr
    assert "first undecided path: the first execution" in done.stderr


def test_a_sigint_the_code_sends_itself_is_undecided_when_the_parent_ignores_sigint(tmp_path):
    # Before: a command started with SIGINT ignored (a Ray driver ignores it, as does
    # nohup) left it ignored in the supervised child, so the code's own SIGINT was lost
    # and its run went on: FAIL on the token it returned.  Failed 2 of 3 full suites.
    module = write_module(tmp_path, "hostile", "def rule(p, q, rng):\n    import os, signal\n"
                          "    os.kill(os.getpid(), signal.SIGINT)\n    return 0\n")
    done = subprocess.run(
        [sys.executable, "-m", "specexact", "audit", f"{module}:rule", *SMALL], cwd=tmp_path,
        capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "raised KeyboardInterrupt" in done.stderr and "Traceback" not in done.stderr
