"""Stage detection: the threshold rule by hand, change points on synthetic staged curves."""
import numpy as np
import pytest

from critwin.empirical.metrics.stages import ChangePointStages, ThresholdStage, across_seeds
from critwin.errors import ConfigError

STEPS = np.arange(1, 201) * 10.0


def staged_curve(rise_at=(300, 1200), levels=(0.1, 0.5, 0.95), dip=None):
    """Piecewise-constant levels switching at given steps (a smooth-free 'stage' curve)."""
    c = np.full(len(STEPS), levels[0])
    for t, v in zip(rise_at, levels[1:]):
        c[STEPS >= t] = v
    if dip is not None:
        a, b, v = dip
        c[(STEPS >= a) & (STEPS < b)] = v
    return c


def test_threshold_rule_by_hand():
    c = np.array([0.1, 0.95, 0.5, 0.96, 0.97, 0.98, 0.99])
    s = np.arange(7) * 100.0
    assert ThresholdStage(0.95, 3).fit(s, c).completion_ == 300.0       # 0.95 at 100 is not held 3 times
    assert ThresholdStage(0.95, 1).fit(s, c).completion_ == 100.0
    assert ThresholdStage(0.999, 3).fit(s, c).censored_
    with pytest.raises(ConfigError, match="tau"):
        ThresholdStage(1.5)


def test_change_points_find_two_rises_in_order():
    cp = ChangePointStages().fit(STEPS, staged_curve())
    assert len(cp.rises_) == 2
    (r1, r2) = cp.rises_
    assert 200 <= r1["completion"] <= 400 and 900 <= r2["completion"] <= 1500   # log-grid resolution
    assert r1["to"] == pytest.approx(0.5, abs=0.05) and r2["to"] == pytest.approx(0.95, abs=0.05)


def test_a_dip_before_the_rise_is_a_stage_too():
    c = staged_curve(rise_at=(1000,), levels=(0.6, 0.95), dip=(200, 1000, 0.38))
    cp = ChangePointStages().fit(STEPS, c)
    assert len(cp.dips_) == 1 and cp.dips_[0]["level"] == pytest.approx(0.38, abs=0.03)
    assert cp.dips_[0]["depth"] == pytest.approx(0.22, abs=0.03)
    assert len(cp.rises_) >= 1 and cp.rises_[-1]["to"] == pytest.approx(0.95, abs=0.03)


def test_flat_curve_has_no_stages():
    cp = ChangePointStages().fit(STEPS, np.full(len(STEPS), 0.3))
    assert cp.rises_ == [] and cp.dips_ == []


def test_across_seeds_keeps_censored_runs():
    out = across_seeds([100.0, 200.0, float("nan")])
    assert out["median"] == 200.0 and out["fraction_reached"] == pytest.approx(2 / 3)
    assert across_seeds([float("nan"), float("nan"), 100.0])["median_censored"]
    with pytest.raises(ConfigError, match="times"):
        across_seeds([])


def test_stages_command_on_stored_curves(tmp_path, capsys):
    import json

    import pandas as pd

    from critwin.cli.main import main
    from critwin.empirical import Run, RunStore, TrainConfig
    store = RunStore(tmp_path / "runs")
    for seed, rise, lr in ((0, 300, 3e-3), (1, 500, 3e-3), (2, None, 3e-3), (0, 800, 1e-3)):
        cfg = TrainConfig(seed=seed, steps=2000, lr=lr)
        curve = staged_curve(rise_at=(rise,), levels=(0.1, 0.97)) if rise else np.full(len(STEPS), 0.1)
        m = pd.DataFrame({"step": STEPS.astype("int64"), "split": "test", "metric": "event_a", "value": curve})
        store.save(Run(cfg.resolved(), m, {"status": "complete", "final": {}}, {}))
    code = main(["stages", "--store", str(tmp_path / "runs"), "--metric", "event_a", "--out", str(tmp_path / "o"),
                 "--json"])
    d = json.loads(capsys.readouterr().out)
    row, other = sorted(d["summary"], key=lambda r: -r["lr"])     # lr varies: two conditions
    assert code == 0 and row["median"] == 500.0 and row["fraction_reached"] == pytest.approx(2 / 3)
    assert other["lr"] == 1e-3 and other["median"] == 800.0 and other["seeds"] == 1
    assert sorted(r["stage_step"] for r in d["per_run"] if r["stage_step"] is not None) == [300.0, 500.0, 800.0]
    assert (tmp_path / "o" / "stages.png").stat().st_size > 0


