"""Faults met by a real user, each with real processes: a killed pool worker, a full disk (a
tmpfs, as root), a Dask worker started in another folder, Ctrl-C, litter, empty grids."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from critwin.cli.main import main
from critwin.empirical import RunStore
from helpers import cpu_seconds, default_sigint, pool_workers

CRITWIN = [sys.executable, "-m", "critwin.cli"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "CRITWIN_RESUME_SECONDS": "0"}
SMALL = ["--set", "d=16", "--set", "eval_every=50", "--set", "batch_size=32"]


def sweep_cmd(store, steps: int, seeds: int, *extra) -> list:
    return CRITWIN + ["sweep", "run", *SMALL, "--set", f"steps={steps}",
                      "--set", "seed=" + ",".join(map(str, range(seeds))), "--store", str(store),
                      "--no-progress", "--json", *extra]


def wait_for(pred, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def stored(store: Path) -> dict:
    """run id -> status of the runs stored in `store`."""
    s = RunStore(store)
    return {rid: s.status(rid) for rid in s.scan()[0]}


@pytest.mark.slow
def test_killing_one_worker_costs_only_what_it_was_doing(tmp_path):
    """kill -9 of one of two workers: nothing is stored as failed, the runs cut short keep their
    resume states, the exit code says runs were lost, and a plain rerun finishes them from there."""
    store = tmp_path / "s"
    proc = subprocess.Popen(sweep_cmd(store, 2500, 8, "--pack", "4", "--workers", "2"), env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: len(list(store.glob(".pack-resume-*.pt"))) >= 2, 240, "both packs' resume states")
    victim = wait_for(lambda: pool_workers(proc.pid), 30, "the pool workers")[0]
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err
    res = json.loads(out)
    assert res["failed"] == 0 and res["lost"] == 8 - res["done"] >= 4, res
    assert all(st == "complete" for st in stored(store).values())
    assert list(store.glob(".pack-resume-*.pt"))                       # the lost packs can resume
    again = subprocess.run(sweep_cmd(store, 2500, 8, "--pack", "4", "--workers", "2"), env=ENV,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    res2 = json.loads(again.stdout)
    assert res2["done"] == res["lost"] and res2["skipped"] == res["done"] and res2["failed"] == 0
    runs = [RunStore(store).load(r) for r in res2["run_ids"]]
    assert all(r.summary["status"] == "complete" for r in runs)
    assert any(r.summary.get("resumed_from_step", 0) > 0 for r in runs)   # continued, not started over
    assert not list(store.glob(".pack-resume-*.pt"))


def fill(disk: Path, name: str, leave: int) -> None:
    """Take the disk's free space, but `leave` bytes."""
    st = os.statvfs(disk)
    (disk / name).write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))


