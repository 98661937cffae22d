"""The right-edge reading of the composition model (theory.composition.late_window_edge, bridge.late_window):
on its memorised plateau a window's outcome depends on the lag since its onset only (checked by simulating
the model, which never reads that claim), and the edge read off one probe equals a brute-force onset sweep."""
import numpy as np
import pandas as pd
import pytest

from critwin.bridge.late_window import lag_curve, predict, probe_configs
from critwin.empirical import Run, RunStore
from critwin.errors import ConfigError
from critwin.theory.composition import CompositionModel, late_window_edge, reasoning_fraction, simulate, window_lambda

MODEL = CompositionModel(s_m=1.0, s_r=1.0, m0=0.1, q0=0.5)   # memorised plateau (eps ~ 0) from step ~200 under GD
LR, LAM, WIDTH = 0.05, 0.5, 100


def final_fraction(onsets, total):
    return reasoning_fraction(simulate(MODEL, window_lambda(onsets, WIDTH, LAM, total), LR, "gd", every=total))


def test_on_the_plateau_the_outcome_depends_on_the_lag_since_onset_only():
    for lag in (20, 60, 150, 400):
        a, b = final_fraction([1000], 1000 + lag)[0], final_fraction([2000], 2000 + lag)[0]
        assert a == pytest.approx(b, abs=1e-9)
    early, late = final_fraction([5], 65)[0], final_fraction([1000], 1060)[0]   # before the plateau it does not hold
    assert abs(early - late) > 0.05


def test_the_edge_read_off_one_probe_equals_a_brute_force_sweep_of_onsets():
    total, lo, hi, thr = 3000, 2850, 2990, 0.7
    probe = simulate(MODEL, window_lambda([1000], WIDTH, LAM, total), LR, "gd", every=1)
    frac = probe["rho"][:, 0] / np.maximum(probe["x"][:, 0] + probe["rho"][:, 0], 1e-12)
    lag = probe["steps"][1000:] - 1000.0
    predicted = late_window_edge(lag, frac[1000:], total, lo, hi, thr)
    onsets = np.arange(lo, hi + 1)
    brute = final_fraction(onsets, total)
    side = brute >= thr
    assert side[0] != side[-1]
    i = int(np.nonzero(side[1:] != side[:-1])[0][0])
    assert onsets[i] <= predicted <= onsets[i + 1]
    assert late_window_edge(lag, frac[1000:], total, lo, hi, 0.05) is None      # never crosses: no edge


def test_late_window_edge_rejects_a_probe_too_short_for_the_range():
    with pytest.raises(ConfigError, match="lo, hi"):
        late_window_edge(np.arange(0, 5001, 100.0), np.ones(51), 20000, 9000, 18000, 0.7)
    with pytest.raises(ConfigError, match="since_onset"):
        late_window_edge([0, 0, 1], [1, 1, 1], 10, 1, 5, 0.5)


def test_probes_are_the_cells_runs_with_the_window_before_the_range():
    cfgs = probe_configs({"gamma": 0.8, "wd": 0.01, "wd_width": 1000, "decay_form": "l2"}, 20000, 9000)
    assert len(cfgs) == 6 and {(c.task_seed, c.seed) for c in cfgs} == {(t, s) for t in range(3) for s in range(2)}
    assert all(c.steps == 17000 and c.wd_windows == ((6000.0, 7000.0, 0.01),) for c in cfgs)
    with pytest.raises(ConfigError, match="onset"):
        probe_configs({"wd": 0.01, "wd_width": 1000}, 20000, 5000)


def test_lag_curve_averages_the_stored_probes_from_the_onset(tmp_path):
    store = RunStore(tmp_path)
    cfgs = probe_configs({"wd": 0.01, "wd_width": 100, "d": 16}, 600, 400, task_seeds=(0,), seeds=(0, 1), onset=200)
    steps = np.arange(0, cfgs[0].steps + 1, 100)
    for k, c in enumerate(cfgs):
        rows = [(int(s), "ood", "acc", 0.1 * k + s / 1000) for s in steps] + [(int(s), "train", "acc", 1.0) for s in steps]
        store.save(Run(c.resolved(), pd.DataFrame(rows, columns=["step", "split", "metric", "value"]),
                       {"status": "complete", "final": {}}, {}))
    lag, mean = lag_curve(store, cfgs)
    assert lag.tolist() == [0, 100, 200] and cfgs[0].steps == 400
    assert mean == pytest.approx([0.05 + s / 1000 for s in (200, 300, 400)])


def test_predict_trains_the_probes_and_reads_an_edge_or_none(tmp_path):
    base = {"d": 16, "wd": 0.05, "wd_width": 50, "decay_form": "l2", "eval_every": 50}
    out = predict(base, 300, 200, 250, 2.0, RunStore(tmp_path), progress=False, task_seeds=(0,), seeds=(0,), onset=100)
    assert out["predicted"] is None and out["probe_steps"] == 200 and len(out["lag"]) == 3   # accuracy never reaches 2
    assert set(out["predicted_outcome_by_onset"]) == {200}