def test_plasticity_window_from_stored_curves(tmp_path, capsys):
    """Frozen runs whose stage comes later than the baseline's: the window is where the delay
    exceeds the threshold; a stage never reached counts as the end of training."""
    import pandas as pd

    from critwin.bridge.plasticity import plasticity_configs, plasticity_window
    from critwin.empirical import Run, RunStore
    from critwin.empirical.sweep import config_from_flat
    store = RunStore(tmp_path / "runs")
    base = {"steps": 2000, "d": 16}
    stage = {None: 500, 100: 1500, 400: None, 1000: 500}       # frozen at 100: later; at 400: never
    for tf, t in stage.items():
        for s in (0, 1):
            flat = {**base, "seed": s} if tf is None else {**base, "seed": s, "freeze": f"layer0@{tf}"}
            cfg = config_from_flat(flat)
            curve = staged_curve(rise_at=(t,), levels=(0.1, 0.97)) if t else np.full(len(STEPS), 0.1)
            m = pd.DataFrame({"step": STEPS.astype("int64"), "split": "test", "metric": "event_c", "value": curve})
            store.save(Run(cfg.resolved(), m, {"status": "complete", "final": {}}, {}))
    _, table = plasticity_window(plasticity_configs(base, "layer0", [100, 400, 1000], [0, 1], branch=False), store,
                                 delay=100, train=False)
    t = table.set_index("freeze_step")
    assert t.loc[100, "delta_mean"] == 1000 and t.loc[400, "delta_mean"] == 1500 and t.loc[1000, "delta_mean"] == 0
    assert list(t.in_window) == [True, True, False] and t.loc[400, "reached"] == 0.0
    assert list(t.final_mean) == [0.97, 0.1, 0.97]           # frozen at 400 the curve stays at its start
    import json

    from critwin.cli.main import main
    code = main(["plasticity", "--set", "steps=2000", "--set", "d=16", "--component", "layer0,layer1", "--start", "100",
                 "--stop", "1000", "--every", "300", "--seeds", "2", "--delay", "100", "--store", str(tmp_path / "runs"),
                 "--no-train", "--no-branch", "--out", str(tmp_path / "o"), "--json", "--metric", "event_c",
                 "--split", "test"])          # the curves stored above (not the anchor task's own, acc on ood)
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["windows"] == {"layer0 event_c": [100, 400], "layer1 event_c": []}
    assert {r["component"] for r in d["table"]} == {"layer0"} and d["table"][0]["baseline_stage"] == 500
    assert d["table"][0]["baseline_final"] == 0.97
    assert (tmp_path / "o" / "plasticity.png").stat().st_size > 0


def test_plasticity_by_branching_equals_training_each_run_from_zero(tmp_path):
    """The baseline's checkpoints let each frozen run start at t_f: same per-run stage times as
    the same runs trained from step 0."""
    from critwin.bridge.plasticity import plasticity_configs, plasticity_window
    from critwin.empirical import RunStore
    from critwin.empirical.sweep import LocalExecutor
    base = {"steps": 60, "d": 16, "batch_size": 32, "eval_every": 10, "lr": 1e-2}
    out = {}
    for branch in (True, False):
        store = RunStore(tmp_path / str(branch))
        per_run, table = plasticity_window(plasticity_configs(base, "layer0", [0, 20, 40], [0], branch), store,
                                           metric="acc", split="train", executor=LocalExecutor(1), progress=False)
        out[branch] = per_run
        runs = [store.load(r) for r in store.scan()[0]]
        assert sum(r.config["branch"] is not None for r in runs) == (2 if branch else 0)
    assert out[True].equals(out[False])


def test_branches_of_a_failed_baseline_are_left_for_later(tmp_path):
    """A baseline that failed has no checkpoints: its branches are not trained (they would be
    stored as failed and never retried), so a later call can still train them."""
    from critwin.bridge.plasticity import plasticity_configs, plasticity_window
    from critwin.empirical import RunStore
    from critwin.empirical.sweep import LocalExecutor
    from critwin.empirical.sweep.runner import failed_run
    base = {"steps": 60, "d": 16, "batch_size": 32, "eval_every": 10, "lr": 1e-2}
    cfgs = plasticity_configs(base, "layer0", [20, 40], [0])
    store = RunStore(tmp_path)
    store.save(failed_run(cfgs[(None, 0)].resolved(), "killed"))
    per_run, table = plasticity_window(cfgs, store, metric="acc", split="train", executor=LocalExecutor(1),
                                       progress=False)
    assert per_run.empty and store.scan()[0] == [cfgs[(None, 0)].run_id()]
    assert all(store.status(c.run_id()) is None for k, c in cfgs.items() if k[0] is not None)


