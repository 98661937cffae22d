"""The Alchemy report's scripts work from the exports alone (no checkpoint or state in git): train_long.sh rebuilds
the finished long run (seed 0) into a store outside the repository, so its command trains nothing, and another
seed trains from scratch; export_runs.py adds a store's runs to an export and rebuilding gives them back."""
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "alchemy_authors"
LONG_RUN = "4fd235a0283b7550"


def test_train_long_rebuilds_the_finished_run_from_its_export(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "log"
    (bin_ / "critwin").write_text(f"#!/bin/sh\necho critwin \"$@\" >> {log}\n")   # records what would train
    (bin_ / "critwin").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "STORE": str(tmp_path / "runs")}
    for seed in ("0", "1"):
        subprocess.run(["bash", str(HERE / "train_long.sh"), seed], env=env, check=True, timeout=120)
    store = tmp_path / "runs" / "store"
    summary = json.loads((store / LONG_RUN / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert [p.name for p in store.iterdir() if not p.name.startswith(".")] == [LONG_RUN]   # seed 1 not rebuilt
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and all(line.startswith("critwin train alchemy") for line in lines)
    assert "--seed 0" in lines[0] and "--seed 1" in lines[1] and f"--store {store}" in lines[0]


def test_export_runs_adds_a_store_and_rebuilding_gives_it_back(tmp_path, monkeypatch):
    from critwin.paper_checks.run_export import read_export, rebuild_store
    spec = importlib.util.spec_from_file_location("export_runs", HERE / "export_runs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shutil.copytree(HERE / "runs_authors", tmp_path / "runs_authors")
    monkeypatch.setattr(mod, "HERE", tmp_path)
    before = read_export(tmp_path / "runs_authors")[2]
    store = tmp_path / "store"
    assert rebuild_store(tmp_path / "runs_authors", store, sources={"carry"}) == [LONG_RUN]
    run = store / LONG_RUN
    cfg = json.loads((run / "config.json").read_text())
    cfg["seed"] = 7                                              # a new run beside the long one
    from critwin.empirical.config import TrainConfig
    new_id = TrainConfig.from_dict(cfg).run_id()
    shutil.copytree(run, store / new_id)
    (store / new_id / "config.json").write_text(json.dumps(cfg))
    assert mod.main([str(store)]) == 0
    _, metrics, after = read_export(tmp_path / "runs_authors")
    assert set(after) == set(before) | {new_id} and after[new_id]["source"] == "store"
    rebuilt = tmp_path / "rebuilt"
    assert sorted(rebuild_store(tmp_path / "runs_authors", rebuilt, sources={"store"})) == sorted([LONG_RUN, new_id])
    got = pd.read_parquet(rebuilt / new_id / "metrics.parquet")
    want = pd.read_parquet(run / "metrics.parquet")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False)