def test_a_full_disk_stores_what_fits_and_reports_the_rest(small_disk):
    """Room for about three of eight runs (~20 KB each): those are stored, the rest are reported
    in one line each, no traceback, no temporary file left; --json on a full disk: an error object."""
    store = small_disk / "s"
    fill(small_disk, "dummy", 70_000)
    r = subprocess.run(sweep_cmd(store, 300, 8, "--pack", "4", "--workers", "2"), env=ENV,
                       capture_output=True, text=True, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr
    res = json.loads(r.stdout)
    assert r.returncode == 3 and res["not_stored"] >= 1, (r.returncode, res)
    assert res["done"] + res["not_stored"] == 8 and res["failed"] == 0
    assert all("No space left" in x["reason"] for x in res["not_stored_runs"])
    assert len(stored(store)) == res["done"] and all(st == "complete" for st in stored(store).values())
    assert not [p for p in store.iterdir() if ".tmp" in p.name]           # no half-written litter
    fill(small_disk, "filler", 0)
    t = subprocess.run(CRITWIN + ["train", "anchor", "--d", "16", "--steps", "40", "--batch-size", "32", "--eval-every",
                                  "20", "--seed", "99", "--store", str(store), "--no-progress", "--json"],
                       env=ENV, capture_output=True, text=True, timeout=300)
    assert t.returncode == 1 and "Traceback" not in t.stderr, t.stderr
    assert "No space left" in json.loads(t.stdout)["error"]
    assert len(t.stderr.strip().splitlines()) == 1


@pytest.fixture
def dask_worker_elsewhere(tmp_path):
    """A Dask scheduler and one worker (one thread) whose working folder is not the caller's."""
    if shutil.which("dask") is None:
        pytest.skip("the dask command is not installed")
    sf, elsewhere = tmp_path / "scheduler.json", tmp_path / "elsewhere"
    elsewhere.mkdir()
    procs = [subprocess.Popen(["dask", "scheduler", "--scheduler-file", str(sf), "--port", "0", "--no-dashboard"],
                              cwd=elsewhere, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    wait_for(sf.is_file, 60, "the scheduler")
    address = wait_for(lambda: json.loads(sf.read_text() or "{}").get("address"), 30, "its address")
    log = open(tmp_path / "worker.log", "w")
    procs.append(subprocess.Popen(["dask", "worker", "--scheduler-file", str(sf), "--nthreads", "1", "--nworkers",
                                   "1", "--no-dashboard"], cwd=elsewhere, env=ENV, stdout=log, stderr=log))
    yield address, elsewhere, tmp_path / "worker.log"
    for p in procs[::-1]:
        p.terminate()
        p.wait(timeout=30)
    log.close()


def test_a_dask_worker_in_another_folder_trains_packs_into_a_relative_store(dask_worker_elsewhere, tmp_path):
    """--store given relative: the worker writes the pack's resume state into the same store (not
    into a folder of its own working directory), so the pack trains as a pack, not member by member."""
    address, elsewhere, worker_log = dask_worker_elsewhere
    here = tmp_path / "here"
    here.mkdir()
    r = subprocess.run(CRITWIN + ["sweep", "run", *SMALL, "--set", "steps=200", "--set", "seed=0,1", "--store", "dk",
                                  "--executor", "dask", "--scheduler", address, "--pack", "2", "--no-progress",
                                  "--json"], cwd=here, env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["done"] == 2 and res["pack_fallbacks"] == 0, res
    runs = [RunStore(here / "dk").load(i) for i in res["run_ids"]]
    assert all(run.summary["pack"]["members"] == 2 for run in runs)
    assert not (elsewhere / "dk").exists() and "resume state" not in worker_log.read_text()


def test_an_unreachable_scheduler_is_one_line_naming_it(tmp_path):
    t0 = time.time()
    r = subprocess.run(CRITWIN + ["sweep", "run", "--set", "steps=10", "--store", str(tmp_path / "s"), "--executor",
                                  "dask", "--scheduler", "tcp://127.0.0.1:1", "--no-progress"],
                       env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "scheduler" in lines[0] and "tcp://127.0.0.1:1" in lines[0]
    assert time.time() - t0 < 60


def test_ctrl_c_stores_the_finished_runs_and_leaves_the_rest_resumable(tmp_path):
    store = tmp_path / "s"
    proc = subprocess.Popen(sweep_cmd(store, 800, 6, "--pack", "1", "--workers", "2"), env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)       # Ctrl-C as in a terminal, however the suite started
    wait_for(lambda: len(stored(store)) >= 2 and list(store.glob(".resume-*.pt")), 300,
             "two stored runs and a resume state")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("critwin: interrupted")
    n = len(stored(store))
    assert 2 <= n < 6 and all(st == "complete" for st in stored(store).values())
    wait_for(lambda: not pool_workers(proc.pid), 15, "the workers to end")
    again = subprocess.run(sweep_cmd(store, 800, 6, "--pack", "1", "--workers", "2"), env=ENV,
                           capture_output=True, text=True, timeout=600)
    res = json.loads(again.stdout)
    assert again.returncode == 0 and res["done"] == 6 - n and res["skipped"] == n


@pytest.mark.slow
def test_sigterm_to_a_pool_sweep_keeps_what_its_workers_trained(tmp_path):
    """SIGTERM to a sweep on two workers (a scheduler's or `pkill`'s stop) stops each worker after its
    step with its run's resume state written, although none was due for an hour: nothing trained is lost.
    (A pool parent that died at once left its workers to be killed with whatever they had not written.)"""
    import torch
    store = tmp_path / "s"
    env = {**ENV, "CRITWIN_RESUME_SECONDS": "3600"}
    proc = subprocess.Popen(sweep_cmd(store, 10 ** 6, 2, "--pack", "1", "--workers", "2"), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = wait_for(lambda: len(pool_workers(proc.pid)) == 2 and pool_workers(proc.pid), 120, "two workers")
    wait_for(lambda: all(cpu_seconds(w) > 12 for w in workers), 300, "the workers to train a while")
    assert not list(store.glob(".resume-*.pt"))
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=150)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("critwin: interrupted")
    states = sorted(store.glob(".resume-*.pt"))
    assert len(states) == 2 and not stored(store)
    assert all(torch.load(p, weights_only=False)["step"] > 0 for p in states)
    wait_for(lambda: not pool_workers(proc.pid), 15, "the workers to end")


def test_unreadable_resume_files_are_litter_that_clean_removes(tmp_path, capsys):
    store = tmp_path / "s"
    store.mkdir()
    junk = [store / ".pack-resume-0123456789abcdef.pt", store / ".resume-fedcba9876543210.pt",
            store / f".resume-fedcba9876543210.pt.tmp-p{2 ** 22 + 7}"]
    for p in junk:
        p.write_bytes(b"not a torch file")
    assert main(["runs", "progress", "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert text.count("unreadable litter") == 2 and "killed: the next sweep resumes it" not in text
    assert main(["runs", "progress", "--store", str(store), "--clean"]) == 0
    assert "removed 3" in capsys.readouterr().out and not any(p.exists() for p in junk)


def test_an_empty_grid_list_is_refused_naming_the_key(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text("[base]\nsteps = 10\n[grid]\nseed = []\n")
    assert main(["sweep", "run", str(spec), "--store", str(tmp_path / "s"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "grid.seed" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "s").exists()


def test_an_unknown_check_names_the_checks_without_an_empty_list(capsys):
    assert main(["check", "NOPE"]) == 2
    err = capsys.readouterr().err
    assert "NOPE" in err and "not yet implemented: )" not in err and "W1" in err


def test_warnings_are_one_line_without_our_source_file(tmp_path):
    from critwin.empirical.sweep import LocalExecutor, SweepSpec, run_sweep
    store = RunStore(tmp_path)
    cfgs = SweepSpec({"d": 16, "steps": 20, "batch_size": 32, "eval_every": 10}, {"seed": [0, 1]}).expand()
    run_sweep(cfgs, store, LocalExecutor(1), progress=False)
    (store.path(cfgs[0].run_id()) / "config.json").unlink()
    r = subprocess.run(CRITWIN + ["runs", "summary", "--store", str(tmp_path), "--skip-corrupt"], env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    warn = [line for line in r.stderr.splitlines() if "skipped" in line]
    assert warn and all(line.startswith("critwin: warning:") for line in warn) and ".py:" not in r.stderr
