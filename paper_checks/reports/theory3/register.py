"""Register the Theory III panel before any of its penalised runs trains: per-run and per-cell predictions of
every method and every trivial baseline, on 24 left cells never measured before.

Methods read each run's own no-decay probe (probes/, the prefix the penalised run shares up to its onset) and
nothing else; baselines are fitted on build data only (Theory II's cells: build_runs.csv, build_cells.csv).
Writes registration.json (the protocol, the cells and per-cell predictions, the code's commit) and
registration_runs.csv (one row per planned run: every method's and baseline's P(composes)).

Run: python3 paper_checks/reports/theory3/register.py     (after probes.py; seconds)
"""
import json
from pathlib import Path

import numpy as np
import pandas as pd

from critwin.bridge.panel import (BASELINES, METHOD_TEXT, METHODS, ONSETS, SEEDS, TASK_SEEDS, cell_plan,
                                  fit_baselines, load_probes, method_curve, register_cells,
                                  registration_stamp)

HERE = Path(__file__).parent
OPTIMIZERS, GAMMAS, LAMBDAS = ("adamw", "sgd"), (0.4, 0.65, 0.95, 1.2), (2e-3, 8e-3, 3.2e-2)
ORDER_SEED = 2026      # the measuring order: a fixed shuffle, so the first cells measured span the panel


def main() -> dict:
    probes = load_probes(HERE / "probes")
    build_runs = pd.read_csv(HERE / "build_runs.csv")
    build_cells = pd.read_csv(HERE / "build_cells.csv").to_dict(orient="records")
    base = fit_baselines(build_runs, build_cells)
    if set(METHODS + BASELINES) & {"cell", "onset", "task_seed", "seed"}:
        raise ValueError("a predictor named like a column of the per-run table would overwrite it")
    cells = [cell_plan("left", o, g, lam, 5000) for o in OPTIMIZERS for g in GAMMAS for lam in LAMBDAS]
    order = np.random.default_rng(ORDER_SEED).permutation(len(cells))
    cells = [cells[i] for i in order]

    def run_curves(cell, ts, s):
        curves = probes[(cell["optimizer"], cell["gamma"], ts, s)]
        steps = method_curve(METHODS[0], curves, cell["lambda"])[0]
        return steps, {m: method_curve(m, curves, cell["lambda"])[1] for m in METHODS}
    rows = register_cells(cells, run_curves, base, METHODS)
    reg = {
        **registration_stamp("python3 paper_checks/reports/theory3/register.py", HERE),
        "methods": METHODS,
        "baselines": BASELINES,
        "method_text": METHOD_TEXT,
        "outcome": "a run composes when its final OOD accuracy (step 20,000) is >= 0.5",
        "edge_rule": "a cell's edge: the first upward crossing of 0.5 by the mean outcome over its 6 runs along the "
                     "onset grid, linearly interpolated (0 if onset 0 already composes; none: no window)",
        "scoring": "per cell |log2((p+25)/(m+25))|, no window as 1,600 steps; per run Brier and AUC of composes; "
                   "skill = baseline error - method error with a paired bootstrap 90% interval over cells, or over "
                   "(cell, task instance) clusters per run; no verdict below 8 clusters",
        "protocol": {"onsets": ONSETS, "width": 5000, "task_seeds": TASK_SEEDS, "seeds": SEEDS,
                     "steps": 20000, "decay": "l2 on the non-embedding weights (the paper's Eq. 4)",
                     "sgd": "lr 0.1, momentum 0.9", "adamw": "lr 3e-3 (the paper's)"},
        "order_seed": ORDER_SEED,
        "supersedes": [{"commit": "c83fd63", "registered": "2026-12-06T05:01:44+00:00",
                        "why": "its methods read step 0's share, the initial gradient's one-step transient that "
                               "Theory II's rule skips"},
                       {"commit": "65c441c", "registered": "2026-12-06T05:02:34+00:00",
                        "why": "its per-run table's onset column was overwritten by the baseline named 'onset'"}],
        "superseded_note": "both withdrawn before any of the panel's runs finished; never scored",
        "cells": cells,
    }
    (HERE / "registration.json").write_text(json.dumps(reg, indent=1) + "\n")
    pd.DataFrame(rows).to_csv(HERE / "registration_runs.csv", index=False, float_format="%.5g")
    print(f"{len(cells)} cells, {len(rows)} runs registered at {reg['registered']} (commit {reg['commit'][:7]})")
    return reg


if __name__ == "__main__":
    main()
