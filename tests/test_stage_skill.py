"""Predicted stages against a base-rate baseline: hand-built runs whose stage times are known, brute force for the
censoring rule and the base rate, and ranks by hand."""
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from critwin.bridge.stage_skill import (
    B_FIRST,
    C_FIRST,
    NEITHER,
    base_rate_value,
    closer,
    dip_of,
    log_ratio_interval,
    observed_intervals,
    per_run,
    predicted_late_order,
    score,
)

STEPS = np.arange(0, 1001, 100)


def step_curve(at, low=0.3, high=0.99):
    """low before step `at`, high from it on (at None: never)."""
    return np.where(STEPS >= at, high, low) if at is not None else np.full(len(STEPS), low)


def export(runs):
    """index and metrics frames of hand-built runs: {run_id: (task, hops, task_seed, seed, {stage metric: curve})}."""
    index, rows = [], []
    for rid, (task, hops, ts, seed, curves) in runs.items():
        index.append({"run_id": rid, "task": task, "hops": hops, "task_seed": ts, "seed": seed, "freeze": "none",
                      "steps_per_epoch": 100.0, "steps_done": 1000})
        for metric, c in curves.items():
            rows += [(rid, int(s), "test", metric, float(v)) for s, v in zip(STEPS, c)]
    return pd.DataFrame(index), pd.DataFrame(rows, columns=["run_id", "step", "split", "metric", "value"])


def test_hand_built_runs_give_known_intervals_and_orders():
    blip = step_curve(500)
    blip[2] = 0.99                                   # one evaluation at the level is not three in a row
    idx, m = export({
        "c_first": ("alchemy_withheld", np.nan, 0, 0, {"event_a": step_curve(200), "p_c_given_ab": blip,
                                                       "p_b_given_a": step_curve(None)}),
        "b_first": ("alchemy_composition", 2, 0, 0, {"event_a": step_curve(100), "p_b_given_a": step_curve(300),
                                                     "p_c_given_ab": step_curve(800)}),
        "same": ("alchemy_composition", 2, 0, 1, {"event_a": step_curve(100), "p_b_given_a": step_curve(300),
                                                  "p_c_given_ab": step_curve(300)}),
        "neither": ("alchemy_decomposition", 2, 1, 0, {"event_a": step_curve(0), "p_b_given_a": step_curve(None),
                                                       "p_c_given_ab": step_curve(None)}),
    })
    frozen = idx.iloc[:1].assign(run_id="frozen", freeze="layer0@300")    # an intervention: left out
    obs = observed_intervals(pd.concat([idx, frozen]), m, protocol_epochs=1000).set_index("run_id")
    assert sorted(obs.index) == ["b_first", "c_first", "neither", "same"]
    r = obs.loc["c_first"]
    assert (r["obs_lo_A"], r["obs_hi_A"]) == (100, 200)
    assert (r["obs_lo_C|AB"], r["obs_hi_C|AB"]) == (400, 500) and not r["censored_C|AB"]
    assert r["obs_lo_B|A"] == 1000 and r["obs_hi_B|A"] == math.inf and r["censored_B|A"]
    assert r["epoch_reached_B|A"] == 10 and r["protocol_epochs"] == 1000
    assert (obs.loc["neither", "obs_lo_A"], obs.loc["neither", "obs_hi_A"]) == (0, 0)   # complete at step 0
    assert obs.loc["neither", "instance"] == "alchemy_decomposition_h2_t1"
    # the model: C|AB early everywhere, B|A never in decomposition
    predicted = {
        "alchemy_withheld_t0": {"stage_times": {"A": 1.0, "B|A": 4.0, "C|AB": 2.0}},
        "alchemy_composition_h2_t0": {"stage_times": {"A": 1.0, "B|A": 8.0, "C|AB": 2.0}},
        "alchemy_decomposition_h2_t1": {"stage_times": {"A": 1.0, "B|A": float("nan"), "C|AB": float("nan")}},
    }
    for p in predicted.values():
        p["curves"] = pd.DataFrame({"t": [1.0, 2.0, 3.0], "p_b_given_a": [0.5, 0.2, 0.9]})
    runs = per_run(obs.reset_index(), predicted).set_index("run_id")
    assert runs.loc["c_first", "obs_order"] == C_FIRST and runs.loc["b_first", "obs_order"] == B_FIRST
    assert pd.isna(runs.loc["same", "obs_order"]) and pd.isna(runs.loc["neither", "obs_order"])
    assert runs.loc["neither", "pred_order"] == NEITHER
    assert runs.loc["c_first", "obs_a_first"] and runs.loc["b_first", "obs_a_first"]
    # C|AB over A in c_first: C in (400, 500], A in (100, 200]
    assert np.isclose(runs.loc["c_first", "obs_log_C|AB/A_lo"], math.log(2.0))
    assert np.isclose(runs.loc["c_first", "obs_log_C|AB/A_hi"], math.log(5.0))
    assert np.isclose(runs.loc["c_first", "pred_log_C|AB/A"], math.log(2.0))
    table = score(runs.reset_index(), resamples=200).set_index("comparison")
    # decided orders: c_first (C first, model right), b_first (B first, model wrong): a tie in the base rate
    t = table.loc["late_order"]
    assert (t.decided, t.undecided, t.model_error, t.baseline_error) == (2, 2, 0.5, 0.5)
    assert np.isclose(table.loc["late_order_brier", "baseline_error"], 0.25)
    # C|AB over A: the only informative intervals are c_first's [log 2, log 5] and b_first's [log 7, log 16]
    # (b_first: C in (700, 800], A in (0, 100]: unbounded above); same: (log 2, inf); neither: none
    assert np.isfinite(table.loc["ratio C|AB/A", "skill"])


