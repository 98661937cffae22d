import json

import numpy as np
import pandas as pd
import pytest

from critwin.cli.main import main
from critwin.bridge.compare import setting_for
from critwin.bridge.observed import observed_window, timescales
from critwin.empirical import RunStore, load_runs
from critwin.empirical.sweep import LocalExecutor, SweepSpec, run_sweep
from critwin.theory.setting import exponent_from_multiplier, multiplier_from_exponent


def test_observed_window_and_bootstrap():
    rows = [(on, s, v) for on, vals in ((0, [0.1, 0.2, 0.1]), (100, [0.6, 0.7, 0.8]), (200, [0.9, 0.8, 0.95]),
                                        (300, [0.2, 0.1, 0.3])) for s, v in enumerate(vals)]
    t = pd.DataFrame(rows, columns=["onset", "seed", "value"])
    w = observed_window(t, 0.5, n_boot=200)
    assert (w["first"], w["last"]) == (100.0, 200.0) and w["seeds"] == 3
    assert w["first_ci"] == [100.0, 100.0] and w["p_window_exists"] == 1.0
    assert w["mean"][1] == pytest.approx(0.7)
    assert w["first_bracket"] == [0.0, 100.0] and w["last_bracket"] == [200.0, 300.0]   # resolution 100


def test_window_absent_when_nothing_crosses():
    t = pd.DataFrame([(on, s, 0.1) for on in (0, 100) for s in range(2)], columns=["onset", "seed", "value"])
    w = observed_window(t, 0.5, n_boot=50)
    assert np.isnan(w["first"]) and w["p_window_exists"] == 0.0


def test_init_conversion_roundtrip():
    g = np.array([0.3, 0.8, 1.5])
    np.testing.assert_allclose(multiplier_from_exponent(exponent_from_multiplier(g, 64), 64), g)
    # exponent 0.5 is std 1/sqrt(d): multiplier 1
    assert multiplier_from_exponent(0.5, 64) == pytest.approx(1.0)
    s = setting_for({"task": "anchor_permutation", "gamma": 0.5, "init": "exponent", "d": 64, "lr": 3e-3})
    assert s.gamma == pytest.approx(1.0) and s.train_pairs == 45 and s.eta == 3e-3


@pytest.fixture(scope="module")
def onset_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("onsets")
    spec = SweepSpec({"d": 16, "steps": 120, "batch_size": 32, "eval_every": 20, "wd": 5.0, "wd_width": 40},
                     {"wd_window_start": [0, 40, 80], "seed": [0, 1]})
    run_sweep(spec.expand(), RunStore(path), LocalExecutor(2), progress=False)
    return path


