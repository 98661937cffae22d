"""An edge registration scored beside trivial baselines fitted on its own build cells, and one score command over
several registrations; expected errors are worked out by hand from the rule |log2((p + 25) / (m + 25))|."""
import json
import math

import pandas as pd
import pytest

from critwin.bridge.edge_skill import build_edges, measured_edge, score_edges
from critwin.bridge.registration import cell_id, score, validate
from critwin.errors import ConfigError


def cell(**kw):
    base = {"kind": "left", "optimizer": "sgd", "gamma": 0.8, "lambda": 4e-3, "width": 5000, "predicted": 175}
    return {**base, **kw}


CELLS = [cell(build=True, gamma=0.5), cell(build=True, gamma=1.1, optimizer="adamw"),
         cell(gamma=0.6, predicted=175), cell(gamma=1.0, predicted=None), cell(kind="right", predicted="not predicted")]
BUILD = pd.DataFrame([{"optimizer": "sgd", "gamma": 0.5, "lambda": 4e-3, "edge": 75.0},
                      {"optimizer": "adamw", "gamma": 1.1, "lambda": 4e-3, "edge": 375.0},
                      {"optimizer": "sgd", "gamma": 9.0, "lambda": 4e-3, "edge": 5.0}])   # not this registration's


def write(tmp_path, name="reg.json"):
    reg = {"registered": "2026-12-06", "model": "m", "cells": CELLS}
    (tmp_path / name).write_text(json.dumps(reg))
    m = tmp_path / "measured"
    m.mkdir(exist_ok=True)
    (m / f"{cell_id(CELLS[2])}.json").write_text(json.dumps({"edge": [175, 200], "edge_ci": [150, 225]}))
    (m / f"{cell_id(CELLS[3])}.json").write_text(json.dumps({"edge": None}))
    return tmp_path / name, m


def test_errors_and_baselines_by_hand(tmp_path):
    path, m = write(tmp_path)
    reg = validate(json.loads(path.read_text()))
    build = build_edges(reg, BUILD)
    assert [b["edge"] for b in build] == [75.0, 375.0]              # only the registration's own build cells
    out = score_edges(score(reg, m), build, "registered")
    rows = out["cells"].set_index("cell")
    a, b = rows.loc[cell_id(CELLS[2])], rows.loc[cell_id(CELLS[3])]
    assert out["constant"] == 225.0
    assert a["measured"] == 187.5 and a["registered_err"] == pytest.approx(math.log2(212.5 / 200))
    assert a["constant_err"] == pytest.approx(math.log2(250 / 212.5))
    assert a["nearest"] == 75.0 and a["nearest_err"] == pytest.approx(math.log2(212.5 / 100))   # sgd, gamma 0.5
    assert b["measured"] == "no window" and b["registered_err"] == 0.0          # 'no window' predicted and found
    assert b["constant_err"] == pytest.approx(math.log2(1625 / 250))
    skill = out["skill"].set_index("baseline")
    want = (a["constant_err"] + b["constant_err"]) / 2 - (a["registered_err"] + b["registered_err"]) / 2
    assert skill.loc["constant", "skill"] == pytest.approx(want) and skill.loc["constant", "clusters"] == 2
    assert len(out["cells"]) == 2                                      # the right cell is not scored for skill


def test_measured_edge_reads_a_bracket_or_no_crossing():
    assert measured_edge([200, 225]) == 212.5 and measured_edge("no crossing") is None
    with pytest.raises(ConfigError, match="measured"):
        measured_edge(3)


def test_one_command_scores_several_registrations(tmp_path, capsys):
    from critwin.cli.main import main
    path, m = write(tmp_path)
    other = tmp_path / "b"
    other.mkdir()
    path2, m2 = write(other)
    build = tmp_path / "build.csv"
    BUILD.to_csv(build, index=False)
    assert main(["bridge", "score", str(path), str(m), str(path2), "--build-cells", str(build), "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert [r["registration"] for r in out["registrations"]] == [str(path), str(path2)]
    assert len(out["skill"]) == 4 and {r["baseline"] for r in out["skill"]} == {"constant", "nearest"}
    assert main(["bridge", "score", str(m), str(path)]) == 2                   # a folder before any registration
    assert "paths" in capsys.readouterr().err
