"""Skill over trivial baselines (bridge.skill, bridge.panel), checked against independent computations: scipy's
Mann-Whitney U, a brute-force likelihood grid, hand-worked edges; and the Theory III registration remade from its
committed inputs, so a change of level, rule or probe reading fails here."""
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from critwin.bridge.panel import (at_onset, cell_plan, fit_baselines, measured_edge, method_curve,
                                  predict_baselines, score_panel)
from critwin.bridge.skill import (OnsetLogistic, auc, brier, crossing, edge_error, error_skill, nearest_cell)
from critwin.errors import ConfigError

THEORY3 = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "theory3"


def test_auc_is_mann_whitney_u_over_the_pairs():
    rng = np.random.default_rng(3)
    p = rng.integers(0, 5, 40) / 4.0          # many ties
    y = rng.random(40) < 0.4
    u = mannwhitneyu(p[y], p[~y]).statistic
    assert auc(p, y) == pytest.approx(u / (y.sum() * (~y).sum()))
    assert math.isnan(auc(p, np.ones(40, bool)))


def test_onset_logistic_is_the_likelihood_maximum():
    rng = np.random.default_rng(1)
    onsets = rng.choice([0, 100, 200, 300, 400, 800], 200)
    y = rng.random(200) < 1 / (1 + np.exp(-(onsets - 250) / 80))
    m = OnsetLogistic().fit(onsets, y)

    def nll(a, b):
        z = a + b * onsets / 100
        return np.sum(np.log1p(np.exp(z)) - y * z)
    grid = min(nll(a, b) for a in np.linspace(-8, 4, 61) for b in np.linspace(0, 4, 61))
    assert nll(*m.coef_) <= grid + 1e-9
    assert m.edge() == pytest.approx(-m.coef_[0] / m.coef_[1] * 100)
    assert m.predict_proba([m.edge()])[0] == pytest.approx(0.5)
    with pytest.raises(ConfigError):
        OnsetLogistic().fit([0, 1], [1, 1])


def test_crossing_and_edge_error_by_hand():
    assert crossing([0, 50, 100, 150], [0.1, 0.3, 0.7, 0.9]) == pytest.approx(75.0)
    assert crossing([0, 50], [0.5, 0.9]) == 0.0
    assert crossing([0, 50, 100], [0.1, 0.6, 0.4]) == pytest.approx(50 * 0.4 / 0.5)
    assert crossing([0, 50, 100], [0.1, 0.2, 0.3]) is None
    assert edge_error(75, 175) == pytest.approx(1.0)              # (75+25)/(175+25) = 1/2
    assert edge_error(None, 1600) == 0.0                          # no window is 1,600 steps
    assert edge_error(0, None) == pytest.approx(math.log2(65))   # 25 against 1,625
    with pytest.raises(ConfigError):
        crossing([0, 0], [0.1, 0.2])


def test_skill_interval_resamples_whole_clusters():
    # every cluster has the same difference: any resample of whole clusters gives exactly that skill
    clusters = np.repeat(["a", "b", "c", "d", "e", "f", "g", "h"], 3)
    base = np.arange(24, dtype=float)
    out = error_skill(clusters, base + 0.25, base)
    assert out["skill"] == pytest.approx(0.25) and out["lo"] == pytest.approx(0.25) and out["hi"] == pytest.approx(0.25)
    assert out["verdict"] == "skill" and out["clusters"] == 8
    assert "too few" in error_skill(clusters[:21], base[:21] + 0.25, base[:21])["verdict"]
    # a method that only matches the baseline shows no skill
    rng = np.random.default_rng(0)
    noise = rng.normal(size=24)
    assert error_skill(clusters, noise, noise)["skill"] == 0.0


def test_nearest_cell_by_brute_force():
    build = [{"optimizer": o, "gamma": g, "lambda": l, "edge": i}
             for i, (o, g, l) in enumerate([(o, g, l) for o in ("adamw", "sgd") for g in (0.5, 0.8, 1.1)
                                            for l in (4e-3, 1.6e-2)])]
    for cell in [{"optimizer": "sgd", "gamma": 0.65, "lambda": 8e-3}, {"optimizer": "adamw", "gamma": 1.2, "lambda": 3.2e-2}]:
        same = [b for b in build if b["optimizer"] == cell["optimizer"]]
        d = [((b["gamma"] - cell["gamma"]) / 0.3) ** 2 + (np.log2(b["lambda"] / cell["lambda"]) / 2) ** 2 for b in same]
        assert nearest_cell(cell, build) is same[int(np.argmin(d))]


