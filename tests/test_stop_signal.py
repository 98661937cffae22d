"""A stop by signal (Ctrl-C's SIGINT, or the SIGTERM a scheduler or `kill` sends) ends training after
the step in progress with its resume state written, so the continued run equals the uninterrupted one
and no training is lost; checked in-process at a step between evaluations, and on a real process."""
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest
import torch

from critwin.empirical import loop
from critwin.empirical.loop import Stopped
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import train

CFG = {"d": 16, "steps": 60, "batch_size": 32, "eval_every": 25, "dropout": 0.1, "checkpoints": [10]}


def _signal_at_batch(monkeypatch, n: int, sig: int):
    """Send `sig` to this process while the n-th batch is drawn (in the middle of a step)."""
    drawn = [0]
    real = loop.BatchOrder.next

    def next_batch(self):
        drawn[0] += 1
        if drawn[0] == n:
            os.kill(os.getpid(), sig)
        return real(self)
    monkeypatch.setattr(loop.BatchOrder, "next", next_batch)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_between_evaluations_writes_that_step_and_the_run_continues_exactly(tmp_path, monkeypatch, sig,
                                                                                     sigint_default):
    cfg = config_from_flat(CFG)
    whole = train(cfg, progress=False)
    resume = tmp_path / f".resume-{cfg.run_id()}.pt"
    before = signal.getsignal(sig)
    _signal_at_batch(monkeypatch, 38, sig)            # during step 37 (0-based): between evaluations 25 and 50
    with pytest.raises(Stopped) as stop:
        train(cfg, progress=False, resume=resume, save_every=1e9)     # no periodic write: only the stop's
    assert stop.value.signum == sig and isinstance(stop.value, KeyboardInterrupt)
    assert signal.getsignal(sig) == before                             # the handler is put back
    assert torch.load(resume, weights_only=False)["step"] == 38       # nothing trained is lost
    monkeypatch.undo()
    resumed = train(cfg, progress=False, resume=resume)
    assert resumed.summary["resumed_from_step"] == 38
    pd.testing.assert_frame_equal(resumed.metrics, whole.metrics)
    a, b = (torch.load(io.BytesIO(r.checkpoints[10]), weights_only=False) for r in (whole, resumed))
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


def test_a_second_signal_stops_at_once(tmp_path, monkeypatch):
    cfg = config_from_flat(CFG)
    drawn = [0]
    real = loop.BatchOrder.next

    def twice(self):
        drawn[0] += 1
        if drawn[0] == 5:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
        return real(self)
    monkeypatch.setattr(loop.BatchOrder, "next", twice)
    resume = tmp_path / "r.pt"
    with pytest.raises(Stopped):
        train(cfg, progress=False, resume=resume, save_every=1e9)
    assert not resume.exists()          # stopped inside the step: no state of a half-done step is written


def test_sigterm_to_critwin_train_keeps_the_steps_trained(tmp_path):
    store = tmp_path / "s"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CRITWIN_RESUME_SECONDS": "1e9"}
    cmd = [sys.executable, "-m", "critwin.cli", "train", "anchor", "--d", "16", "--steps", "100000",
           "--eval-every", "100000", "--store", str(store)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen, err = [0], bytearray()

    def read():
        for chunk in iter(lambda: proc.stderr.read1(4096), b""):
            err.extend(chunk)
            got = re.findall(rb"(\d+)/100000", bytes(err[-400:]))
            if got:
                seen[0] = int(got[-1])
    threading.Thread(target=read, daemon=True).start()
    deadline = time.time() + 240
    while seen[0] < 30 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert seen[0] >= 30, bytes(err).decode(errors="replace")[-2000:]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    time.sleep(0.2)
    text = bytes(err).decode(errors="replace")
    assert "Traceback" not in text and "critwin: interrupted" in text
    [state] = list(store.glob(".resume-*.pt"))
    assert torch.load(state, weights_only=False)["step"] >= seen[0]


def test_a_pause_at_a_step_keeps_the_runs_schedule_and_continues_exactly(tmp_path):
    """`until` stops after that step with the resume state written (the cosine schedule is the whole run's,
    not one ending at the pause), and the continued run equals the uninterrupted one."""
    from critwin.empirical.loop import Paused
    cfg = config_from_flat({**CFG, "lr_schedule": "cosine"})
    whole = train(cfg, progress=False)
    resume = tmp_path / f".resume-{cfg.run_id()}.pt"
    with pytest.raises(Paused) as paused:
        train(cfg, progress=False, resume=resume, save_every=1e9, until=30)
    assert (paused.value.step, paused.value.steps) == (30, 60)
    state = torch.load(resume, weights_only=False)
    assert state["step"] == 30
    with pytest.raises(Paused) as again:          # the same pause again trains nothing more
        train(cfg, progress=False, resume=resume, until=30)
    assert again.value.step == 30 and torch.load(resume, weights_only=False)["step"] == 30
    resumed = train(cfg, progress=False, resume=resume)
    assert resumed.summary["resumed_from_step"] == 30
    pd.testing.assert_frame_equal(resumed.metrics, whole.metrics)


def test_a_pause_needs_a_resume_state_and_a_step(tmp_path):
    from critwin.errors import ConfigError
    cfg = config_from_flat(CFG)
    with pytest.raises(ConfigError, match="stop_at"):
        train(cfg, progress=False, until=10)                 # nowhere to keep what was trained
    with pytest.raises(ConfigError, match="stop_at"):
        train(cfg, progress=False, resume=tmp_path / "r.pt", until=0)
    assert train(cfg, progress=False, until=60).summary["status"] == "complete"     # at the end: no pause


def test_critwin_train_stop_at_epoch_pauses_and_the_same_command_continues(tmp_path):
    """The CLI: --stop-at-epoch E pauses after E epochs (exit 0, status 'paused', the resume state kept); the
    command without it finishes the run from there, and an earlier pause's run id is the full run's."""
    import json
    base = [sys.executable, "-m", "critwin.cli", "train", "alchemy", "--size", "quick", "--epochs", "4",
            "--store", str(tmp_path / "s"), "--no-progress", "--json"]
    r = subprocess.run([*base, "--stop-at-epoch", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    paused = json.loads(r.stdout)
    assert paused["status"] == "paused" and paused["step"] * 4 == paused["steps"]
    from critwin.empirical import RunStore
    store = RunStore(tmp_path / "s")             # what was trained is stored, as paused, beside its resume state
    kept = store.load(paused["run_id"])
    assert kept.summary["status"] == "paused" and kept.summary["steps_done"] == paused["step"]
    assert kept.metrics.step.max() <= paused["step"] and store.resume_path(paused["run_id"]).is_file()
    r = subprocess.run(base, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    done = json.loads(r.stdout)
    assert done["run_id"] == paused["run_id"] and done["summary"]["resumed_from_step"] == paused["step"]
    assert store.status(done["run_id"]) == "complete" and not store.resume_path(done["run_id"]).is_file()
