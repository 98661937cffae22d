"""The panel score: a run counts only when the commit that trained it already held the registration (checked on a
repository built here commit by commit, and through `critwin bridge score` on the real panel), and its reading
within each cell setting (`--by`) is counted by hand."""
import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from critwin.bridge.provenance import AFTER, BEFORE, UNKNOWN, commit_status, run_provenance

THEORY3 = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "theory3"


def _commit(repo: Path, message: str) -> str:
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], capture_output=True, text=True, check=True)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git("rev-parse", "HEAD").stdout.strip()


def test_a_commit_counts_only_when_it_holds_the_same_predictions(tmp_path):
    repo = tmp_path / "repo"
    (repo / "panel").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "code.py").write_text("x = 1\n")
    before = _commit(repo, "code, nothing registered")
    reg = {"registered": "2026-01-01", "commit": before, "methods": ["m"], "baselines": ["b"],
           "cells": [{"id": "c", "predicted": {"m": 100, "b": 200}}], "method_text": {"m": "one"}}
    (repo / "panel" / "registration.json").write_text(json.dumps(reg))
    (repo / "panel" / "registration_runs.csv").write_text("cell,onset,m\nc,0,0.5\n")
    registered = _commit(repo, "registered")
    (repo / "code.py").write_text("x = 2\n")
    later = _commit(repo, "later code")
    (repo / "panel" / "registration.json").write_text(json.dumps({**reg, "method_text": {"m": "reworded"}}))
    reworded = _commit(repo, "the text reworded, the predictions kept")
    (repo / "panel" / "registration_runs.csv").write_text("cell,onset,m\nc,0,0.9\n")
    changed = _commit(repo, "a per-run prediction changed")
    (repo / "panel" / "registration_runs.csv").write_text("cell,onset,m\nc,0,0.5\n")
    _commit(repo, "changed back")
    status = commit_status(repo / "panel" / "registration.json", [before, registered, later, reworded, changed, "f" * 40])
    assert status == {before: BEFORE, registered: AFTER, later: AFTER, reworded: AFTER, changed: BEFORE,
                      "f" * 40: UNKNOWN}
    runs = pd.DataFrame({"commit": [registered, before, None, "f" * 40]})
    assert run_provenance(repo / "panel" / "registration.json", runs).tolist() == [AFTER, BEFORE, UNKNOWN, UNKNOWN]
    # outside any git checkout nothing can be checked
    outside = tmp_path / "copy"
    shutil.copytree(repo / "panel", outside)
    assert commit_status(outside / "registration.json", [registered]) == {registered: UNKNOWN}


def test_score_leaves_out_runs_trained_before_the_registration(tmp_path, capsys):
    """On a copy of the panel's measurements where some runs name the code commit (before the registration was
    committed) or no commit, the score counts them apart and scores only the others; the CSVs of another
    registration's cells in the same folder are not counted."""
    from critwin.cli.main import main
    reg = json.loads((THEORY3 / "registration.json").read_text())
    measured = tmp_path / "measured"
    shutil.copytree(THEORY3 / "measured", measured)
    ids = {c["id"] for c in reg["cells"]}                          # other registrations' cells share measured/
    frames = {f: pd.read_csv(f) for f in sorted(measured.glob("*.csv")) if f.stem in ids}
    assert len(frames) == len(ids)
    first, second = list(frames)[:2]
    frames[first]["commit"] = reg["commit"]                       # the code commit: the registration came after it
    frames[second].loc[:9, "commit"] = None
    for f, frame in frames.items():
        frame.to_csv(f, index=False)
    total = sum(len(f) for f in frames.values())
    main(["bridge", "score", str(THEORY3 / "registration.json"), str(measured), "--json", "--course"])
    out = json.loads(capsys.readouterr().out)
    assert out["provenance"] == {AFTER: total - len(frames[first]) - 10, BEFORE: len(frames[first]), UNKNOWN: 10}
    assert out["measured_runs"] == total - len(frames[first])
    course = pd.DataFrame(out["course"])                           # the course ends at the score, runs left out too
    last = course[course["cells"] == out["measured_cells"]]
    assert last["runs"].max() <= out["measured_runs"] and course["cells"].max() == out["measured_cells"]
    for row in out["skill"]:
        if row["score"] in ("run Brier", "cell |log2| edge error") and len(last) and last["runs"].iloc[0] == out["measured_runs"]:
            match = last[(last["method"] == row["method"]) & (last["baseline"] == row["baseline"])
                         & (last["score"] == row["score"])]
            assert match["skill"].iloc[0] == row["skill"]