def test_method_curves_read_only_the_run_up_to_its_onset():
    # step 0's share is the initial gradient's transient: the next state stands for it
    curves = {"step": [0, 10, 20, 30, 40], "attn_0.008": [0.8, 0.1, 0.3, 0.6, 0.2]}
    steps, p = method_curve("held_max", curves, 8e-3)
    assert list(p) == [0.1, 0.1, 0.3, 0.6, 0.6]
    assert list(method_curve("held_half", curves, 8e-3)[1]) == [0, 0, 0, 1, 1]
    assert at_onset(steps, p, 25) == 0.3 and at_onset(steps, p, 30) == 0.6 and at_onset(steps, p, 800) == 0.6
    with pytest.raises(ConfigError, match="lambda"):
        method_curve("held_max", curves, 1e-2)
    with pytest.raises(ConfigError, match="method"):
        method_curve("oracle", curves, 8e-3)


def _toy_registration():
    cell = cell_plan("left", "sgd", 0.65, 8e-3, 5000)
    cell["predicted"] = {"perfect": 100.0, "constant": 400.0}
    runs = [{"cell": cell["id"], "onset": o, "task_seed": t, "seed": s} for o in (0, 50, 100, 150, 200, 300, 400, 600, 800)
            for t in range(3) for s in range(2)]
    pred = pd.DataFrame(runs)
    pred["perfect"] = (pred["onset"] >= 100).astype(float)
    pred["constant"] = (pred["onset"] >= 400).astype(float)
    measured = pred[["cell", "onset", "task_seed", "seed"]].assign(ood_acc=np.where(pred["onset"] >= 100, 0.9, 0.1))
    return {"methods": ["perfect"], "baselines": ["constant"], "cells": [cell]}, pred, measured


def test_panel_score_on_a_known_case():
    reg, pred, measured = _toy_registration()
    assert measured_edge(measured) == 75.0
    out = score_panel(reg, pred, measured)
    runs = out["runs"].set_index("name")
    assert runs.loc["perfect", "brier"] == 0.0 and runs.loc["perfect", "auc"] == 1.0
    assert runs.loc["constant", "brier"] == pytest.approx(brier(pred["constant"], measured["ood_acc"] >= 0.5))
    # the mean outcome is 0.1 at onset 50 and 0.9 at 100: the crossing is half-way, 75
    assert out["cells"].iloc[0]["measured"] == 75.0
    assert out["cells"].iloc[0]["perfect_err"] == pytest.approx(edge_error(100, 75))
    # a half-measured cell is not scored per cell, but its runs are
    part = score_panel(reg, pred, measured.iloc[:20])
    assert part["measured_cells"] == 0 and part["measured_runs"] == 20
    # calibration: the perfect method's runs sit in the end bins and compose exactly when it says 1
    cal = out["calibration"].set_index(["name", "bin"])
    assert cal.loc[("perfect", "[0, 0.1]"), "n"] == 12 and cal.loc[("perfect", "[0, 0.1]"), "observed"] == 0
    assert cal.loc[("perfect", "(0.9, 1]"), "n"] == 42 and cal.loc[("perfect", "(0.9, 1]"), "observed"] == 1
    assert cal.loc[("constant", "[0, 0.1]"), "observed"] == pytest.approx(24 / 36)


def test_baselines_are_fitted_on_build_data_only():
    build_runs = pd.read_csv(THEORY3 / "build_runs.csv")
    build_cells = pd.read_csv(THEORY3 / "build_cells.csv").to_dict(orient="records")
    base = fit_baselines(build_runs, build_cells)
    assert base["constant"] == pytest.approx(np.mean([c["edge"] for c in build_cells]))
    left = build_runs[build_runs["width"] == 5000]
    assert base["onset_logistic"].coef_[1] > 0                       # later onsets compose more often
    cell = {"optimizer": "sgd", "gamma": 1.2, "lambda": 3.2e-2}
    p = predict_baselines(base, cell, onset=300)
    near = left[(left["optimizer"] == "sgd") & (left["gamma"] == 1.1) & (left["lambda"] == 0.016)]
    frac = (near.groupby("onset")["ood_acc"].apply(lambda a: (a >= 0.5).mean()))
    assert p["nearest"] == pytest.approx(np.interp(300, frac.index, frac.values))


