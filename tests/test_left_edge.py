"""critwin bridge left-edge: the L2 window's left edge from Adam's gain on the initial plateau."""
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.cli.main import main
from critwin.bridge.left_edge import (early_peak, fit_s_star, gain_curves, left_edge_table, observed_edges,
                                      plateau_end, predicted_edge, probe_configs)
from critwin.empirical import Run, RunStore, load_summaries
from critwin.empirical.store import config_columns
from critwin.empirical.sweep import config_from_flat
from critwin.errors import ConfigError
from helpers import save_fake_run


def _brute_edge(steps, shrink, s_star, end):
    """The rule read literally, one logged step at a time."""
    upto = [i for i, t in enumerate(steps) if t <= end] or [0]
    peak = max(upto, key=lambda i: (shrink[i], -i))
    if shrink[peak] < s_star:
        return 0.0
    for i in range(peak, len(steps)):
        if shrink[i] <= s_star:
            return float(steps[i])
    return float("inf")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1e-4, 1.0), min_size=2, max_size=40), st.floats(1e-4, 1.0), st.integers(0, 50))
def test_predicted_edge_is_the_rule_read_step_by_step(shrink, s_star, end_i):
    steps = np.arange(len(shrink)) * 10.0
    end = float(steps[min(end_i, len(steps) - 1)])
    assert predicted_edge(steps, shrink, s_star, end) == _brute_edge(list(steps), shrink, s_star, end)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(1e-3, 1.0), min_size=3, max_size=30), st.data())
