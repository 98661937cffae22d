"""Registered edge predictions: validation at the boundary and the hit rule, on hand-made measurements."""
import dataclasses
import json

import pytest

from critwin.bridge.registration import cell_id, load_registration, score, summary, validate, verdict
from critwin.errors import ConfigError


def cell(**kw):
    base = {"kind": "left", "optimizer": "adamw", "gamma": 0.8, "lambda": 1.6e-2, "width": 5000, "predicted": 200}
    return {**base, **kw}


def test_hit_rule_reads_the_bootstrap_interval_and_no_window_cells():
    m = {"edge": [200.0, 225.0], "edge_ci": [150.0, 237.5], "runs": 36}
    assert verdict(150, m) == ("hit", True)
    assert verdict(237.5, m) == ("hit", True)
    assert verdict(240, m) == ("miss", False)
    assert verdict(None, m) == ("miss", False)                  # 'no window' but an onset crossed
    none = {"edge": None, "message": "no crossing of 0.5 between 0 and 400"}
    assert verdict(None, none) == ("hit", True)
    assert verdict(100, none) == ("miss", False)
    assert verdict(100, None) == ("not measured", None)
    # no resample crossed: the bisection bracket stands in for the interval
    assert verdict(210, {"edge": [200.0, 225.0], "edge_ci": [float("nan"), float("nan")]}) == ("hit", True)


def test_validation_names_the_field():
    with pytest.raises(ConfigError, match="kind"):
        validate({"registered": "2026-12-02", "model": "m", "cells": [cell(kind="middle")]})
    with pytest.raises(ConfigError, match="predicted"):
        validate({"registered": "2026-12-02", "model": "m", "cells": [cell(predicted=-5)]})
    with pytest.raises(ConfigError, match="each cell once"):
        validate({"registered": "2026-12-02", "model": "m", "cells": [cell(), cell()]})
    with pytest.raises(ConfigError, match="registered"):
        validate({"model": "m", "cells": []})


def test_score_counts_only_measured_cells_that_did_not_build_the_model(tmp_path):
    cells = [cell(), cell(gamma=0.5, predicted=None), cell(gamma=1.1), cell(gamma=0.5, predicted=100, **{"lambda": 4e-3},
                                                                           build=True)]
    reg = tmp_path / "reg.json"
    reg.write_text(json.dumps({"registered": "2026-12-02", "model": "m", "cells": cells}))
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / f"{cell_id(cells[0])}.json").write_text(json.dumps({"edge": [175, 200], "edge_ci": [162.5, 212.5]}))
    (measured / f"{cell_id(cells[1])}.json").write_text(json.dumps({"edge": [100, 125], "edge_ci": [100, 150]}))
    (measured / f"{cell_id(cells[3])}.json").write_text(json.dumps({"edge": [100, 125], "edge_ci": [100, 125]}))
    frame = score(load_registration(reg), measured)
    assert list(frame["verdict"]) == ["hit", "miss", "not measured", "build (not scored)"]
    assert summary(frame) == {"hits": 1, "scored": 2, "cells": 4, "not_measured": 1}


