"""The panel score: a run counts only when the commit that trained it already held the registration (checked on a
repository built here commit by commit, and through `critwin bridge score` on the real panel), and its reading
within each cell setting (`--by`) is counted by hand."""
import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd

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
    committed) or no commit, the score counts them apart and scores only the others."""
    from critwin.cli.main import main
    reg = json.loads((THEORY3 / "registration.json").read_text())
    measured = tmp_path / "measured"
    shutil.copytree(THEORY3 / "measured", measured)
    frames = {f: pd.read_csv(f) for f in sorted(measured.glob("*.csv"))}
    first, second = list(frames)[:2]
    frames[first]["commit"] = reg["commit"]                       # the code commit: the registration came after it
    frames[second].loc[:9, "commit"] = None
    for f, frame in frames.items():
        frame.to_csv(f, index=False)
    total = sum(len(f) for f in frames.values())
    main(["bridge", "score", str(THEORY3 / "registration.json"), str(measured), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["provenance"] == {AFTER: total - len(frames[first]) - 10, BEFORE: len(frames[first]), UNKNOWN: 10}
    assert out["measured_runs"] == total - len(frames[first])


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
