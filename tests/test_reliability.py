"""The store, sweeps and commands under bad input, damage, faults and concurrency."""
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch

from critwin.cli.main import main
from critwin.empirical import RunStore, TrainConfig
from critwin.empirical.store import CLAIM_PREFIX, TMP_PREFIX
from critwin.empirical.sweep import LocalExecutor, SweepSpec, config_from_flat, run_sweep, summarize
from critwin.empirical.sweep.runner import steps_saved
from critwin.errors import ConfigError
from helpers import Killed, kill_after

TINY = {"d": 16, "steps": 20, "batch_size": 32, "eval_every": 10}
TINY_ARGS = ["--d", "16", "--steps", "20", "--batch-size", "32", "--eval-every", "10", "--no-progress"]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _no_training(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("training started before the store was checked")
    import critwin.cli.train as tc
    import critwin.empirical.sweep.runner as runner
    monkeypatch.setattr(tc, "train", boom)
    monkeypatch.setattr(runner, "run_pack", boom)


# 1. a store that cannot be written fails before any training ------------------------------
def test_unwritable_store_fails_before_training(tmp_path, monkeypatch, capsys):
    _no_training(monkeypatch)
    afile = tmp_path / "file"
    afile.write_text("not a folder")
    assert main(["train", "anchor", *TINY_ARGS, "--store", str(afile)]) == 2
    assert main(["sweep", "run", "--set", "steps=20", "--set", "d=16", "--store", str(afile)]) == 2
    err = capsys.readouterr().err
    assert err.count("store=") == 2 and "a folder" in err and "Traceback" not in err
    with pytest.raises(ConfigError, match="store"):
        run_sweep(SweepSpec(dict(TINY)).expand(), RunStore(afile / "sub"), LocalExecutor(1), progress=False)


# 2. a window without a decay value is refused everywhere -----------------------------------
def test_window_without_a_value_is_refused(capsys):
    assert main(["train", "anchor", *TINY_ARGS, "--wd-window", "5:10"]) == 2
    assert "wd=None" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="wd"):
        SweepSpec({**TINY, "wd_window_start": 0, "wd_width": 10}).expand()
    with pytest.raises(ConfigError, match="wd_windows"):
        TrainConfig(wd_windows=((0, 10),))
    assert SweepSpec({**TINY, "wd": 0, "wd_window": "0:10"}).expand()[0].wd_windows == ()   # wd=0 on purpose


