"""Signals to real processes: SIGINT as a terminal's Ctrl-C sends it (a worker still importing ignores
it, the sweep's parent handles Ctrl-C; the tests that send SIGINT pass however the suite was started, also
as a background job whose SIGINT arrives ignored, `nohup python -m pytest &`), and kill -9 of a worker."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import cpu_seconds, default_sigint, pool_workers

ROOT = Path(__file__).resolve().parents[1]
CRITWIN = [sys.executable, "-m", "critwin.cli"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def test_the_sigint_tests_pass_in_a_suite_started_with_sigint_ignored():
    """As `nohup python -m pytest &` from a script starts it: SIGINT ignored, inherited by every child."""
    test = "tests/test_stop_signal.py::test_a_signal_between_evaluations_writes_that_step_and_the_run_continues_exactly[2]"
    r = subprocess.run([sys.executable, "-m", "pytest", test, "-n", "0", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                       env=ENV, capture_output=True, text=True, timeout=300,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:]


def test_sigint_to_workers_still_importing_is_ignored_without_a_traceback(tmp_path):
    """Ctrl-C reaches every process of the terminal's group; a pool worker that has not yet run its
    initializer (importing torch and pandas) must not die of it with a KeyboardInterrupt traceback.
    Here only the workers get it, again and again while they start: the sweep goes on and stores all."""
    cmd = CRITWIN + ["sweep", "run", "--set", "d=16", "--set", "steps=40", "--set", "batch_size=32", "--set",
                     "eval_every=20", "--set", "seed=0,1,2,3", "--pack", "1", "--workers", "2", "--store",
                     str(tmp_path / "s"), "--no-progress", "--json"]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    hit, deadline = set(), time.time() + 60
    while time.time() < deadline and proc.poll() is None and len(hit) < 2:
        for w in pool_workers(proc.pid):
            if w not in hit:
                hit.add(w)
                for _ in range(3):      # during the worker's start: its imports take a second or more
                    try:
                        os.kill(w, signal.SIGINT)
                    except ProcessLookupError:
                        pass
                    time.sleep(0.05)
        time.sleep(0.002)
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 0 and json.loads(out)["done"] == 4, (proc.returncode, out, err)
    assert hit, "never saw a worker start"


def test_a_worker_killed_before_its_first_resume_state_is_not_said_to_have_one(tmp_path):
    """kill -9 of the worker training a run that has written no resume state yet (none due for an hour):
    the sweep says the run was lost and is trained again by a rerun, not that it continues from a state."""
    env = {**ENV, "CRITWIN_RESUME_SECONDS": "3600"}
    store = tmp_path / "s"
    proc = subprocess.Popen(CRITWIN + ["sweep", "run", "--set", "d=16", "--set", "steps=1000000", "--set",
                                       "batch_size=32", "--pack", "1", "--workers", "2", "--store", str(store),
                                       "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not any(cpu_seconds(w) > 3 for w in pool_workers(proc.pid)):
        time.sleep(0.2)
    workers = pool_workers(proc.pid)
    assert workers, "no worker started"
    for w in workers:
        os.kill(w, signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3 and "Traceback" not in err, err
    assert "1 cut short when a worker process died" in out and "had no resume state yet" in out, out
    assert "from its resume state" not in out and not list(store.glob(".resume-*"))
