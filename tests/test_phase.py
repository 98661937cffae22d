"""The (lambda, onset, gamma) map: grid, timing sensitivity, command on a store of known outcomes."""
import json

import numpy as np
import pandas as pd
import pytest

from critwin.cli.main import main
from critwin.paper_checks.phase import PhaseGrid, timing_sensitivity
from critwin.paper_checks.readings import Reading
from critwin.empirical import RunStore
from critwin.errors import ConfigError

from helpers import save_fake_run


def test_grid_configs_cover_the_map_with_equal_budget_placements():
    g = PhaseGrid(Reading.parse("decoupled/matrices x10"), gammas=(0.5, 0.8), lambdas=(1e-3, 4e-3),
                  onsets=(100, 400), task_seeds=2, seeds=1, size="paper")
    assert g.all_onsets() == [0, 100, 400, 7500, 15000]
    cfgs = g.configs()
    assert len(cfgs) == 2 * 2 * (1 + 2 * 5)
    c = cfgs[(0.8, 4e-3, 7500, 1, 0)]
    assert c.wd_windows == ((7500.0, 12500.0, 4e-3 * 10),) and c.task_seed == 1 and c.model.gamma == 0.8
    assert cfgs[(0.5, None, None, 0, 0)].wd_windows == ()
    quick = PhaseGrid(lambdas=(4e-3,), onsets=(400,), gammas=(0.8,), size="quick").configs()
    assert {c.steps for c in quick.values()} == {2000} and len(quick) == 1 + 4
    assert {k[2] for k in quick if k[1]} == {0, 40, 750, 1500}


@pytest.mark.parametrize("kw,field", [({"lambdas": (0.0,)}, "wd"), ({"onsets": (16000,)}, "onsets"),
                                      ({"width": 0}, "width"), ({"size": "huge"}, "size"),
                                      ({"task_seeds": 0}, "task_seeds")])
def test_bad_grid_names_the_field(kw, field):
    with pytest.raises(ConfigError, match=field):
        PhaseGrid(**kw)


def test_timing_sensitivity_pairs_runs_against_a_hand_computation():
    g = PhaseGrid(gammas=(0.8,), lambdas=(4e-3,), onsets=(), task_seeds=2, seeds=2)
    recs = []
    # (task, seed): early, middle -> differences 0.5, 0.7, 0.1, 0.3 (mean 0.4)
    for (t, s), (e, m) in {(0, 0): (0.2, 0.7), (0, 1): (0.1, 0.8), (1, 0): (0.5, 0.6), (1, 1): (0.4, 0.7)}.items():
        recs += [{"gamma": 0.8, "wd": 4e-3, "onset": 0, "task_seed": t, "seed": s, "ood": e},
                 {"gamma": 0.8, "wd": 4e-3, "onset": 7500, "task_seed": t, "seed": s, "ood": m}]
    out = timing_sensitivity(pd.DataFrame(recs), g, n_boot=4000).iloc[0]
    assert out["middle_minus_early"] == pytest.approx(0.4) and out["pairs"] == 4
    assert 0.1 <= out["ci_low"] < 0.4 < out["ci_high"] <= 0.7


def test_phase_command_reads_a_store(tmp_path, capsys):
    g = PhaseGrid(gammas=(0.8,), lambdas=(4e-3,), onsets=(400,), task_seeds=1, size="quick")
    store = RunStore(tmp_path / "runs")
    truth = {None: 0.1, 0: 0.1, 40: 0.2, 750: 0.9, 1500: 0.6}
    for (gamma, lam, onset, t, s), cfg in g.configs().items():
        save_fake_run(store, cfg, truth[onset])
    code = main(["phase", "--size", "quick", "--gamma", "0.8", "--wd", "4e-3", "--onsets", "400",
                 "--task-seeds", "1", "--store", str(tmp_path / "runs"), "--out", str(tmp_path / "out"),
                 "--no-train", "--methods", "recipe", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["missing_runs"] == 0
    cells = {c["onset"]: c["mean"] for c in d["cells"]}
    assert cells == {0: 0.1, 40: 0.2, 750: 0.9, 1500: 0.6}
    assert d["timing"][0]["middle_minus_early"] == pytest.approx(0.8)
    assert d["predicted"][0]["method"] == "recipe" and np.isfinite(d["predicted"][0]["t1"])
    assert (tmp_path / "out" / "phase_quick_l2-non_embedding.png").stat().st_size > 1000
