"""Never a crash: every misuse of every op, function and module raises a
Python exception. misuse_worker.py runs each case (every overload of every
op in torch.ops.gelu_fusion from its schema, with one argument wrong at a
time; the functions, modules and passes likewise) in a subprocess, so that a
segmentation fault or an abort fails this test, naming the case it died in,
instead of killing pytest."""
import os
import signal
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "misuse_worker.py")

def _run_worker(*only):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the same package
    return subprocess.run([sys.executable, WORKER, *only], env=env, capture_output=True,
                          text=True, timeout=900)


def _started(stdout):
    return [line[len("start "):] for line in stdout.splitlines() if line.startswith("start ")]


def test_every_misuse_raises_and_nothing_crashes():
    r = _run_worker()
    started = _started(r.stdout)
    if r.returncode < 0:
        sig = signal.Signals(-r.returncode).name
        last = started[-1] if started else "(before the first case)"
        pytest.fail(f"misuse_worker died of {sig} in case {last!r}\n{r.stderr[-3000:]}")
    # 3: a case that had to raise returned (or a valid call raised); the
    # worker lists them.
    last = r.stdout.splitlines()[-1] if r.stdout else ""
    assert r.returncode == 0, f"misuse_worker exited {r.returncode}: {last}"
    assert r.stdout.splitlines()[-1] == f"done {len(started)} cases"
    assert len(started) > 1000


def test_a_crash_is_reported():
    """The check itself: a case that kills the worker by a signal is seen as
    a negative return code, the case named."""
    code = ("import os, signal, sys\nprint('start boom', flush=True)\n"
            "os.kill(os.getpid(), signal.SIGSEGV)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == -signal.SIGSEGV
    assert _started(r.stdout) == ["boom"]