# 3. damaged folders are repaired by re-running ---------------------------------------------
@pytest.mark.parametrize("damage", ["delete_summary", "truncate_metrics"])
def test_rerun_replaces_a_damaged_folder(tmp_path, damage):
    store = RunStore(tmp_path)
    cfgs = SweepSpec(dict(TINY)).expand()
    run_sweep(cfgs, store, LocalExecutor(1), progress=False)
    folder = store.path(cfgs[0].run_id())
    if damage == "delete_summary":
        (folder / "summary.json").unlink()
    else:
        data = (folder / "metrics.parquet").read_bytes()
        (folder / "metrics.parquet").write_bytes(data[: len(data) // 2])
    assert store.status(cfgs[0].run_id()) == "corrupt"
    res = run_sweep(cfgs, store, LocalExecutor(1), progress=False)
    assert res.repaired == [cfgs[0].run_id()] and res.done == [cfgs[0].run_id()]
    assert "1 damaged folders replaced" in res.describe()
    assert store.status(cfgs[0].run_id()) == "complete" and len(store.load(cfgs[0].run_id()).metrics) > 0
    assert store.scan() == ([cfgs[0].run_id()], [])


def test_train_command_replaces_a_damaged_folder(tmp_path, capsys):
    args = ["train", "anchor", *TINY_ARGS, "--store", str(tmp_path), "--json"]
    assert main(args) == 0
    rid = json.loads(capsys.readouterr().out)["run_id"]
    (tmp_path / rid / "metrics.parquet").write_bytes(b"garbage")
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["replaced_damaged"] and not out["cached"] and RunStore(tmp_path).status(rid) == "complete"


# 4. the summary shows failures --------------------------------------------------------------
def test_summary_reports_failed_groups_and_counts_only_averaged_values(tmp_path):
    store = RunStore(tmp_path)
    ok = SweepSpec(dict(TINY), {"seed": [0, 1]}).expand()
    bad = SweepSpec({**TINY, "freeze": "layer7@5"}).expand()      # fails inside the worker: no layer7
    run_sweep(ok + bad, store, LocalExecutor(1), progress=False)
    table = summarize(tmp_path, ["freeze"], ["ood_acc"]).set_index("freeze")
    assert table.loc["layer7@5", "failed"] == 1 and table.loc["layer7@5", "n"] == 0
    assert pd.isna(table.loc["layer7@5", "ood_acc_mean"])
    assert table.loc["none", "n"] == 2 and table.loc["none", "failed"] == 0 and table.loc["none", "runs"] == 2


# 5. readers ignore a live writer's temporary folder ----------------------------------------
def test_live_writers_temp_folder_is_not_damage(tmp_path):
    store = RunStore(tmp_path)
    live = tmp_path / f"{TMP_PREFIX}abc-p{os.getppid()}-1234"
    dead = tmp_path / f"{TMP_PREFIX}def-p{_dead_pid()}-5678"
    live.mkdir()
    dead.mkdir()
    _, problems = store.scan()
    assert [p.path.name for p in problems] == [dead.name]
    store.clean_stale()
    assert live.exists() and not dead.exists()


# 6. concurrency: claims split the work, workers die with their parent -----------------------
def test_claims_are_exclusive_among_live_processes(tmp_path):
    store = RunStore(tmp_path)
    assert store.claim("r1") and store.claim("r1")        # ours: idempotent
    store.release("r1")
    assert not (tmp_path / f"{CLAIM_PREFIX}r1").exists()
    import socket
    (tmp_path / f"{CLAIM_PREFIX}r2").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getppid()}))
    assert not store.claim("r2") and store.claimed_by_others() == ["r2"]
    (tmp_path / f"{CLAIM_PREFIX}r3").write_text(json.dumps({"host": socket.gethostname(), "pid": _dead_pid()}))
    assert store.claim("r3")                                # a dead process's claim is taken over