def test_score_command(tmp_path, capsys):
    from critwin.cli.main import main
    reg = tmp_path / "reg.json"
    reg.write_text(json.dumps({"registered": "2026-12-02", "model": "m", "cells": [cell()]}))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / f"{cell_id(cell())}.json").write_text(json.dumps({"edge": [175, 200], "edge_ci": [150, 250]}))
    assert main(["bridge", "score", str(reg), str(tmp_path / "m"), "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert (out["hits"], out["scored"]) == (1, 1)


def test_a_cell_the_model_says_nothing_about_is_a_miss_once_measured():
    from critwin.bridge.registration import NOT_PREDICTED
    assert verdict(NOT_PREDICTED, {"edge": [14500, 15000], "edge_ci": [14000, 15250]}) == (NOT_PREDICTED, False)
    assert verdict(NOT_PREDICTED, None) == ("not measured", None)
    validate({"registered": "2026-12-02", "model": "m", "cells": [cell(predicted=NOT_PREDICTED)]})
    with pytest.raises(ConfigError, match="predicted"):
        validate({"registered": "2026-12-02", "model": "m", "cells": [cell(predicted="soon")]})


MEASURE = ("critwin sweep edge --param wd_window_start --lo 0 --hi 800 --resolution 25 --threshold 0.5 --seeds 2"
           " --task-seeds 3 --wd 0.016 --width 5000 --set gamma=0.8 --set decay_form=l2 --set decay_set=non_embedding"
           " --set optimizer=sgd --set lr=0.1 --set momentum=0.9 --workers 1 --store runs/theory2 --json")


def test_a_cells_measuring_command_gives_the_runs_it_stored():
    """The config the older methods are scored at is the one the cell's bisection trained: its run ids are
    those of runs the real command stored (listed in theory3/build_runs.csv), not a re-typed config."""
    from pathlib import Path

    from critwin.cli.bridge.score import measure_configs
    root = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "theory2"
    reg = load_registration(root / "registration.json")
    got = measure_configs(reg, root / "measured")
    c = got["left_sgd_g0.8_l0.016_w5000"]
    assert (c["width"], c["wd"], c["threshold"]) == (5000.0, 0.016, 0.5)
    from critwin.empirical import TrainConfig
    from critwin.paper_checks.run_export import read_export
    _, _, records = read_export(root / "runs_export")       # the stored runs, exported from the store they were in
    stored = {TrainConfig.from_dict(r["config"]).run_id(): r for r in records.values()}
    assert set(stored) == set(records)                      # each exported config hashes to its own run id
    for task_seed in range(3):                  # the bisection's onset-0 end, every instance and seed
        for seed in range(2):
            rid = dataclasses.replace(c["cfg"], task_seed=task_seed, seed=seed).run_id()
            assert rid in stored and stored[rid]["summary"]["status"] == "complete"
    assert set(got) == {p.stem for p in (root / "measured").glob("*.json")
                        if not [x for x in reg["cells"] if cell_id(x) == p.stem][0].get("build")}


@pytest.mark.parametrize("t1, t2, left, right", [
    (100.0, 9500.0, 100.0, 9500.0),             # a closed window: its two edges
    (100.0, float("inf"), 100.0, 19000.0),      # never closes: composes at the last onset, total - width
    (100.0, float("nan"), 100.0, 19000.0),
    (900.0, 50.0, None, None),                  # inverted: no window
    (float("nan"), float("nan"), None, None),   # none
])
def test_an_older_methods_window_becomes_an_edge_or_no_window(monkeypatch, t1, t2, left, right):
    from critwin import theory as th
    from critwin.bridge.baselines import baseline_edge
    from critwin.empirical import TrainConfig
    monkeypatch.setattr(th, "predict", lambda *a, **k: [{"t1_steps": t1, "t2_steps": t2}])
    cfg = TrainConfig.from_flat({"steps": 20000, "gamma": 0.8})
    assert baseline_edge("left", "recipe", cfg, 1000, 1e-2, 0.7) == left
    assert baseline_edge("right", "recipe", cfg, 1000, 1e-2, 0.7) == right
    with pytest.raises(ConfigError, match="baselines"):
        baseline_edge("left", "gain", cfg, 1000, 1e-2, 0.7)


def test_older_methods_are_scored_by_the_same_rule_on_the_same_cells(tmp_path, monkeypatch):
    from critwin import theory as th
    from critwin.bridge.baselines import score_baselines
    from critwin.empirical import TrainConfig
    monkeypatch.setattr(th, "predict", lambda *a, **k: [{"t1_steps": 210.0, "t2_steps": float("inf")}])
    cells = [cell(measure=MEASURE), cell(gamma=1.1, measure=MEASURE), cell(gamma=0.5, build=True, measure=MEASURE)]
    reg = {"registered": "2026-12-02", "model": "m", "cells": cells}
    (tmp_path / f"{cell_id(cells[0])}.json").write_text(json.dumps({"edge": [200, 225], "edge_ci": [187.5, 237.5]}))
    (tmp_path / f"{cell_id(cells[1])}.json").write_text(json.dumps({"edge": [300, 325], "edge_ci": [250, 337.5]}))
    (tmp_path / f"{cell_id(cells[2])}.json").write_text(json.dumps({"edge": [200, 225], "edge_ci": [187.5, 237.5]}))
    cfg = {"cfg": TrainConfig.from_flat({"gamma": 0.8}), "width": 5000.0, "wd": 0.016, "threshold": 0.5}
    frame = score_baselines(score(reg, tmp_path), reg, tmp_path, {cell_id(c): cfg for c in cells}, ["recipe"])
    assert list(frame["recipe_verdict"]) == ["hit", "miss", ""]
    tally = summary(frame)
    assert (tally["hits"], tally["recipe_hits"], tally["scored"]) == (1, 1, 2)