def test_bridge_compare_cli(capsys, onset_store, tmp_path):
    code = main(["bridge", "compare", "--store", str(onset_store), "--threshold", "0.05", "--out",
                 str(tmp_path), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and len(d["rows"]) == 1
    row = d["rows"][0]
    assert row["onsets"] == 3 and row["seeds"] == 2
    assert {"recipe_t1", "recipe_t2", "reduced_t1", "observed_first", "observed_last_ci"} <= set(row)
    assert (tmp_path / "bridge_compare.png").stat().st_size > 1000
    code = main(["bridge", "compare", "--store", str(onset_store), "--threshold", "0.05", "--methods", "recipe",
                 "recipe_run", "recipe_adamw", "--no-figure", "--json"])
    row = json.loads(capsys.readouterr().out)["rows"][0]
    speedup = row["recipe_t1"] / row["recipe_adamw_t1"]          # AdamW over GD on the stylised model
    assert code == 0 and speedup > 2
    assert row["recipe_run_t1"] / row["recipe_run_adamw_t1"] == pytest.approx(speedup)   # the same correction


def test_timescales(onset_store):
    ts = timescales(load_runs(onset_store))
    assert len(ts) == 6 and {"memorization_step", "loss_half_step", "reasoning_step"} <= set(ts.columns)
    assert (ts.loss_half_step.dropna() > 0).all()


def test_demo_end_to_end_small(capsys, tmp_path):
    """A shortened demo: probes, the predicted edge, 8 trained runs, the verdict and the figure; the verdict and
    the edge are recomputed here from the stored runs and the probe's own curves."""
    code = main(["demo", "--steps", "500", "--width", "50", "--task-seeds", "1", "--seeds", "2", "--workers", "2",
                 "--store", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["schedule"] for r in d["rows"]][:2] == ["no decay", "[0, 50)"]
    assert d["rows"][-1]["schedule"] == "[400, 450)"
    from critwin.bridge.survival import held_curves, probe_config
    held = []
    for seed in range(2):
        c = held_curves(probe_config("sgd", 0.5, 0, seed, 600), [4e-3])
        h = np.array(c["attn_0.004"])
        h[0] = h[1]
        held.append([h[: i + 1].max() for i in range(len(h))])
    mean = np.mean(held, axis=0)
    steps = np.array(c["step"])
    above = np.flatnonzero(mean >= 0.5)
    if d["predicted_edge"] is None:
        assert len(above) == 0
    else:
        i = above[0]
        assert steps[i - 1] < d["predicted_edge"] <= steps[i]
    store = RunStore(tmp_path / "runs")
    runs = [store.load(r) for r in store.scan()[0]]
    assert len(runs) == 2 * len(d["rows"])
    late = [r.summary["final"]["ood_acc"] for r in runs if r.config["wd_windows"] and r.config["wd_windows"][0][0] == 400]
    early = {name: [r.summary["final"]["ood_acc"] for r in runs if (r.config["wd_windows"][0][0] if r.config["wd_windows"]
                                                                    else None) == o] for name, o in (("none", None), ("zero", 0))}
    worse = max(early.values(), key=np.mean)
    se = np.sqrt(np.var(late, ddof=1) / 2 + np.var(worse, ddof=1) / 2)
    assert d["late_minus_early"] == pytest.approx(np.mean(late) - np.mean(worse))
    assert d["window_found"] == bool(np.mean(late) - np.mean(worse) > 3 * se)
    assert all((r.config["optimizer"], r.config["decay_form"], r.config["decay_set"]) == ("sgd", "l2", "non_embedding")
               for r in runs if r.config["wd_windows"])
    assert (tmp_path / "out" / "demo.png").stat().st_size > 1000


@pytest.mark.parametrize("argv, field", [(["--wd", "nan"], "wd"), (["--steps", "3000", "--width", "3000"], "width"),
                                         (["--task-seeds", "0"], "task_seeds")])
def test_demo_bad_input_names_the_field(capsys, tmp_path, argv, field):
    assert main(["demo", *argv, "--store", str(tmp_path)]) == 2
    assert field in capsys.readouterr().err


def test_report(capsys, onset_store, tmp_path):
    code = main(["report", "--store", str(onset_store), "--out", str(tmp_path), "--json"])
    d = json.loads(capsys.readouterr().out)
    text = (tmp_path / "report.md").read_text()
    assert code == 0 and "## Paper checks" in text and "### T1" in text and "W1**: " in text
    assert (tmp_path / "onsets.png").exists() and (tmp_path / "theory_windows.png").exists()


def test_timescales_cli(capsys, onset_store):
    code = main(["bridge", "timescales", "--store", str(onset_store), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and sum(r["runs"] for r in d["rows"]) == 6 and len(d["per_run"]) == 6


def test_compare_memorization_edge_is_the_runs_memorization_step(capsys, tmp_path):
    """The memorization method's t1 is the mean, over runs with no decay before they fit the
    training set, of the first evaluation with train accuracy >= 0.9 (recounted here from the curves)."""
    spec = SweepSpec({"d": 32, "steps": 400, "eval_every": 20, "wd": 5.0, "wd_width": 40},
                     {"wd_window_start": [0, 360], "seed": [0, 1]})      # these fit the training set by ~240
    run_sweep(spec.expand(), RunStore(tmp_path), LocalExecutor(2), progress=False)
    code = main(["bridge", "compare", "--store", str(tmp_path), "--threshold", "0.0", "--methods", "recipe",
                 "memorization", "--no-figure", "--json"])
    row = json.loads(capsys.readouterr().out)["rows"][0]
    runs = load_runs(tmp_path)
    firsts = []
    for rid, g in runs[(runs.split == "train") & (runs.metric == "acc")].groupby("run_id"):
        hit = g[g.value >= 0.9].step
        onset = g.wd_window_start.iloc[0]
        if len(hit) and onset >= hit.min():
            firsts.append(hit.min())
    assert code == 0 and len(firsts) >= 2
    assert row["memorization_t1"] == pytest.approx(np.mean(firsts))
    assert row["memorization_first_error"] == pytest.approx(row["observed_first"] - np.mean(firsts))
    assert row["memorization_t2"] is None or np.isnan(row["memorization_t2"])


def test_compare_shows_the_survival_method_beside_the_others(capsys, onset_store, tmp_path):
    from critwin.bridge.compare import survival_window
    curves = {"adamw gamma 0.8": {"step": [0, 10, 20, 30], "attn_0.016": [0.6, 0.2, 0.4, 0.8]}}
    assert survival_window(curves, "l2/non_embedding", "adamw", 0.8, 1.6e-2)["t1_steps"] == pytest.approx(22.5)
    assert np.isnan(survival_window(curves, "decoupled/matrices", "adamw", 0.8, 1.6e-2)["t1_steps"])
    path = tmp_path / "held_curves.json"
    path.write_text(json.dumps(curves))
    code = main(["bridge", "compare", "--store", str(onset_store), "--threshold", "0.05", "--methods", "recipe",
                 "survival", "--survival-curves", str(path), "--no-figure", "--json"])
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert code == 0 and row["optimizer"] == "adamw" and "recipe_t1" in row
    assert row["survival_t1"] is None or np.isnan(row["survival_t1"])     # the onset store's reading is decoupled


def test_compare_plateau_method_reads_the_right_edge_off_a_late_probe(capsys, onset_store, tmp_path):
    from critwin.bridge.compare import plateau_window
    lag = np.arange(0, 14001, 100.0)
    probes = {"right_adamw_g0.8_l0.01_w1000": {"lag": lag.tolist(), "mean": (0.4 + lag / 20000).tolist(),
                                              "probe_onset": 6000}}
    got = plateau_window(probes, "l2/non_embedding", "adamw", 0.8, 0.01, 1000, 20000, [0, 9000, 12000, 15000, 18000], 0.7)
    assert got["t2_steps"] == pytest.approx(14000.0) and np.isnan(got["t1_steps"])   # 0.4 + (20000 - o) / 20000 = 0.7
    for other in (("decoupled/matrices", 0.8, 1000), ("l2/non_embedding", 1.1, 1000), ("l2/non_embedding", 0.8, 2000)):
        assert np.isnan(plateau_window(probes, other[0], "adamw", other[1], 0.01, other[2], 20000, [9000, 18000],
                                       0.7)["t2_steps"])
    assert main(["bridge", "compare", "--store", str(onset_store), "--methods", "plateau", "--no-figure"]) == 2
    assert "late_probes" in capsys.readouterr().err
    path = tmp_path / "late_probes.json"
    path.write_text(json.dumps(probes))
    code = main(["bridge", "compare", "--store", str(onset_store), "--threshold", "0.05", "--methods", "recipe",
                 "plateau", "--late-probes", str(path), "--no-figure", "--json"])
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert code == 0 and (row["plateau_t2"] is None or np.isnan(row["plateau_t2"]))    # no probe for this store's cell