def test_plasticity_from_a_stored_baseline_shares_its_runs(tmp_path, capsys):
    """--baseline RUN_ID freezes from the stored run's own checkpoints: the same runs (ids, stage
    table) as --set with that config and those freeze steps, and nothing trained twice."""
    import json

    import pandas as pd

    from critwin.cli.main import main
    from critwin.empirical import RunStore
    from critwin.empirical.sweep import config_from_flat
    store = RunStore(tmp_path / "runs")
    flat = {"steps": 60, "d": 16, "batch_size": 32, "eval_every": 10, "lr": 1e-2, "freeze_optimizer": "rebuild"}
    base = config_from_flat({**flat, "seed": 0, "checkpoints": [20, 40]})
    common = ["--component", "layer0", "--metric", "acc", "--split", "train", "--store", str(store.root),
              "--workers", "1", "--no-progress", "--no-figure", "--json"]
    spec = tmp_path / "baseline.toml"           # the baseline trained the way trial I was: a spec with checkpoints
    spec.write_text("[base]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in flat.items()) + "checkpoints = [20, 40]\n")
    assert main(["sweep", "run", str(spec), "--store", str(store.root), "--workers", "1", "--no-progress", "--json"]) == 0
    capsys.readouterr()
    assert store.status(base.run_id()) == "complete"
    assert main(["plasticity", "--baseline", base.run_id(), "--out", str(tmp_path / "a")] + common) == 0
    a = json.loads(capsys.readouterr().out)
    ids, _ = store.scan()
    assert len(ids) == 3                                     # the baseline and two branches
    assert sum(store.load(i).config["branch"] is not None for i in ids) == 2
    sets = [x for k, v in flat.items() for x in ("--set", f"{k}={v}")]
    assert main(["freeze-sweep", *sets, "--start", "20", "--stop", "40", "--every", "20", "--seeds", "1", "--no-train",
                 "--out", str(tmp_path / "b"), "--components", "layer0"] + common[2:]) == 0     # the names
    b = json.loads(capsys.readouterr().out)
    assert a["table"] == b["table"] and len(a["table"]) == 2 and len(store.scan()[0]) == 3
    assert main(["plasticity", "--baseline", base.run_id(), "--out", str(tmp_path / "n"), "--no-train", "--metric",
                 "acc,loss"] + common[:2] + common[4:]) == 0     # accuracy stays near 0.07 (never 0.9); the loss is above 0.9 at once
    n = json.loads(capsys.readouterr().out)
    assert n["baseline_never_completes"] == ["acc"] and {r["metric"] for r in n["table"]} == {"acc", "loss"}
    assert main(["plasticity", "--baseline", base.run_id(), "--out", str(tmp_path / "cp"), "--no-train", "--method",
                 "changepoint"] + common) == 0      # the same stored runs, timed by change points instead
    cp = json.loads(capsys.readouterr().out)
    assert len(cp["table"]) == 2 and len(store.scan()[0]) == 3
    keep = {**flat, "freeze_optimizer": "keep"}        # a baseline that keeps the optimizer, its branches rebuild it
    spec.write_text("[base]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keep.items()) + "checkpoints = [20, 40]\n")
    assert main(["sweep", "run", str(spec), "--store", str(store.root), "--workers", "1", "--no-progress", "--json"]) == 0
    kid = json.loads(capsys.readouterr().out)["run_ids"][0]
    assert main(["plasticity", "--baseline", kid, "--freeze-optimizer", "rebuild", "--out", str(tmp_path / "c")]
                + common) == 0
    capsys.readouterr()
    runs = [store.load(i) for i in store.scan()[0]]
    branches = {(r.config["branch"].split("@")[0], tuple(map(tuple, r.config["freeze"]))): r for r in runs
                if r.config["branch"]}
    assert len(runs) == 6 and len(branches) == 4
    for (src, freeze), r in branches.items():
        if src == kid:                                 # rebuilt at the freeze, from the keep baseline:
            twin = branches[(base.run_id(), freeze)]   # the same numbers as the rebuild baseline's branch
            assert r.config["freeze_optimizer"] == "rebuild"
            pd.testing.assert_frame_equal(r.metrics, twin.metrics)
    assert main(["plasticity", "--baseline", "0123456789abcdef"] + common) != 0
    assert "baseline='0123456789abcdef' is invalid" in capsys.readouterr().err
    assert main(["plasticity", "--baseline", base.run_id(), "--set", "d=32"] + common) != 0
    assert "set=" in capsys.readouterr().err