def test_two_concurrent_sweeps_split_the_runs(tmp_path):
    sets = ["--set", "d=16", "--set", "steps=60", "--set", "batch_size=32", "--set", "eval_every=30",
            "--set", "seed=" + ",".join(map(str, range(6)))]
    cmd = [sys.executable, "-m", "critwin.cli", "sweep", "run", *sets, "--workers", "1",
           "--store", str(tmp_path), "--no-progress", "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert sum(o["done"] for o in outs) == 6                # every run trained exactly once in all
    assert all(o["done"] + o["skipped"] + o["busy"] == 6 for o in outs)
    assert len(RunStore(tmp_path).scan()[0]) == 6 and not list(tmp_path.glob(f"{CLAIM_PREFIX}*"))


def test_pool_workers_exit_when_the_sweep_is_killed(tmp_path):
    script = (
        "import os, sys, time\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "import multiprocessing as mp\n"
        "from critwin.empirical.sweep.executors import _worker_init\n"
        "if __name__ == '__main__':\n"
        "    pool = ProcessPoolExecutor(1, mp_context=mp.get_context('spawn'), initializer=_worker_init,"
        " initargs=(os.getpid(),))\n"
        "    print(pool.submit(os.getpid).result(), flush=True)\n"
        "    pool.submit(time.sleep, 600)\n"
        "    time.sleep(600)\n")
    f = tmp_path / "pool.py"
    f.write_text(script)
    proc = subprocess.Popen([sys.executable, str(f)], stdout=subprocess.PIPE, text=True)
    worker = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the pool worker outlived its killed parent")


# 7-8. damaged folders and absent stores: one clear line --------------------------------------
def test_damaged_folder_is_one_line_and_skip_corrupt_works(tmp_path, capsys):
    store = RunStore(tmp_path)
    cfgs = SweepSpec({**TINY, "wd": 0.5, "wd_width": 5}, {"wd_window_start": [0, 10]}).expand()
    run_sweep(cfgs, store, LocalExecutor(1), progress=False)
    (store.path(cfgs[0].run_id()) / "config.json").unlink()
    assert main(["bridge", "compare", "--store", str(tmp_path), "--methods", "recipe", "--no-figure"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and cfgs[0].run_id() in err and "--skip-corrupt" in err
    with pytest.warns(UserWarning, match="skipped"):
        assert main(["runs", "summary", "--store", str(tmp_path), "--skip-corrupt"]) == 0


@pytest.mark.parametrize("cmd", [["runs", "summary"], ["bridge", "compare"], ["bridge", "timescales"],
                                 ["bridge", "fit"], ["report"], ["readings"], ["phase", "--no-train"]])
def test_absent_store_is_named(tmp_path, capsys, cmd):
    assert main([*cmd, "--store", str(tmp_path / "nowhere")]) == 2
    assert "store=" in capsys.readouterr().err


# 9. wrong-typed values name the field ---------------------------------------------------------
@pytest.mark.parametrize("key,value", [("gamma", "big"), ("wd", "abc"), ("freeze", 5), ("betas", 0.9),
                                       ("lr", "fast"), ("steps", 2.5), ("wd_window", 7)])
def test_wrong_types_name_the_field(key, value):
    with pytest.raises(ConfigError) as e:
        SweepSpec({**TINY, "wd": 0.1} if key == "wd_window" else dict(TINY), {key: [value]}).expand()
    assert e.value.field == key


def test_set_with_wrong_types_is_one_line(tmp_path, capsys):
    assert main(["sweep", "run", "--set", "gamma=big", "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "gamma='big'" in err and "Traceback" not in err


# 10-11. checks write outside the package; one torch thread per run ----------------------------
def test_check_writes_outside_the_package_and_says_where(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["check", "T1"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "critwin-out" / "checks" / "T1_quick.json").exists()
    assert str(tmp_path / "critwin-out" / "checks") in out


def test_train_uses_one_thread_unless_asked(tmp_path):
    import torch
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert main(["train", "anchor", *TINY_ARGS, "--store", str(tmp_path)]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


# 9 (cont.). theory and demo inputs ------------------------------------------------------------
@pytest.mark.parametrize("argv,field", [(["theory", "laws", "--horizon", "0"], "horizon"),
                                        (["demo", "--seeds", "0"], "seeds"),
                                        (["demo", "--steps", "100", "--width", "200"], "width"),
                                        (["theory", "predict", "--gamma", "0.5", "-1"], "gamma"),
                                        (["theory", "regimes", "--gain-range", "0", "10"], "gain_range"),
                                        (["theory", "timescale", "--horizon", "0"], "horizon")])
def test_theory_and_demo_inputs_name_the_field(argv, field, capsys, tmp_path):
    assert main([*argv, *(["--store", str(tmp_path)] if argv[0] == "demo" else [])]) == 2
    err = capsys.readouterr().err
    assert f"{field}=" in err and "array(" not in err and "Traceback" not in err


def test_diverged_theory_schedule_says_so(capsys, tmp_path):
    assert main(["theory", "schedule", "--engine", "gd", "--eta", "10", "--steps", "400",
                 "--out", str(tmp_path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["diverged"] and "diverged" in d["diverged"]


# 12. help does not import torch ----------------------------------------------------------------
def test_help_and_theory_commands_do_not_import_torch():
    code = ("import sys\nfrom critwin.cli.main import main\n"
            "for argv in (['--help'], ['theory', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert out.strip().splitlines()[-1] == "False"


# 14. progress inside a run, not only per finished run -----------------------------------------
@pytest.mark.parametrize("workers", [1, 2])
def test_executor_reports_training_steps_inside_runs(workers):
    from critwin.empirical.sweep import run_config
    cfgs = SweepSpec({**TINY, "steps": 40}, {"seed": [0, 1]}).expand()
    seen = []
    outs = list(LocalExecutor(workers).imap(run_config, [c.resolved() for c in cfgs], on_steps=seen.append))
    assert all("run" in o for o in outs)
    assert sum(seen) == 80 and len(seen) == 8          # every evaluation (every 10 steps) of both runs


def test_complete_reads_a_run_only_when_whole_and_complete(tmp_path):
    store = RunStore(tmp_path)
    cfgs = SweepSpec(dict(TINY), {"seed": [0, 1]}).expand()
    run_sweep(cfgs, store, LocalExecutor(1), progress=False)
    assert store.complete(cfgs[0].run_id()).summary["status"] == "complete"
    (store.path(cfgs[1].run_id()) / "metrics.parquet").write_bytes(b"x")
    assert store.complete(cfgs[1].run_id()) is None and store.complete("0" * 16) is None


def test_a_killed_worker_loses_the_runs_in_flight_and_the_pool_goes_on():
    """A worker that dies (os._exit, as the out-of-memory killer leaves it) breaks the process
    pool: the runs in flight come back lost (not failed) and a fresh pool runs the rest."""
    from helpers import exit_on_three
    out = list(LocalExecutor(2).imap(exit_on_three, range(8)))
    ok = [r for r in out if not isinstance(r, dict)]
    lost = [r["config"] for r in out if isinstance(r, dict)]
    assert sorted(ok + lost) == list(range(8)) and 3 in lost and len(lost) <= 2
    assert all("worker process died" in r["lost"] and "error" not in r for r in out if isinstance(r, dict))
    assert max(ok) > 3                       # items after the break still ran


# resume: a run killed midway continues from its last saved state ------------------------------


RESUMABLE = {"d": 16, "steps": 60, "batch_size": 32, "eval_every": 10, "wd": 4e-3, "wd_window_start": 20,
             "wd_width": 30, "decay_form": "l2", "decay_set": "non_embedding", "dropout": 0.1, "checkpoints": [10, 40]}


def test_a_run_killed_midway_resumes_with_the_numbers_of_an_uninterrupted_run(tmp_path):
    from critwin.empirical.train import train
    cfg = config_from_flat(RESUMABLE)
    whole = train(cfg, progress=False)
    path = tmp_path / "state.pt"
    with pytest.raises(Killed):
        train(cfg, progress=False, on_steps=kill_after(30), resume=path, save_every=0)
    assert path.is_file()
    resumed = train(cfg, progress=False, resume=path, save_every=0)
    assert resumed.summary["resumed_from_step"] == 20        # the last state written before the kill at 30
    pd.testing.assert_frame_equal(resumed.metrics, whole.metrics)       # dropout, batches and decay continue exactly
    assert resumed.summary["final"] == whole.summary["final"]
    assert "resumed_from_step" not in whole.summary
    assert sorted(resumed.checkpoints) == [10, 40]      # the one taken before the kill is kept
    for step in (10, 40):
        a, b = (torch.load(io.BytesIO(r.checkpoints[step]), weights_only=False) for r in (whole, resumed))
        assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


def test_a_damaged_or_foreign_resume_state_is_ignored_with_a_warning(tmp_path):
    from critwin.empirical.train import train
    cfg = config_from_flat({k: v for k, v in RESUMABLE.items() if k != "dropout"})
    whole = train(cfg, progress=False)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"\x00 not a torch file")
    with pytest.warns(UserWarning, match="unreadable"):
        run = train(cfg, progress=False, resume=bad, save_every=1e9)
    pd.testing.assert_frame_equal(run.metrics, whole.metrics)
    other = tmp_path / "other.pt"
    with pytest.raises(Killed):
        train(dataclasses.replace(cfg, seed=1), progress=False, on_steps=kill_after(30), resume=other, save_every=0)
    with pytest.warns(UserWarning, match="another config"):
        run = train(cfg, progress=False, resume=other, save_every=1e9)
    assert "resumed_from_step" not in run.summary
    pd.testing.assert_frame_equal(run.metrics, whole.metrics)


@pytest.mark.slow
def test_a_killed_sweep_continues_its_run_in_progress_from_the_resume_state(tmp_path):
    """kill -9 during one long run trained alone (--pack 1): the next
    sweep starts it from the saved state, not step 0, stores the numbers of an uninterrupted run
    and removes the state file."""
    from critwin.empirical.train import train
    store_dir = tmp_path / "store"
    sets = ["d=16", "steps=3000", "batch_size=32", "eval_every=100"]
    cmd = [sys.executable, "-m", "critwin.cli", "sweep", "run", *[a for s in sets for a in ("--set", s)],
           "--workers", "1", "--pack", "1", "--store", str(store_dir), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "CRITWIN_RESUME_SECONDS": "0"})
    cfg = SweepSpec().with_sets(sets).expand()[0]
    store = RunStore(store_dir)
    deadline = time.time() + 120
    while time.time() < deadline and not store.resume_path(cfg.run_id()).is_file():
        time.sleep(0.02)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert store.resume_path(cfg.run_id()).is_file() and store.status(cfg.run_id()) is None
    saved = torch.load(store.resume_path(cfg.run_id()), weights_only=False)["step"]
    assert steps_saved(store, [cfg]) == saved > 0          # where the next sweep's steps bar starts
    res = run_sweep([cfg], store, LocalExecutor(1, pack=1), progress=False)
    assert len(res.done) == 1
    run = store.load(cfg.run_id())
    assert 0 < run.summary["resumed_from_step"] < 3000
    pd.testing.assert_frame_equal(run.metrics, train(cfg, progress=False).metrics)
    assert not store.resume_path(cfg.run_id()).exists()
    ids, problems = store.scan()
    assert ids == [cfg.run_id()] and problems == []


@pytest.mark.slow
def test_a_killed_sweep_continues_its_pack_in_progress_from_the_pack_state(tmp_path, capsys):
    """kill -9 during a pack of two (the CPU default trains packable runs on the engine): the
    next sweep continues the pack from its saved state, stores the numbers of an uninterrupted
    pack and removes the state file."""
    from critwin.empirical.engine import train_pack
    store_dir = tmp_path / "store"
    sets = ["d=16", "steps=3000", "batch_size=32", "eval_every=100", "seed=0,1"]
    cmd = [sys.executable, "-m", "critwin.cli", "sweep", "run", *[a for s in sets for a in ("--set", s)],
           "--workers", "1", "--pack", "2", "--store", str(store_dir), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "CRITWIN_RESUME_SECONDS": "0"})
    cfgs = SweepSpec().with_sets(sets).expand()
    store = RunStore(store_dir)
    state = store.pack_resume_path([c.run_id() for c in cfgs])
    deadline = time.time() + 120
    while time.time() < deadline and not state.is_file():
        time.sleep(0.02)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert state.is_file() and all(store.status(c.run_id()) is None for c in cfgs)
    rows = {r["run_id"]: r for r in store.in_progress()}
    assert set(rows) == {c.run_id() for c in cfgs} and all(r["training"] is None and r["step"] > 0 for r in rows.values())
    assert "(2 members)" in rows[cfgs[0].run_id()]["pack"]
    assert main(["runs", "progress", "--store", str(store_dir)]) == 0
    assert state.name in capsys.readouterr().out
    assert steps_saved(store, cfgs) == 2 * torch.load(state, weights_only=False)["step"] > 0
    assert steps_saved(store, cfgs[:1]) == torch.load(state, weights_only=False)["step"]
    res = run_sweep(cfgs, store, LocalExecutor(1, pack=2), progress=True)
    assert len(res.done) == 2 and not state.exists()
    for c, whole in zip(cfgs, train_pack(cfgs, progress=False)):
        run = store.load(c.run_id())
        assert 0 < run.summary["resumed_from_step"] < 3000
        pd.testing.assert_frame_equal(run.metrics, whole.metrics)


def test_a_sweep_forms_a_killed_pack_again_before_packing_the_rest(tmp_path):
    """Runs b, c were killed in a pack; a sweep of a, b, c, d in packs of two would pair (a, b)
    and (c, d): it continues (b, c) from its state instead and packs a with d."""
    from critwin.empirical.engine import train_pack
    a, b, c, d = (config_from_flat({**TINY, "steps": 60, "seed": s}) for s in range(4))
    store = RunStore(tmp_path)
    store.root.mkdir(exist_ok=True)
    with pytest.raises(Killed):
        train_pack([b, c], progress=False, on_steps=kill_after(2 * 30), resume=store.pack_resume_path(
            [b.run_id(), c.run_id()]), save_every=0)
    res = run_sweep([a, b, c, d], store, LocalExecutor(1, pack=2), progress=False)
    assert len(res.done) == 4 and list(tmp_path.glob(".pack-resume-*")) == []
    runs = {x: store.load(x.run_id()) for x in (a, b, c, d)}
    assert [runs[x].summary.get("resumed_from_step") for x in (a, b, c, d)] == [None, 20, 20, None]
    assert all(runs[x].summary["pack"]["members"] == 2 for x in (a, b, c, d))
    for x, whole in zip((b, c), train_pack([b, c], progress=False)):
        pd.testing.assert_frame_equal(runs[x].metrics, whole.metrics)


def test_a_pack_state_whose_runs_are_stored_is_dropped(tmp_path):
    from critwin.empirical.engine import train_pack
    a, b = (config_from_flat({**TINY, "steps": 60, "seed": s}) for s in range(2))
    store = RunStore(tmp_path)
    run_sweep([a, b], store, LocalExecutor(1, pack=2), progress=False)
    path = store.pack_resume_path([a.run_id(), b.run_id()])
    with pytest.raises(Killed):
        train_pack([a, b], progress=False, on_steps=kill_after(2 * 30), resume=path, save_every=0)
    assert path.is_file()
    res = run_sweep([a, b], store, LocalExecutor(1, pack=2), progress=False)
    assert len(res.skipped) == 2 and not path.exists()


def test_an_unreadable_pack_state_is_reported_and_does_not_stop_a_sweep(tmp_path):
    store = RunStore(tmp_path)
    (tmp_path / f".pack-resume-{'f' * 16}.pt").write_bytes(b"damaged")
    rows = store.in_progress()
    assert [r["run_id"] for r in rows] == [f".pack-resume-{'f' * 16}.pt"] and "unreadable" in rows[0]["error"]
    a, b = (config_from_flat({**TINY, "seed": s}) for s in range(2))
    assert len(run_sweep([a, b], store, LocalExecutor(1, pack=2), progress=False).done) == 2


def test_runs_progress_lists_live_claims_and_resume_states(tmp_path, capsys):
    from critwin.empirical.train import train
    store = RunStore(tmp_path)
    killed = config_from_flat({k: v for k, v in RESUMABLE.items() if k != "dropout"})
    with pytest.raises(Killed):
        train(killed, progress=False, on_steps=kill_after(30), resume=store.resume_path(killed.run_id()), save_every=0)
    busy = dataclasses.replace(killed, seed=7)
    assert store.claim(busy.run_id())
    (tmp_path / f".resume-{'f' * 16}.pt").write_bytes(b"damaged")
    rows = {r["run_id"]: r for r in store.in_progress()}
    assert set(rows) == {killed.run_id(), busy.run_id(), "f" * 16}
    assert rows[killed.run_id()]["training"] is None and rows[killed.run_id()]["step"] == 20
    assert rows[killed.run_id()]["paused"] is False
    assert rows[killed.run_id()]["steps"] == 60 and "train_acc" in rows[killed.run_id()]["last"]
    assert rows[busy.run_id()]["training"].endswith(f":{os.getpid()}") and rows[busy.run_id()]["step"] is None
    assert "unreadable" in rows["f" * 16]["error"]
    assert main(["runs", "progress", "--store", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "killed: the next sweep resumes it" in out and killed.run_id() in out
    store.release(busy.run_id())
    assert main(["runs", "progress", "--store", str(tmp_path / "absent")]) == 2


def test_errors_raised_in_a_worker_process_come_back_whole():
    """A ConfigError or CorruptRunError raised in a process pool (Dask, the benchmarks' pools)
    reaches the caller with its fields and message, not as a broken pool."""
    import pickle
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    from critwin.errors import CorruptRunError
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        with pytest.raises(ConfigError) as e:
            pool.submit(TrainConfig, steps=0).result()
        assert e.value.field == "steps" and e.value.value == 0 and "steps=0 is invalid" in str(e.value)
    err = CorruptRunError("/x/run", "no metrics")
    back = pickle.loads(pickle.dumps(err))
    assert back.path == err.path and back.reason == "no metrics" and str(back) == str(err)
