"""What chose a later version, on its build data only: each earlier panel cell left out in turn, the version's
calibration (bridge.calibrated) fitted on the others and scored on it, beside held_max and onset alone as the third
version registered them, and per cell beside the three baselines refitted without that cell (Theory II's data and
the other build cells), with the skill's 90% interval over cells. Not a verdict: a version is scored on the cells
measured after it (v<N>/registration.json).

Run: python3 paper_checks/reports/theory3/loco.py [VERSION]     (default 4; after register_version.py; seconds)
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from critwin.bridge.calibrated import CalibratedHeld
from critwin.bridge.panel import fit_baselines, measured_edge, predict_baselines
from critwin.bridge.skill import COMPOSES, brier, crossing, edge_error, error_skill
from register_version import baseline_inputs

HERE = Path(__file__).parent
KEYS = ["cell", "onset", "task_seed", "seed"]


def main(version: int = 4) -> pd.DataFrame:
    reg = json.loads((HERE / f"v{version}" / "registration.json").read_text())
    method, train_terms = reg["methods"][0], reg.get("train_terms", [])
    build = pd.read_csv(HERE / f"v{version}" / "build_runs.csv")
    build["composes"] = (build["ood_acc"] >= COMPOSES).astype(float)
    v3 = pd.read_csv(HERE / "registration_runs.csv")[KEYS + ["onset_logistic"]]
    runs = build.merge(v3, on=KEYS)
    runs[method] = np.nan
    for cell in runs["cell"].unique():
        out = runs["cell"] == cell
        cal = CalibratedHeld(train_terms).fit(runs[~out])
        g = runs[out]
        runs.loc[out, method] = cal.predict_proba(g["optimizer"].iloc[0], g["held_max"], g["lambda"],
                                                  g["train_acc"] if train_terms else None)
    names = [method, "held_max", "onset_logistic"]
    rows = []
    for label, part in [("all", runs), *runs.groupby("optimizer")]:
        rows.append({"runs": label, "n": len(part), **{n: brier(part[n], part["composes"]) for n in names}})
    reg3 = json.loads((HERE / "registration.json").read_text())
    plan = {c["id"]: c for c in reg3["cells"]}
    errors = []
    for cell, g in runs.groupby("cell"):
        if len(g) < 54:
            continue
        m = measured_edge(g)
        by = g.groupby("onset")[names].mean()
        row = {"cell": cell, **{n: edge_error(crossing(by.index.to_numpy(float), by[n].to_numpy()), m) for n in names}}
        base = fit_baselines(*baseline_inputs(build[build["cell"] != cell], reg3))     # refitted without this cell
        for b, edge in predict_baselines(base, plan[cell]).items():
            row[f"{b} (refit)"] = edge_error(edge, m)
        errors.append(row)
    errors = pd.DataFrame(errors)
    rows.append({"runs": f"mean edge error ({len(errors)} cells)", "n": len(errors),
                 **errors.drop(columns="cell").mean().to_dict()})
    table = pd.DataFrame(rows)
    print("leave one earlier cell out: per-run Brier by optimizer, then mean |log2| edge error over complete cells")
    print(table.round(3).to_string(index=False))
    print(f"per cell, {method}'s edge-error skill over each baseline refitted without the cell (90% over cells):")
    for b in [c for c in errors.columns if c.endswith("(refit)")]:
        s = error_skill(errors["cell"], errors[b], errors[method])
        print(f"  {b:24s} {s['skill']:+.3f} ({s['lo']:+.3f} to {s['hi']:+.3f}), {s['clusters']} cells: {s['verdict']}")
    return table


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
