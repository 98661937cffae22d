import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from critwin.empirical import RunStore, load_summaries
from critwin.empirical.store import TMP_PREFIX
from critwin.empirical.sweep import (DaskExecutor, LocalExecutor, SweepSpec, config_from_flat, find_edge,
                                     run_sweep, summarize)
from critwin.errors import ConfigError

TINY = {"d": 16, "steps": 20, "batch_size": 32, "eval_every": 10}


def tiny_spec(**grid):
    return SweepSpec(dict(TINY), {k: list(v) for k, v in grid.items()})


def test_spec_expands_the_product_and_dedups():
    cfgs = tiny_spec(seed=[0, 1, 2], wd=[0.0, 0.5], gamma=[0.5, 0.8]).expand()
    assert len(cfgs) == 12 and len({c.run_id() for c in cfgs}) == 12
    assert len(tiny_spec(seed=[0, 0]).expand()) == 1


def test_spec_sets_and_toml(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[base]\nsteps = 20\nd = 16\n[grid]\nseed = [0, 1]\nwd_window = ["0:10", "10:20"]\n')
    spec = SweepSpec.from_toml(f).with_sets(["wd=0.3", "gamma=0.5,1.0"])
    cfgs = spec.expand()
    assert len(cfgs) == 8 and {c.wd_windows[0][2] for c in cfgs} == {0.3}
    assert {c.model.gamma for c in cfgs} == {0.5, 1.0}


@pytest.mark.parametrize("grid,field", [
    ({"wd_window_start": [0, 15], "wd_width": [10], "wd": [0.1]}, "wd_window"),
    ({"gamma": [0.5, -1.0]}, "gamma"),
    ({"colour": ["red"]}, "colour"),
    ({"optimizer": ["adamw", "rmsprop"]}, "optimizer"),
])
def test_invalid_points_are_rejected_before_anything_runs(tmp_path, grid, field):
    with pytest.raises(ConfigError) as e:
        tiny_spec(**grid).expand()
    assert e.value.field == field and "grid point" in str(e.value)
    assert not tmp_path.joinpath("runs").exists()


def test_local_pool_then_resume_skips(tmp_path):
    store = RunStore(tmp_path)
    cfgs = tiny_spec(seed=[0, 1, 2]).expand()
    res = run_sweep(cfgs, store, LocalExecutor(2), progress=False)
    assert len(res.done) == 3 and not res.failed
    again = run_sweep(cfgs, store, LocalExecutor(2), progress=False)
    assert len(again.skipped) == 3 and not again.done


def test_dask_local_cluster_matches_local(tmp_path):
    cfgs = tiny_spec(seed=[0, 1]).expand()
    ex = DaskExecutor(None, workers=2)
    try:
        res = run_sweep(cfgs, RunStore(tmp_path / "dask"), ex, progress=False)
    finally:
        ex.close()
    assert len(res.done) == 2
    run_sweep(cfgs, RunStore(tmp_path / "local"), LocalExecutor(1), progress=False)
    for c in cfgs:
        a = RunStore(tmp_path / "dask").load(c.run_id()).metrics
        b = RunStore(tmp_path / "local").load(c.run_id()).metrics
        assert a.equals(b)       # same numbers whichever executor ran it


def test_failures_are_recorded_and_retried_alone(tmp_path):
    store = RunStore(tmp_path)
    good = config_from_flat({**TINY, "seed": 0})
    raises = config_from_flat({**TINY, "freeze": "layer5@1"})        # no such component
    diverges = config_from_flat({**TINY, "optimizer": "sgd", "lr": 1e6, "momentum": 0.0})
    res = run_sweep([good, raises, diverges], store, LocalExecutor(1), progress=False)
    assert res.done == [good.run_id()]
    assert {r for r, _ in res.failed} == {raises.run_id(), diverges.run_id()}
    assert store.status(raises.run_id()) == "failed" and "freeze" in store.load(raises.run_id()).summary["error"]
    assert store.status(diverges.run_id()) == "diverged"
    again = run_sweep([good, raises, diverges], store, LocalExecutor(1), progress=False)
    assert len(again.skipped) == 3
    retry = run_sweep([good, raises, diverges], store, LocalExecutor(1), retry_failed=True, progress=False)
    assert retry.skipped == [good.run_id()] and len(retry.failed) == 2
    assert not list(tmp_path.glob(f"{TMP_PREFIX}*"))


def test_progress_counts_a_branch_from_its_checkpoint():
    from dataclasses import replace

    from critwin.empirical.sweep.runner import steps_to_train
    cfg = config_from_flat({**TINY, "steps": 100})
    assert steps_to_train(cfg) == 100 and steps_to_train(replace(cfg, branch="0123456789abcdef@40")) == 60


def test_a_script_without_a_main_guard_is_told_so(tmp_path):
    """Workers import the script that started the pool: a sweep outside `if __name__ ==
    "__main__":` would run again in each of them (claiming the runs); it stops there instead,
    and the run comes back lost (not stored: not its own failure) with the reason, not silently busy."""
    script = tmp_path / "sweep.py"
    script.write_text("from critwin.empirical import RunStore\n"
                      "from critwin.empirical.sweep import LocalExecutor, config_from_flat, run_sweep\n"
                      f"cfg = config_from_flat({TINY!r})\n"
                      f"res = run_sweep([cfg], RunStore({str(tmp_path / 'runs')!r}), LocalExecutor(2), progress=False)\n"
                      "print('RESULT', res.done, res.failed, res.busy, len(res.lost), res.describe())\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    result = [line for line in out.stdout.splitlines() if line.startswith("RESULT")]
    assert len(result) == 1, out.stdout + out.stderr                     # the parent's line only
    assert result[0].startswith("RESULT [] [] [] 1 ") and "__main__" in result[0]
    assert '__name__ == "__main__"' in out.stderr                     # the worker's own error says why


def test_summary_matches_a_hand_computation(tmp_path):
    store = RunStore(tmp_path)
    run_sweep(tiny_spec(seed=[0, 1, 2], wd=[0.0, 2.0]).expand(), store, LocalExecutor(2), progress=False)
    table = summarize(tmp_path, ["wd_windows"], ["ood_acc", "train_acc"])
    raw = load_summaries(tmp_path)
    for _, row in table.iterrows():
        vals = raw.loc[raw.wd_windows == row.wd_windows, "final_ood_acc"].to_numpy()
        assert row.n == 3 and row.ood_acc_mean == pytest.approx(vals.mean())
        assert row.ood_acc_sd == pytest.approx(np.std(vals, ddof=1))
    with pytest.raises(ConfigError, match="group_by"):
        summarize(tmp_path, ["colour"])


def test_bisection_finds_the_edge_with_fewer_runs(tmp_path):
    base = {"d": 32, "eval_every": 1000}       # train accuracy crosses 0.5 near 120 steps
    out = find_edge(base, "steps", 10, 300, 10, 0.5, seeds=[0], metric="train_acc",
                    store=RunStore(tmp_path), executor=LocalExecutor(1), progress=False)
    assert out["edge"] is not None and out["edge"][1] - out["edge"][0] == 10
    ev = {e["value"]: e["outcome"] for e in out["evaluations"]}
    lo, hi = out["edge"]
    assert (ev[lo] >= 0.5) != (ev[hi] >= 0.5)
    assert out["runs"] < out["grid_runs"] / 3


def test_killed_sweep_resumes_with_exactly_the_missing_runs(tmp_path):
    """kill -9 in the middle: complete runs stay readable, nothing half-written survives.
    Runs train one at a time (--pack 1): packed, all 8 would be stored at once and the kill would race
    the last store (a killed pack is test_reliability's)."""
    store_dir = tmp_path / "store"
    sets = ["--set", "d=16", "--set", "steps=300", "--set", "batch_size=32", "--set", "eval_every=50",
            "--set", "seed=" + ",".join(map(str, range(8)))]
    cmd = [sys.executable, "-m", "critwin.cli", "sweep", "run", *sets, "--workers", "1",
           "--pack", "1", "--store", str(store_dir), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        done = [p for p in store_dir.glob("*") if not p.name.startswith(".")] if store_dir.exists() else []
        if len(done) >= 2:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = RunStore(store_dir)
    complete, problems = store.scan()
    assert 2 <= len(complete) < 8
    assert all(p.path.name.startswith(TMP_PREFIX) for p in problems)   # only temp folders, never a run
    for rid in complete:
        store.load(rid)                                                # every run folder reads back
    cfgs = SweepSpec().with_sets([s for s in sets if s != "--set"]).expand()
    res = run_sweep(cfgs, store, LocalExecutor(1), progress=False)
    assert sorted(res.skipped) == sorted(complete) and len(res.done) == 8 - len(complete)
    ids, problems = store.scan()
    assert len(ids) == 8 and problems == []


def test_bootstrap_edge_interval():
    from critwin.empirical.sweep.edge import bootstrap_edge
    # every seed crosses between 200 and 300: the interval is that midpoint exactly
    same = {100: [0.1, 0.2, 0.1], 200: [0.3, 0.4, 0.2], 300: [0.8, 0.9, 0.7], 400: [0.9, 0.9, 0.9]}
    assert bootstrap_edge(same, 0.5) == [250.0, 250.0]
    # one seed crosses early: resamples move the edge between the two brackets
    mixed = {100: [0.1, 0.1, 0.9], 200: [0.2, 0.3, 0.9], 300: [0.8, 0.9, 0.9]}
    lo, hi = bootstrap_edge(mixed, 0.5)
    assert lo == 150.0 and hi == 250.0
    assert all(np.isnan(bootstrap_edge({100: [0.1], 200: [0.2]}, 0.5)))     # no crossing at all


def test_bisection_over_task_instances_averages_every_pair(tmp_path):
    """With task_seeds the outcome at each value is the mean over every (instance, seed) pair,
    recomputed here from the stored runs."""
    base = {"d": 16, "eval_every": 1000, "batch_size": 32}
    store = RunStore(tmp_path)
    out = find_edge(base, "steps", 10, 90, 20, 0.3, seeds=[0], metric="train_acc", store=store,
                    executor=LocalExecutor(1), progress=False, task_seeds=[0, 1])
    assert out["task_seeds"] == [0, 1] and out["grid_runs"] == 5 * 2
    for ev in out["evaluations"]:
        vals = [store.load(config_from_flat({**base, "steps": int(ev["value"]), "task_seed": t, "seed": 0}).run_id())
                .summary["final"]["train_acc"] for t in (0, 1)]
        assert ev["outcome"] == pytest.approx(np.mean(vals))