def test_censoring_decides_only_what_it_cannot_flip():
    """closer against a brute-force scan of the observed value over its interval."""
    rng = np.random.default_rng(1)
    for _ in range(400):
        m, b = rng.normal(size=2) * 2
        lo = rng.normal() * 2
        hi = lo + abs(rng.normal()) * 3
        grid = np.linspace(lo, hi, 2001)
        sides = set(np.sign(np.abs(m - grid) - np.abs(b - grid)).astype(int))
        got = closer(m, b, lo, hi)
        if len(sides) == 1:
            assert got == sides.pop()
        elif sides == {0, 1} or sides == {-1, 0}:
            assert got in (None, max(sides, key=abs))
        else:
            assert got is None
    # infinite ends by hand: a model that says "never" may be exactly right on a censored run
    assert closer(math.inf, 1.0, 2.0, math.inf) is None
    assert closer(math.inf, 1.0, -math.inf, 0.5) == 1          # the run completed: "never" is the farther
    assert closer(3.0, 1.0, 4.0, math.inf) == -1               # both below the bound: the larger is closer
    assert closer(0.5, 1.0, 4.0, math.inf) == 1
    assert closer(0.0, 1.0, -math.inf, math.inf) is None       # nothing known
    assert closer(float("nan"), 1.0, 0.0, 2.0) == 1            # no prediction loses


def test_log_ratio_intervals_and_orders_by_hand():
    assert log_ratio_interval(400, 500, 100, 200) == pytest.approx((math.log(2), math.log(5)))
    lo, hi = log_ratio_interval(1000, math.inf, 100, 200)          # numerator censored
    assert np.isclose(lo, math.log(5)) and hi == math.inf
    lo, hi = log_ratio_interval(700, 800, 0, 100)                  # denominator may be 0
    assert np.isclose(lo, math.log(7)) and hi == math.inf
    assert predicted_late_order(5.0, 1.0) == C_FIRST and predicted_late_order(float("nan"), 1.0) == C_FIRST
    assert predicted_late_order(1.0, math.inf) == B_FIRST and predicted_late_order(np.nan, np.nan) == NEITHER


