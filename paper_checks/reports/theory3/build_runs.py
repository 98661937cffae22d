"""Theory III's build data, from Theory II's measurements: build_cells.csv, the 12 left edges measured before
(6 bisected while Theory II was built, paper_checks/reports/edges and left_edge; 6 scored, theory2/measured), and
build_runs.csv, one row per penalised run of Theory II's measured cells (its cell, task instance, seed, onset and
final OOD accuracy), read from Theory II's committed run export (theory2/runs_export/).

Run: python3 paper_checks/reports/theory3/build_runs.py
"""
import json
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
THEORY2 = HERE.parent / "theory2"
# (optimizer, gamma, lambda): the bracket of each edge bisected while Theory II was built (its README's table)
EARLIER = {("adamw", 0.5, 4e-3): (100, 125), ("adamw", 0.5, 1.6e-2): (200, 225), ("adamw", 0.8, 4e-3): (575, 600),
           ("adamw", 0.8, 1.6e-2): (350, 375), ("adamw", 1.1, 1.6e-2): (150, 175), ("sgd", 0.8, 4e-3): (0, 250)}


def cells():
    for (opt, g, lam), (lo, hi) in EARLIER.items():
        yield {"optimizer": opt, "gamma": g, "lambda": lam, "edge_lo": lo, "edge_hi": hi, "edge": (lo + hi) / 2,
               "source": "built Theory II (paper_checks/reports/theory2/README.md)"}
    reg = json.loads((THEORY2 / "registration.json").read_text())
    for c in reg["cells"]:
        path = THEORY2 / "measured" / f"{c['id']}.json"
        if c["kind"] != "left" or c["build"] or not path.is_file():
            continue
        edge = json.loads(path.read_text())["edge"]
        yield {"optimizer": c["optimizer"], "gamma": c["gamma"], "lambda": c["lambda"],
               "edge_lo": None if edge is None else edge[0], "edge_hi": None if edge is None else edge[1],
               "edge": None if edge is None else sum(edge) / 2, "source": f"theory2/measured/{c['id']}.json"}


def rows(export: Path):
    from critwin.paper_checks.run_export import read_export
    _, _, records = read_export(export)
    for rid in sorted(records):
        cfg, summ = records[rid]["config"], records[rid]["summary"]
        if cfg.get("task") != "anchor_permutation" or len(cfg.get("wd_windows") or []) != 1:
            continue
        start, end, lam = cfg["wd_windows"][0]
        yield {"run": rid, "optimizer": "sgd" if cfg["optimizer"] == "sgd" else "adamw",
               "gamma": cfg["model"]["gamma"], "lambda": lam, "width": int(end - start), "onset": int(start),
               "task_seed": cfg["task_seed"], "seed": cfg["seed"], "steps": cfg["steps"],
               "steps_done": summ.get("steps_done"), "ood_acc": summ["final"]["ood_acc"]}


if __name__ == "__main__":
    pd.DataFrame(cells()).to_csv(HERE / "build_cells.csv", index=False)
    frame = pd.DataFrame(rows(THEORY2 / "runs_export")).sort_values(["optimizer", "gamma", "lambda", "width", "onset", "task_seed", "seed"])
    frame.to_csv(HERE / "build_runs.csv", index=False, float_format="%.6g")
    print(f"{len(frame)} runs -> {HERE / 'build_runs.csv'}")
