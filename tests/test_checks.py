import json

import pytest

from critwin.bridge.cli import main
from critwin.paper_checks import CHECKS, verdict


def row(measured, paper, sd=0.0, n=3):
    return {"measured": measured, "paper": paper, "sd": sd, "n": n}


def test_verdict_rule():
    assert verdict([row(0.90, 0.93), row(0.88, 0.91)], 0.1) == "reproduced"
    assert verdict([row(0.40, 0.93, sd=0.01)], 0.1) == "not reproduced"
    assert verdict([row(0.80, 0.93, sd=0.3)], 0.1) == "inconclusive"   # 0.13 > 0.1 but within 2 se
    assert verdict([row(float("nan"), 0.93)], 0.1) == "inconclusive"


def test_quick_configs_scale_time_only():
    cfgs = CHECKS["W4"].configs("quick")
    assert len(cfgs) == 3 and all(c.steps == 2000 for c in cfgs.values())
    assert {c.wd_windows[0][:2] for c in cfgs.values()} == {(0.0, 500.0), (10.0, 510.0), (40.0, 540.0)}
    assert {c.wd_windows[0][2] for c in cfgs.values()} == {4e-3}
    paper = CHECKS["W3"].configs("paper")
    assert len(paper) == 18 and {round(c.wd_windows[0][2] * (c.wd_windows[0][1] - c.wd_windows[0][0]), 6)
                                 for c in paper.values()} == {20.0}


def test_t1_check(capsys, tmp_path):
    code = main(["check", "T1", "--results", str(tmp_path), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["verdict"] in ("reproduced", "not reproduced")
    assert (tmp_path / "T1_quick.json").exists() and (tmp_path / "T1_quick.csv").exists()


def test_quick_empirical_check_runs_end_to_end(capsys, tmp_path):
    code = main(["check", "W2", "--size", "quick", "--store", str(tmp_path / "runs"), "--results",
                 str(tmp_path / "res"), "--workers", "2", "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["verdict"].endswith("(quick size: not evidence)")
    assert {r["value"] for r in d["rows"]} == {"window [0,5000) 4e-3", "no decay"}
    assert all(r["n"] == 1 and 0 <= r["measured"] <= 1 for r in d["rows"])
    saved = json.loads((tmp_path / "res" / "W2_quick.json").read_text())
    assert saved["command"].startswith("critwin check W2")


def test_unknown_check_names_what_exists(capsys):
    code = main(["check", "W99", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 2 and d["field"] == "id" and "W1" in d["allowed"] and "S1" in d["allowed"]


def test_ranges_in_the_verdict_rule():
    from critwin.paper_checks.base import distance
    assert distance(0.9, (0.85, 0.93)) == 0 and distance(0.8, (0.85, 0.93)) == pytest.approx(0.05)
    assert verdict([row(0.88, (0.85, 0.93))], 0.1) == "reproduced"


def test_every_registered_check_expands():
    for cid, chk in CHECKS.items():
        if hasattr(chk, "configs"):
            assert len(chk.configs("paper")) == len(chk.variants) * chk.seeds, cid


def test_wd_scale_is_a_labelled_variation():
    base = CHECKS["W1"].configs("paper")
    scaled = CHECKS["W1"].configs("paper", wd_scale=10.0)
    for k in base:
        assert [w[2] * 10 for w in base[k].wd_windows] == pytest.approx([w[2] for w in scaled[k].wd_windows])