@pytest.mark.skipif(not (THEORY3 / "registration.json").is_file(), reason="the panel is not registered")
def test_the_registered_predictions_are_remade_from_their_committed_inputs():
    """Pins the level, the running maximum, the probe reading and the baselines' fits of the registration."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("register3", THEORY3 / "register.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    reg = json.loads((THEORY3 / "registration.json").read_text())
    runs = pd.read_csv(THEORY3 / "registration_runs.csv")
    probes = mod.load_probes(THEORY3 / "probes")
    assert len(probes) == 48 and len(reg["cells"]) == 24 and len(runs) == 24 * 54
    assert set(runs["onset"]) == {0, 50, 100, 150, 200, 300, 400, 600, 800}
    assert len(runs.drop_duplicates(["cell", "onset", "task_seed", "seed"])) == len(runs)
    build = pd.read_csv(THEORY3 / "build_cells.csv")
    assert ((runs["onset"] >= build["edge"].mean()) == (runs["constant"] == 1)).all()
    rng = np.random.default_rng(0)
    for i in rng.choice(len(runs), 60, replace=False):
        r = runs.iloc[i]
        cell = next(c for c in reg["cells"] if c["id"] == r["cell"])
        curves = probes[(cell["optimizer"], float(cell["gamma"]), int(r["task_seed"]), int(r["seed"]))]
        held, steps = np.asarray(curves[f"attn_{cell['lambda']:g}"]), np.asarray(curves["step"])
        seen = held[(steps > 0) & (steps <= max(r["onset"], steps[1]))]
        assert r["held_max"] == pytest.approx(seen.max(), abs=1e-4)
        assert r["held_half"] == float(seen.max() >= 0.5)


def test_a_cell_export_keeps_rows_whose_store_is_gone(tmp_path):
    """measured.py: a run folder in the store gives its row; an earlier row whose run the store lacks is kept (a
    store does not outlive its machine); a run in both takes the store's row."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "measured", THEORY3 / "measured.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cell = {"id": "left_sgd_g0.4_l0.002_w5000", "optimizer": "sgd", "gamma": 0.4, "lambda": 0.002, "width": 5000}
    for rid, onset, acc in (("run-b", 150, 0.9), ("run-c", 200, 0.8)):
        d = tmp_path / rid
        d.mkdir()
        d.joinpath("config.json").write_text(json.dumps({
            "task": "anchor_permutation", "optimizer": "sgd", "model": {"gamma": 0.4}, "decay_form": "l2",
            "wd_windows": [[onset, onset + 5000, 0.002]], "task_seed": 1, "seed": 0, "steps": 20000}))
        d.joinpath("summary.json").write_text(json.dumps({"status": "complete", "steps_done": 20000,
                                                          "final": {"ood_acc": acc}}))
        d.joinpath("environment.json").write_text(json.dumps({"git_commit": "abc"}))
    new = pd.DataFrame(mod.cell_runs(tmp_path, cell))
    old = pd.DataFrame([{"cell": cell["id"], "onset": 0, "task_seed": 1, "seed": 0, "ood_acc": 0.1, "run": "run-a",
                         "commit": "abc"},
                        {"cell": cell["id"], "onset": 150, "task_seed": 1, "seed": 0, "ood_acc": 0.2, "run": "run-b",
                         "commit": "abc"}])
    out = mod.merged(old, new)
    assert list(out["run"]) == ["run-a", "run-b", "run-c"] and list(out["ood_acc"]) == [0.1, 0.9, 0.8]
    assert mod.merged(old.iloc[:0], new)["run"].tolist() == ["run-b", "run-c"]


def test_reliability_bins_match_a_count_run_by_run():
    """The calibration table against a plain count: each run lands in exactly one bin ([0, 0.1], then (lo, hi]),
    and each bin's mean p and fraction composing are those of its runs."""
    from critwin.bridge.skill import RELIABILITY_BINS, reliability
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.random(200), [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]])
    y = rng.random(len(p)) < p
    rows = reliability(p, y)
    assert [r["bin"] for r in rows] == ["[0, 0.1]", "(0.1, 0.3]", "(0.3, 0.5]", "(0.5, 0.7]", "(0.7, 0.9]", "(0.9, 1]"]
    assert sum(r["n"] for r in rows) == len(p)
    for k, r in enumerate(rows):
        lo, hi = RELIABILITY_BINS[k], RELIABILITY_BINS[k + 1]
        mine = [(pi, yi) for pi, yi in zip(p, y) if (lo < pi <= hi) or (k == 0 and pi == 0.0)]
        assert r["n"] == len(mine)
        assert r["predicted"] == pytest.approx(sum(a for a, _ in mine) / len(mine))
        assert r["observed"] == pytest.approx(sum(b for _, b in mine) / len(mine))
    empty = reliability([0.05, 0.95], [False, True])
    assert [r["n"] for r in empty] == [1, 0, 0, 0, 0, 1] and np.isnan(empty[1]["predicted"])
