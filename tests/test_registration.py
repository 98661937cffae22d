"""Registered edge predictions: validation at the boundary and the hit rule, on hand-made measurements."""
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