def test_score_by_a_setting_counts_each_group_by_hand():
    """`--by optimizer`: each group's Brier is the mean squared gap between a method's P and the outcome over that
    optimizer's measured runs, counted here from the CSVs; an unknown setting is refused by name."""
    import pytest

    from critwin.bridge.panel import load_panel, score_by
    from critwin.errors import ConfigError
    reg, predicted, measured = load_panel(THEORY3 / "registration.json")
    table = score_by(reg, predicted, measured, "optimizer")
    runs = predicted.merge(measured, on=["cell", "onset", "task_seed", "seed"])
    opt = {c["id"]: c["optimizer"] for c in reg["cells"]}
    for value, group in runs.groupby(runs["cell"].map(opt)):
        row = table[(table["optimizer"] == value) & (table["name"] == "held_max")].iloc[0]
        y = (group["ood_acc"] >= 0.5).astype(float)
        assert row["runs"] == len(group)
        assert row["brier"] == pytest.approx(((group["held_max"] - y) ** 2).mean())
    assert set(table["optimizer"]) == set(runs["cell"].map(opt))
    with pytest.raises(ConfigError, match="by"):
        score_by(reg, predicted, measured, "width")


def test_the_course_scores_complete_cells_in_registered_order_counted_by_hand():
    """`--course`: after k complete cells in registered order (not file order; a partial cell left out), the run
    Brier skill is the baseline's mean squared gap minus the method's over those cells' runs, and the cell skill the
    mean gap of |log2((p + 25) / (m + 25))| edge errors, each counted here by hand."""
    import math

    import pytest

    from critwin.bridge.panel import score_course
    reg = {"methods": ["m"], "baselines": ["b"],
           "cells": [{"id": "c2", "predicted": {"m": 50.0, "b": 125.0}},
                     {"id": "c1", "predicted": {"m": 0.0, "b": 75.0}},
                     {"id": "c3", "predicted": {"m": 10.0, "b": 10.0}}]}
    grid = [(c, on, 0, s) for c in ("c1", "c2", "c3") for on in (0, 100) for s in (0, 1)]
    predicted = pd.DataFrame(grid, columns=["cell", "onset", "task_seed", "seed"])
    predicted["m"] = [0.9, 0.9, 0.9, 0.9, 0.2, 0.2, 0.8, 0.8, 0.5, 0.5, 0.5, 0.5]
    predicted["b"] = 0.5
    ood = {"c1": [0.6, 0.6, 0.6, 0.6], "c2": [0.1, 0.3, 0.7, 0.9], "c3": [0.1]}   # c2: mean 0.2 then 0.8, edge 50
    measured = pd.DataFrame([(*g, ood[g[0]][i % 4]) for i, g in enumerate(grid) if i % 4 < len(ood[g[0]])],
                            columns=["cell", "onset", "task_seed", "seed", "ood_acc"])
    # the runs come c1 first: the course must still start at c2, the first registered
    course = score_course(reg, predicted, measured)
    assert sorted(set(course["cells"])) == [1, 2]
    first = course[(course["cells"] == 1) & (course["score"] == "run Brier")].iloc[0]
    y = [0, 0, 1, 1]                                                                # c2's runs compose from onset 100
    by_hand = sum((0.5 - v) ** 2 for v in y) / 4 - sum((p - v) ** 2 for p, v in zip([0.2, 0.2, 0.8, 0.8], y)) / 4
    assert first["runs"] == 4 and first["skill"] == pytest.approx(by_hand)
    both = course[(course["cells"] == 2) & (course["score"] == "cell |log2| edge error")].iloc[0]
    errors_b = [math.log2((125 + 25) / (50 + 25)), math.log2((75 + 25) / (0 + 25))]  # c2's edge 50, c1's edge 0
    assert both["runs"] == 8 and both["skill"] == pytest.approx(sum(errors_b) / 2)


