"""Export the per-run outcomes of Theory II's measured cells (build data for later model versions) from a run
store into build_runs.csv: one row per penalised run, its cell, task instance, seed, onset and final OOD accuracy.

Run: python3 paper_checks/reports/theory3/build_runs.py STORE      (a store of `critwin sweep edge` runs)
"""
import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent


def rows(store: Path):
    for run in sorted(p for p in store.iterdir() if (p / "summary.json").is_file()):
        cfg, summ = json.loads((run / "config.json").read_text()), json.loads((run / "summary.json").read_text())
        if cfg.get("task") != "anchor_permutation" or len(cfg.get("wd_windows") or []) != 1:
            continue
        start, end, lam = cfg["wd_windows"][0]
        yield {"run": run.name, "optimizer": "sgd" if cfg["optimizer"] == "sgd" else "adamw",
               "gamma": cfg["model"]["gamma"], "lambda": lam, "width": int(end - start), "onset": int(start),
               "task_seed": cfg["task_seed"], "seed": cfg["seed"], "steps": cfg["steps"],
               "steps_done": summ.get("steps_done"), "ood_acc": summ["final"]["ood_acc"]}


if __name__ == "__main__":
    store = Path(sys.argv[1])
    frame = pd.DataFrame(rows(store)).sort_values(["optimizer", "gamma", "lambda", "width", "onset", "task_seed", "seed"])
    frame.to_csv(HERE / "build_runs.csv", index=False, float_format="%.6g")
    print(f"{len(frame)} runs -> {HERE / 'build_runs.csv'}")
