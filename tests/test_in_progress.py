"""A run still training is readable as its curves so far (RunStore.partial), and the stage checks can judge
it (`critwin check S1 --no-train --in-progress`), labelled with its step: checked against the uninterrupted
run's own metrics cut at the stop, and on hand-made curves whose stage times are known."""
import os
import signal

import numpy as np
import pandas as pd
import pytest
import torch

from critwin.cli.main import main
from critwin.empirical import RunStore, loop
from critwin.empirical.loop import Stopped
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import train
from critwin.paper_checks import CHECKS
from tests.test_alchemy_checks import STEPS, rise, save, withheld_curves


def save_in_progress(store, cfg, curves: dict, step: int):
    """A resume state of cfg stopped at `step`, holding the held-out curves logged up to it (what RunStore.partial
    reads)."""
    rows = [(int(s), "test", m, float(v)) for m, c in curves.items() for s, v in zip(STEPS, c) if s <= step]
    torch.save({"step": step, "config": cfg.resolved(), "rows": rows}, store.resume_path(cfg.run_id()))


def test_partial_reads_a_stopped_runs_metrics_as_far_as_it_got(tmp_path, monkeypatch):
    cfg = config_from_flat({"d": 16, "steps": 60, "batch_size": 32, "eval_every": 25})
    whole = train(cfg, progress=False)
    store = RunStore(tmp_path)
    drawn = [0]
    real = loop.BatchOrder.next

    def next_batch(self):
        drawn[0] += 1
        if drawn[0] == 38:                      # a stop during step 37: evaluations 0 and 25 are logged
            os.kill(os.getpid(), signal.SIGTERM)
        return real(self)
    monkeypatch.setattr(loop.BatchOrder, "next", next_batch)
    with pytest.raises(Stopped):
        train(cfg, progress=False, resume=store.resume_path(cfg.run_id()), save_every=1e9)
    metrics, step, steps = store.partial(cfg.run_id())
    assert (step, steps) == (38, 60)
    cut = whole.metrics[whole.metrics.step <= 25].reset_index(drop=True)
    key = ["step", "split", "metric"]
    pd.testing.assert_frame_equal(metrics.sort_values(key).reset_index(drop=True),
                                  cut.sort_values(key).reset_index(drop=True), check_dtype=False)
    assert store.partial("0" * 16) is None and store.complete(cfg.run_id()) is None


def test_s1_in_progress_judges_the_curves_so_far_and_names_the_step(tmp_path):
    store = RunStore(tmp_path)
    cfgs = list(CHECKS["S1"].configs("cpu").values())
    for cfg in cfgs[:2]:
        save(store, cfg, withheld_curves(300, 600, 1500))
    running = cfgs[2]                                   # at step 1000: A (300) and C|AB (600) done, B|A not yet
    save_in_progress(store, running, withheld_curves(300, 600, 1500), 1000)

    res = CHECKS["S1"].run("cpu", store, train=False, in_progress=True)
    got = {r["value"]: r for r in res["rows"]}
    assert got["A reaches 0.95 (fraction of seeds)"]["n"] == 3
    order = got["order: A and C|AB before B|A (fraction of seeds)"]
    assert order["per_seed"][:2] == [1.0, 1.0] and np.isnan(order["per_seed"][2])    # B|A not yet: censored
    assert order["censored"]["runs"] == 1 and order["censored"]["epochs"] == pytest.approx([1000 / 343])
    assert f"in progress: {running.run_id()} at step 1000 of {running.steps}" in res["verdict"]
    assert res["in_progress"] == {running.run_id(): {"step": 1000, "steps": running.steps}}

    plain = CHECKS["S1"].run("cpu", store, train=False)
    assert "incomplete: 2 of 3" in plain["verdict"] and "in progress" not in plain["verdict"]
    assert np.isnan(plain["rows"][0]["per_seed"]).sum() == 0 and len(plain["rows"][0]["per_seed"]) == 2


def test_in_progress_needs_no_train_and_a_stage_check(tmp_path, capsys):
    assert main(["check", "S1", "--size", "cpu", "--in-progress", "--store", str(tmp_path)]) == 2
    assert "in_progress" in capsys.readouterr().err
    assert main(["check", "S6", "--size", "cpu", "--no-train", "--in-progress", "--store", str(tmp_path)]) == 2


def test_s4_in_progress_leaves_out_a_stage_a_running_run_has_not_reached_yet(tmp_path):
    """A run still training whose A has not completed is censored at its current step: its A time is unknown,
    so it leaves the rank correlation rather than reading as the end of training (which would reverse its rank)."""
    store = RunStore(tmp_path)
    t_by_h = {2: 300, 3: 700, 4: 1200, 5: 1800}
    cfgs = CHECKS["S4"].configs("cpu")
    early, late = cfgs[("decomposition h2", 0, 2)], cfgs[("decomposition h3", 0, 2)]     # two runs still training
    for (name, _, s), cfg in cfgs.items():
        curves = {"event_a": rise(t_by_h[int(name[-1])], 0.2), "event_c": rise(None)}
        if cfg in (early, late):                              # stopped before its A (300) / after its A (700)
            save_in_progress(store, cfg, curves, 200 if cfg is early else 1000)
        else:
            save(store, cfg, curves)
    res = CHECKS["S4"].run("cpu", store, train=False, in_progress=True)
    rows = {r["value"]: r for r in res["rows"]}
    assert set(res["in_progress"]) == {early.run_id(), late.run_id()}
    # kept: the h = 3 run that already completed A (three h = 3 times); left out: the h = 2 run that has not
    assert rows["h=3: step A completes"]["per_seed"] == [700.0, 700.0, 700.0]
    # each per-h row says which of its runs still train (seed 2 at h = 2 and h = 3), in the row's order
    assert rows["h=2: step A completes"]["training"] == [s == 2 for s in rows["h=2: step A completes"]["seed"]]
    assert rows["h=4: step A completes"]["training"] == [False] * 3
    # the times left rise strictly with h, so the ranks agree exactly: a correlation of 1 (as counted by hand);
    # read as "never = end", the h = 2 run would rank last and pull it below 1
    assert rows["rank correlation of h with the A time (never = end)"]["measured"] == pytest.approx(1.0)
    from scipy.stats import spearmanr
    as_end = [300, 300, early.steps] + [700] * 3 + [1200] * 3 + [1800] * 3
    assert spearmanr([2] * 3 + [3] * 3 + [4] * 3 + [5] * 3, as_end).statistic < 0.9