def test_the_fitted_threshold_predicts_the_edge_it_was_fitted_to(raw, data):
    """On a curve that falls after its peak, fitting s* to an edge between two logged steps and
    predicting with it gives the first logged step at or after that edge."""
    peak_val = max(raw) + 1.0
    falling = sorted(raw, reverse=True)
    shrink = np.array([peak_val * 0.5, peak_val] + falling)
    steps = np.arange(len(shrink)) * 10.0
    edge = data.draw(st.floats(steps[1], steps[-1]))
    s_star = fit_s_star(steps, shrink, edge)
    pred = predicted_edge(steps, shrink, s_star)
    first_at_or_after = steps[steps >= edge][0]
    # in a flat stretch the first step of the same value is already at s*; "same" up to float
    # resolution: between 1.0 and the next float below it, the interpolated s* rounds to 1.0
    assert pred <= first_at_or_after and shrink[int(pred // 10)] <= s_star
    assert pred == first_at_or_after or np.isclose(shrink[int(pred // 10)], shrink[int(first_at_or_after // 10)],
                                                   rtol=1e-12, atol=0)


def test_an_edge_between_two_values_one_float_apart():
    """Found by CI: on 1.0, 1.0, then the float just below 1.0, an edge at 31 interpolates to 1.0,
    so the predicted edge is the flat stretch's first step (20), which is at s* already."""
    shrink = np.array([1.0, 2.0, 1.0, 1.0, 0.9999999999999999])
    steps = np.arange(5) * 10.0
    s_star = fit_s_star(steps, shrink, 31.0)
    assert s_star == 1.0 and predicted_edge(steps, shrink, s_star) == 20.0


def test_edge_cases_and_bad_input():
    steps = np.array([0, 10, 20, 30, 40.0])
    assert predicted_edge(steps, [0.01, 0.02, 0.01, 0.0, 0.0], 0.05) == 0.0          # never harmful: open from 0
    assert predicted_edge(steps, [0.1, 0.2, 0.3, 0.3, 0.3], 0.05) == np.inf          # never falls below
    # a later rise (the training set fitted) is not the early peak
    assert predicted_edge(steps, [0.1, 0.2, 0.01, 0.01, 0.9], 0.05, end=20) == 20
    assert early_peak(steps, [0.1, 0.2, 0.01, 0.01, 0.9], end=20) == 1
    assert plateau_end(steps, [0.1, 0.3, 0.5, 0.9, 1.0]) == 20
    with pytest.raises(ConfigError, match="steps"):
        predicted_edge([0, 20, 10], [0.1, 0.2, 0.3], 0.1)
    with pytest.raises(ConfigError, match="fit edge"):
        fit_s_star(steps, [0.1, 0.2, 0.3, 0.2, 0.1], 10)      # before the peak
    with pytest.raises(ConfigError, match="probe_steps"):
        probe_configs([0.5], 1, 1, steps=10, every=10)


def _fake_probe(gamma, gains, accs, every=10, seed=0):
    cfg = config_from_flat({"gamma": gamma, "steps": every * len(gains), "eval_every": every, "seed": seed})
    steps = np.arange(1, len(gains) + 1) * every
    rows = [(s, "optim", "adam_gain", g) for s, g in zip(steps, gains)] + \
           [(s, "train", "acc", a) for s, a in zip(steps, accs)]
    return Run(cfg.resolved(), pd.DataFrame(rows, columns=["step", "split", "metric", "value"]),
               {"status": "complete", "final": {}}, {})


def test_gain_curves_average_the_runs_per_gamma():
    runs = [_fake_probe(0.5, [1, 3, 2], [0.1, 0.2, 0.6]), _fake_probe(0.5, [3, 5, 4], [0.1, 0.4, 0.8], seed=1),
            _fake_probe(1.1, [1, 1, 1], [0.5, 0.6, 0.7])]
    c = gain_curves(runs).set_index(["gamma", "step"])
    assert c.loc[(0.5, 20)].gain == 4 and c.loc[(0.5, 30)].train_acc == pytest.approx(0.7)
    assert c.loc[(0.5, 10)].runs == 2 and c.loc[(1.1, 30)].gain == 1


def test_table_fits_at_one_gamma_and_scores_the_others(tmp_path):
    """Onset sweeps stored by hand: gamma 0.5 opens in (100, 200], gamma 1.1 from onset 0 on."""
    store = RunStore(tmp_path)
    outcome = {0.5: {0: 0.1, 100: 0.2, 200: 0.9, 400: 0.9}, 1.1: {0: 0.8, 100: 0.9, 400: 0.9}}
    for gamma, by_onset in outcome.items():
        for onset, ood in by_onset.items():
            save_fake_run(store, config_from_flat({"gamma": gamma, "wd": 4e-3, "wd_window_start": onset,
                                                   "wd_width": 5000, "decay_form": "l2",
                                                   "decay_set": "non_embedding"}), ood)
    base = config_columns(probe_configs([0.5], 1, 1)[0].resolved())
    obs = observed_edges(load_summaries(tmp_path), "l2/non_embedding", 5000, 0.5, base)
    o = obs.set_index("gamma")
    assert (o.loc[0.5].bracket_lo, o.loc[0.5].bracket_hi) == (100, 200) and o.loc[1.1].observed_first == 0
    steps = np.arange(10, 610, 10)
    g05 = np.where(steps <= 50, steps * 2.0, np.maximum(100 - (steps - 50) * 0.6, 1.0))     # peak 100 at step 50
    curves = pd.concat([pd.DataFrame({"gamma": 0.5, "step": steps, "gain": g05, "train_acc": steps / 400}),
                        pd.DataFrame({"gamma": 1.1, "step": steps, "gain": g05 / 5, "train_acc": steps / 300})])
    s_star, table = left_edge_table(curves, obs, [4e-3], 0.5, 4e-3)
    t = table.set_index("gamma")
    assert s_star == pytest.approx(4e-3 * (100 - 100 * 0.6))       # the shrink at the bracket's midpoint 150
    assert t.loc[0.5].predicted_edge == 150 and t.loc[0.5].fitted and t.loc[0.5].in_bracket
    assert t.loc[1.1].predicted_edge == 0 and t.loc[1.1].in_bracket    # peak shrink 0.08 < s* = 0.16: open from 0
    with pytest.raises(ConfigError, match="fit_gamma"):
        left_edge_table(curves, obs, [4e-3], 0.8, 4e-3)
    with pytest.raises(ConfigError, match="fit_edge"):
        left_edge_table(curves, obs, [4e-3], 0.5, 1e-2)


def test_left_edge_command_trains_probes_and_reads_the_store(tmp_path, capsys):
    store = tmp_path / "store"
    for onset, ood in ((0, 0.1), (100, 0.2), (110, 0.9)):   # the tiny probe's gain peaks at 90
        save_fake_run(RunStore(store), config_from_flat({"gamma": 0.5, "wd": 4e-3, "wd_window_start": onset,
                                                         "wd_width": 5000, "decay_form": "l2",
                                                         "decay_set": "non_embedding"}), ood)
    args = ["bridge", "left-edge", "--store", str(store), "--gamma", "0.5", "0.8", "--task-seeds", "1",
            "--probe-steps", "120", "--probe-every", "10", "--workers", "1", "--no-progress",
            "--out", str(tmp_path / "fig"), "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probe_runs"] == 2 and (tmp_path / "fig" / "bridge_left_edge.png").is_file()
    rows = {(r["gamma"], r["wd"]): r for r in out["rows"]}
    assert rows[(0.5, 0.004)]["fitted"] and (rows[(0.5, 0.004)]["bracket_lo"], rows[(0.5, 0.004)]["bracket_hi"]) == (100, 110)
    assert len(rows) == 6
    t1 = {r["recipe_t1"] for r in out["rows"]}      # the recipe's memorization time: Theta(1) in gamma, no lambda
    assert len(t1) == 1 and 100 < t1.pop() < 1000
    ids, _ = RunStore(store).scan()
    assert len(ids) == 5                                       # two probes stored beside the three onset runs
    # read again without training: the same answer from the store
    assert main([a for a in args if a != "--json"] + ["--no-train", "--no-figure"]) == 0
    assert "held out" in capsys.readouterr().out
    assert main(["bridge", "left-edge", "--store", str(tmp_path / "none"), "--no-train"]) == 2
    assert "store" in capsys.readouterr().err