def test_onset_curves_count_each_cell_and_onset_by_hand(tmp_path):
    """The figure's curves: per (cell, onset) the fraction of measured runs that compose and each predictor's mean P
    over the same runs only (an unmeasured run's P left out), cells in registered order; a cell's edge is where mean
    OOD accuracy crosses 0.5, linear between onsets: c1 goes 0.2 -> 0.6 (37.5 by hand), c2 0.2 -> 0.9 (150 / 7).
    The PNG is written."""
    import pytest

    from critwin.bridge.panel import curve_cells, onset_curves
    from critwin.figures import plot_panel_curves
    cell = lambda i: {"id": i, "optimizer": "sgd", "gamma": 0.5, "lambda": 0.01, "predicted": {"m": 1.0, "b": 2.0}}
    reg = {"methods": ["m"], "baselines": ["b"], "cells": [cell("c2"), cell("c1"), cell("c9")]}
    grid = [(c, on, 0, s) for c in ("c1", "c2") for on in (0, 50) for s in (0, 1)]
    predicted = pd.DataFrame(grid, columns=["cell", "onset", "task_seed", "seed"])
    predicted["m"] = [0.1, 0.3, 0.6, 0.8, 0.0, 0.2, 0.4, 1.0]
    predicted["b"] = [0.5] * 8
    ood = [0.1, 0.3, 0.5, 0.7, 0.3, 0.1, 0.9]                     # c2's last run (onset 50, seed 1) not measured
    measured = pd.DataFrame([(*g, v) for g, v in zip(grid, ood)], columns=["cell", "onset", "task_seed", "seed",
                                                                           "ood_acc"])
    curves = onset_curves(reg, predicted, measured)
    assert list(dict.fromkeys(curves["cell"])) == ["c2", "c1"]    # registered order; c9 has no run
    at = lambda c, on, n: curves[(curves["cell"] == c) & (curves["onset"] == on) & (curves["name"] == n)].iloc[0]
    assert at("c1", 0, "measured")["value"] == 0.0 and at("c1", 50, "measured")["value"] == 1.0
    assert at("c1", 50, "m")["value"] == pytest.approx(0.7) and at("c1", 50, "measured")["runs"] == 2
    assert at("c2", 50, "m")["value"] == pytest.approx(0.4) and at("c2", 50, "m")["runs"] == 1
    assert at("c2", 0, "measured")["value"] == 0.0 and at("c2", 0, "ood_acc")["value"] == pytest.approx(0.2)
    cells = curve_cells(reg, predicted, measured)
    assert [c["id"] for c in cells] == ["c2", "c1"]
    assert cells[0]["edge"] == pytest.approx(150 / 7) and (cells[0]["runs"], cells[0]["registered"]) == (3, 4)
    assert cells[1]["edge"] == pytest.approx(37.5) and (cells[1]["runs"], cells[1]["registered"]) == (4, 4)
    path = plot_panel_curves(curves, cells, ["m"], ["b"], tmp_path / "f.png", "t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_score_writes_one_figure_per_panel(tmp_path, capsys):
    """`--figure`: one panel scored writes that PNG; several write one each, named by their registration's folder."""
    from critwin.cli.main import main
    main(["bridge", "score", str(THEORY3 / "v5" / "registration.json"), str(THEORY3 / "measured"),
          "--figure", str(tmp_path / "one.png"), "--json"])
    assert json.loads(capsys.readouterr().out)["figure"] == str(tmp_path / "one.png")
    main(["bridge", "score", str(THEORY3 / "v4" / "registration.json"), str(THEORY3 / "measured"),
          str(THEORY3 / "v5" / "registration.json"), str(THEORY3 / "measured"), "--figure", str(tmp_path / "s.png")])
    capsys.readouterr()
    assert sorted(f.name for f in tmp_path.glob("s_*.png")) == ["s_v4.png", "s_v5.png"]

def test_a_version_scored_on_fewer_cells_counts_only_their_runs(tmp_path, capsys):
    """A later registration lists only the cells measured after it: the runs of the panel's other cells are neither
    scored nor counted in its provenance line; a registration that records its verdict rule has it printed."""
    from critwin.cli.main import main
    reg = json.loads((THEORY3 / "registration.json").read_text())
    files = sorted((THEORY3 / "measured").glob("*.csv"))[:2]
    keep = [f.stem for f in files]
    reg["cells"] = [c for c in reg["cells"] if c["id"] in keep]
    (tmp_path / "registration.json").write_text(json.dumps(reg))
    runs = pd.read_csv(THEORY3 / "registration_runs.csv")
    runs[runs["cell"].isin(keep)].to_csv(tmp_path / "registration_runs.csv", index=False)
    main(["bridge", "score", str(tmp_path / "registration.json"), str(THEORY3 / "measured"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert sum(out["provenance"].values()) == sum(len(pd.read_csv(f)) for f in files)
    assert out["registered_cells"] == 2
    reg["verdict"] = "written before the runs: skill per cell and per run"       # a registration that states its rule
    (tmp_path / "registration.json").write_text(json.dumps(reg))
    main(["bridge", "score", str(tmp_path / "registration.json"), str(THEORY3 / "measured")])
    assert "  verdict rule: written before the runs: skill per cell and per run" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("version", [4, 5, 6])
def test_a_later_version_counts_runs_trained_after_it_only(version):
    """A later registration: the third's measuring commit (before it) does not hold it, the commit that registered
    it does, and that commit holds the earlier registrations unchanged, so its runs count for every version."""
    later = THEORY3 / f"v{version}" / "registration.json"
    if not later.is_file():
        pytest.skip(f"version {version} is not registered")
    reg3, reg = (json.loads(p.read_text()) for p in (THEORY3 / "registration.json", later))
    git = lambda *a: subprocess.run(["git", "-C", str(THEORY3), *a], capture_output=True, text=True)
    if git("cat-file", "-e", f"{reg['commit']}^{{commit}}").returncode != 0:
        pytest.skip("this checkout has no history to check commits against")
    registered = git("log", "--format=%H", "--diff-filter=A", "--", str(later)).stdout.split()[-1]
    measuring3 = pd.read_csv(THEORY3 / "measured" / f"{reg3['cells'][0]['id']}.csv")["commit"].iloc[0]
    assert commit_status(later, [measuring3, reg["commit"], registered]) == {
        measuring3: BEFORE, reg["commit"]: BEFORE, registered: AFTER}
    earlier = [THEORY3 / "registration.json"] + [THEORY3 / f"v{v}" / "registration.json" for v in range(4, version)]
    for path in earlier:
        assert commit_status(path, [registered]) == {registered: AFTER}