def test_base_rate_value_is_inside_the_most_intervals():
    rng = np.random.default_rng(2)
    for _ in range(50):
        k = rng.integers(2, 9)
        lo = rng.normal(size=k)
        hi = lo + rng.uniform(0.1, 2, size=k)
        hi[rng.random(k) < 0.3] = math.inf
        lo[rng.random(k) < 0.3] = -math.inf
        iv = list(zip(lo, hi))
        v = base_rate_value(iv)
        grid = np.linspace(-6, 6, 24001)
        best = max(Counter({x: sum(a <= x <= z for a, z in iv) for x in grid}).values())
        assert sum(a <= v <= z for a, z in iv) >= best


def test_base_rate_order_by_brute_force_count():
    orders = [C_FIRST] * 5 + [B_FIRST] * 3 + [None] * 2
    runs = pd.DataFrame({"instance": [f"i{k % 4}" for k in range(10)], "obs_order": orders,
                         "pred_order": [C_FIRST] * 10, "obs_a_first": [True] * 10, "pred_a_first": [True] * 10,
                         **{f"{side}_{key}": [np.nan] * 10 for key in ("C|AB/B|A", "B|A/A", "C|AB/A")
                            for side in ("pred_log",)},
                         **{f"obs_log_{key}_{e}": [-math.inf if e == "lo" else math.inf] * 10
                            for key in ("C|AB/B|A", "B|A/A", "C|AB/A") for e in ("lo", "hi")}})
    t = score(runs, resamples=100).set_index("comparison")
    decided = [o for o in orders if o is not None]
    most, count = Counter(decided).most_common(1)[0]
    assert t.loc["late_order", "baseline"] == f"always {most}"
    assert np.isclose(t.loc["late_order", "baseline_error"], 1 - count / len(decided))
    assert np.isclose(t.loc["late_order", "model_error"], decided.count(B_FIRST) / len(decided))
    p = decided.count(C_FIRST) / len(decided)
    assert np.isclose(t.loc["late_order_brier", "baseline_error"],
                      np.mean([(p - (o == C_FIRST)) ** 2 for o in decided]))
    assert t.loc["late_order", "undecided"] == 2 and t.loc["ratio C|AB/A", "decided"] == 0


def test_dip_and_ranks():
    depth, at = dip_of([0, 1, 2, 3], [0.52, np.nan, 0.31, 0.9])
    assert np.isclose(depth, 0.21) and at == 2
    from scipy.stats import spearmanr
    x, y = np.array([1.0, 3.0, 2.0, 5.0]), np.array([10.0, 40.0, 20.0, 30.0])
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    assert np.isclose(spearmanr(x, y).statistic, np.corrcoef(rx, ry)[0, 1])


def test_stage_skill_command_on_a_hand_built_export(tmp_path, capsys):
    """Two withheld runs (task instance 0), written as an export's three files: the command reads them, predicts
    the instance once and writes the tables."""
    import json

    from critwin.cli.main import main
    idx, m = export({
        "r0": ("alchemy_withheld", np.nan, 0, 0, {"event_a": step_curve(100), "p_c_given_ab": step_curve(300),
                                                  "p_b_given_a": step_curve(700)}),
        "r1": ("alchemy_withheld", np.nan, 0, 1, {"event_a": step_curve(100), "p_c_given_ab": step_curve(400),
                                                  "p_b_given_a": step_curve(None)}),
    })
    idx.to_csv(tmp_path / "run_index.csv", index=False)
    m.to_parquet(tmp_path / "run_metrics.parquet", index=False)
    (tmp_path / "run_records.json").write_text(json.dumps({"r0": {}, "r1": {}}))
    code = main(["bridge", "stage-skill", "--export", str(tmp_path), "--chemistries", "5", "--resamples", "50",
                 "--out", str(tmp_path / "out"), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and list(d["predicted"]) == ["alchemy_withheld_t0"]
    table = pd.read_csv(tmp_path / "out" / "skill.csv").set_index("comparison")
    assert table.loc["late_order", "decided"] == 2 and table.loc["A_first", "baseline"] == "always True"
    assert len(pd.read_csv(tmp_path / "out" / "runs.csv")) == 2
