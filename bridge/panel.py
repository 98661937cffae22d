"""A registered panel of onset curves: per-run predictions from each run's own no-decay state, trivial baselines
fitted on build data, and their scores once the runs are measured (bridge.skill).

Each penalised run (cell x onset x task instance x seed) shares its no-decay prefix up to the onset with a probe of
the same seed and task instance, so a method may read that probe up to the onset. The methods here are the
composition model read coordinate by coordinate (bridge.survival): a coordinate of the reasoning path grows
under the penalty iff its pull beats lambda theta^2, the per-coordinate solution of q' = s eps q^2 - lambda q.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from critwin.bridge.registration import cell_id
from critwin.bridge.skill import (COMPOSES, NO_WINDOW, OnsetLogistic, auc, auc_skill, brier, crossing, edge_error,
                                  error_skill, nearest_cell, reliability)
from critwin.errors import ConfigError

ONSETS = (0, 50, 100, 150, 200, 300, 400, 600, 800)
TASK_SEEDS, SEEDS = (0, 1, 2), (0, 1)     # the task instances and init seeds of every panel cell
METHODS = ("held_max", "held_half")
BASELINES = ("constant", "nearest", "onset_logistic")
METHOD_TEXT = {
    "held_max": "P(composes at onset t) = the running maximum, up to t, of the run's own held share of the "
                "attention weights the loss grows (bridge.survival) at the cell's lambda, step 0's transient share "
                "(the initial gradient's, one step) replaced by the next logged state's; nothing fitted",
    "held_half": "composes (P = 1) once the run's own held share has reached 1/2 by the onset, else P = 0 "
                 "(Theory II's level, from Adam's sign limit, read per run)",
    "constant": "the build cells' mean left edge; per run P = 1 at onsets past it, else 0",
    "nearest": "the nearest build cell in (optimizer, gamma / 0.3, log2 lambda / 2): its edge; per run its "
               "measured fraction of composing runs at the onset (linear between its measured onsets)",
    "onset_logistic": "a logistic curve of composes against the onset alone, fitted on the build runs",
}
SGD_SETS = "--set optimizer=sgd --set lr=0.1 --set momentum=0.9 "


def cell_plan(kind: str, optimizer: str, gamma: float, lam: float, width: int, store: str = "runs/theory3") -> dict:
    """A panel cell with its id and the `critwin sweep run` command that measures its whole onset curve."""
    if kind != "left":
        raise ConfigError("kind", kind, "left (the panel's methods predict left edges)")
    cell = {"kind": kind, "optimizer": optimizer, "gamma": gamma, "lambda": lam, "width": width}
    cell["id"] = cell_id(cell)
    cell["measure"] = (f"critwin sweep run --set gamma={gamma:g} --set decay_form=l2 --set decay_set=non_embedding "
                       f"--set wd={lam:g} --set wd_width={width} --set wd_window_start={','.join(map(str, ONSETS))} "
                       f"--set task_seed=0,1,2 --set seed=0,1 {SGD_SETS if optimizer == 'sgd' else ''}"
                       f"--store {store}")
    return cell


def method_curve(method: str, curves: dict, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(probe steps, P(composes) for a window opening at each step) of a method on one run's probe."""
    key = f"attn_{float(lam):g}"
    if key not in curves:
        raise ConfigError("lambda", lam, "a lambda the probe measured: " + ", ".join(
            k[5:] for k in curves if k.startswith("attn_") and k != "attn_grown"))
    steps = np.asarray(curves["step"], float)
    held = np.nan_to_num(np.asarray(curves[key], float), nan=0.0)
    if len(held) > 1 and steps[0] == 0:
        held[0] = held[1]        # step 0's share comes from the initial gradient, which lasts one step (Theory II)
    held = np.maximum.accumulate(held)
    if method == "held_max":
        return steps, held
    if method == "held_half":
        return steps, (held >= 0.5).astype(float)
    raise ConfigError("method", method, "one of " + ", ".join(METHODS))


def load_probes(folder) -> dict:
    """(optimizer, gamma, task_seed, seed) -> the curves of each no-decay probe JSON in `folder` (probes.py)."""
    import json
    from pathlib import Path
    out = {}
    for path in sorted(Path(folder).glob("*.json")):
        p = json.loads(path.read_text())
        out[(p["optimizer"], float(p["gamma"]), p["task_seed"], p["seed"])] = p["curves"]
    return out


def at_onset(steps, p, onset: float) -> float:
    """A method's P at an onset: the last probe state at or before it (the probe's end past it)."""
    i = int(np.searchsorted(np.asarray(steps, float), onset, side="right")) - 1
    return float(p[max(i, 0)])


def fit_baselines(build_runs: pd.DataFrame, build_cells: list[dict]) -> dict:
    """The trivial baselines' fitted state, from build data only: the mean edge, the build cells, each build cell's
    composing fraction by onset, and the onset-alone logistic curve (left cells only)."""
    left = build_runs[build_runs["width"] == 5000]
    composes = (left["ood_acc"] >= COMPOSES).astype(float)
    fractions = {}
    for key, g in left.assign(composes=composes).groupby(["optimizer", "gamma", "lambda"]):
        by = g.groupby("onset")["composes"].mean()
        fractions[(key[0], float(key[1]), float(key[2]))] = (by.index.to_numpy(float), by.to_numpy(float))
    edges = [float(c["edge"]) if c["edge"] == c["edge"] else NO_WINDOW for c in build_cells]
    return {"constant": float(np.mean(edges)), "cells": build_cells, "fractions": fractions,
            "onset_logistic": OnsetLogistic().fit(left["onset"], composes)}


def predict_baselines(base: dict, cell: dict, onset: float | None = None) -> dict:
    """Each baseline's left edge for a cell (onset None), or its P(composes) for a run at `onset`."""
    near = nearest_cell(cell, base["cells"])
    if onset is None:
        edge = near["edge"]
        return {"constant": base["constant"], "nearest": None if edge != edge else float(edge),
                "onset_logistic": base["onset_logistic"].edge()}
    with_runs = [c for c in base["cells"] if (c["optimizer"], float(c["gamma"]), float(c["lambda"])) in base["fractions"]]
    near_r = nearest_cell(cell, with_runs)
    x, y = base["fractions"][(near_r["optimizer"], float(near_r["gamma"]), float(near_r["lambda"]))]
    return {"constant": float(onset >= base["constant"]), "nearest": float(np.interp(onset, x, y)),
            "onset_logistic": float(base["onset_logistic"].predict_proba([onset])[0])}


def register_cells(cells: list[dict], run_curves, base: dict, methods) -> list[dict]:
    """Fill each cell's `predicted` edges (each method's mean curve over its runs crossing 1/2; each baseline's edge)
    and return the per-run rows of the registration (every method's and baseline's P at each onset).
    run_curves(cell, task_seed, seed) -> (probe steps, {method: P(composes) for a window opening at each step})."""
    rows = []
    for cell in cells:
        curves = {(ts, s): run_curves(cell, ts, s) for ts in TASK_SEEDS for s in SEEDS}
        steps = next(iter(curves.values()))[0]
        cell["predicted"] = {}
        for m in methods:
            edge = crossing(steps, np.mean([c[m] for _, c in curves.values()], axis=0))
            cell["predicted"][m] = None if edge is None else round(edge, 1)
        for b, edge in predict_baselines(base, cell).items():
            cell["predicted"][b] = None if edge is None else round(edge, 1)
        for onset in ONSETS:
            for (ts, s), (st, c) in curves.items():
                rows.append({"cell": cell["id"], "onset": onset, "task_seed": ts, "seed": s,
                             **{m: at_onset(st, c[m], onset) for m in methods},
                             **predict_baselines(base, cell, onset=onset)})
    return rows


def registration_stamp(command: str, where) -> dict:
    """The head of a panel registration: when it was made, the code's git commit at `where`, and the command."""
    import datetime
    import subprocess
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=where).stdout.strip()
    return {"registered": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": commit, "design": "panel", "command": command}


def measured_edge(runs: pd.DataFrame):
    """A measured cell's edge: the crossing of 0.5 by the mean outcome over the onset grid."""
    curve = runs.groupby("onset")["ood_acc"].mean()
    return crossing(curve.index.to_numpy(float), curve.to_numpy(float))


def load_panel(registration, measured=None) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(registration, its per-run predictions, the measured runs so far): registration.json with
    registration_runs.csv beside it, and the <cell id>.csv files of `measured` (default: measured/ beside it;
    none yet: an empty frame)."""
    import json
    from pathlib import Path
    registration = Path(registration)
    measured = registration.parent / "measured" if measured is None else Path(measured)
    files = sorted(measured.glob("*.csv")) if measured.is_dir() else []
    runs = (pd.concat([pd.read_csv(f) for f in files]) if files
            else pd.DataFrame(columns=["cell", "onset", "task_seed", "seed", "ood_acc"]))
    return (json.loads(registration.read_text()), pd.read_csv(registration.parent / "registration_runs.csv"), runs)


def _joined(predicted: pd.DataFrame, measured: pd.DataFrame) -> tuple[pd.DataFrame, set]:
    """The measured runs with their predictions and outcome, and the ids of the cells whose every run is measured."""
    keys = ["cell", "onset", "task_seed", "seed"]
    runs = predicted.merge(measured[keys + ["ood_acc"]], on=keys, how="inner")
    runs["composes"] = runs["ood_acc"] >= COMPOSES
    complete = {c for c, g in runs.groupby("cell") if len(g) == len(predicted[predicted["cell"] == c])}
    return runs, complete


def _cell_table(reg: dict, runs: pd.DataFrame, complete: set, names: list) -> pd.DataFrame:
    """One row per complete cell, in registered order: its measured edge, each name's prediction and edge error."""
    cells = []
    for cell in reg["cells"]:
        if cell["id"] not in complete:
            continue
        edge = measured_edge(runs[runs["cell"] == cell["id"]])
        row = {"cell": cell["id"], "measured": "no window" if edge is None else round(edge, 1)}
        for n in names:
            p = cell["predicted"][n]
            row[n] = "no window" if p is None else p
            row[f"{n}_err"] = edge_error(p, edge)
        cells.append(row)
    return pd.DataFrame(cells)


def _clusters(runs: pd.DataFrame) -> pd.Series:
    return runs["cell"] + "/t" + runs["task_seed"].astype(str)


def _brier_skill(runs: pd.DataFrame, method: str, base: str) -> dict:
    return error_skill(_clusters(runs), (runs[base] - runs["composes"]) ** 2, (runs[method] - runs["composes"]) ** 2)


def score_panel(reg: dict, predicted: pd.DataFrame, measured: pd.DataFrame) -> dict:
    """Per-cell and per-run tables and each method's skill over each baseline, on the measured runs only.
    predicted: registration_runs.csv; measured: rows (cell, onset, task_seed, seed, ood_acc) of finished runs."""
    runs, complete = _joined(predicted, measured)
    names = [*reg["methods"], *reg["baselines"]]
    cells = _cell_table(reg, runs, complete, names)
    per_run = pd.DataFrame([{"name": n, "brier": brier(runs[n], runs["composes"]), "auc": auc(runs[n], runs["composes"])}
                            for n in names]) if len(runs) else pd.DataFrame()
    skill = []
    for m in reg["methods"]:
        for b in reg["baselines"]:
            if len(cells):
                skill.append({"method": m, "baseline": b, "score": "cell |log2| edge error",
                              **error_skill(cells["cell"], cells[f"{b}_err"], cells[f"{m}_err"])})
            if len(runs):
                skill.append({"method": m, "baseline": b, "score": "run Brier", **_brier_skill(runs, m, b)})
                skill.append({"method": m, "baseline": b, "score": "run AUC",
                              **auc_skill(_clusters(runs), runs["composes"], runs[m], runs[b])})
    calibration = pd.DataFrame([{"name": n, **r} for n in names for r in reliability(runs[n], runs["composes"])]
                               ) if len(runs) else pd.DataFrame()
    return {"cells": cells, "runs": per_run, "skill": pd.DataFrame(skill), "calibration": calibration,
            "measured_runs": int(len(runs)),
            "measured_cells": len(complete), "registered_cells": len(reg["cells"]),
            "registered_runs": int(len(predicted))}


def score_course(reg: dict, predicted: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """How the registered verdict moved as the panel came in: after each complete cell, in registered (measuring)
    order, each method's per-run Brier skill and per-cell edge-error skill over each baseline, on the complete cells
    so far only. One row per (cells, method, baseline, score) with skill, lo, hi, clusters and verdict."""
    runs, complete = _joined(predicted, measured)
    names = [*reg["methods"], *reg["baselines"]]
    order = [c["id"] for c in reg["cells"] if c["id"] in complete]
    table = _cell_table(reg, runs, complete, names)
    rows = []
    for k in range(1, len(order) + 1):
        part, cells = runs[runs["cell"].isin(order[:k])], table.iloc[:k]
        for m in reg["methods"]:
            for b in reg["baselines"]:
                head = {"cells": k, "runs": int(len(part)), "method": m, "baseline": b}
                rows.append({**head, "score": "run Brier", **_brier_skill(part, m, b)})
                rows.append({**head, "score": "cell |log2| edge error",
                             **error_skill(cells["cell"], cells[f"{b}_err"], cells[f"{m}_err"])})
    return pd.DataFrame(rows)


def onset_curves(reg: dict, predicted: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """Each measured cell's onset curve beside its predictions, over the same runs: per (cell, onset) the fraction
    of measured runs that compose ('measured'), their mean OOD accuracy ('ood_acc', whose crossing of 0.5 is the
    edge) and each predictor's mean P. Long format (cell, onset, name, value, runs), in registered cell order."""
    runs, _ = _joined(predicted, measured)
    names = [*reg["methods"], *reg["baselines"]]
    cols = ["cell", "onset", "name", "value", "runs"]
    if not len(runs):
        return pd.DataFrame(columns=cols)
    g = runs.groupby(["cell", "onset"])
    wide = g[names].mean().assign(measured=g["composes"].mean(), ood_acc=g["ood_acc"].mean(), runs=g.size())
    long = wide.reset_index().melt(id_vars=["cell", "onset", "runs"], value_vars=["measured", "ood_acc", *names],
                                   var_name="name", value_name="value")
    order = {c["id"]: k for k, c in enumerate(reg["cells"])}
    rank = {n: k for k, n in enumerate(["measured", "ood_acc", *names])}
    long = long.assign(_c=long["cell"].map(order), _n=long["name"].map(rank))
    return long.sort_values(["_c", "_n", "onset"])[cols].reset_index(drop=True)


def curve_cells(reg: dict, predicted: pd.DataFrame, measured: pd.DataFrame) -> list[dict]:
    """What a figure of `onset_curves` titles each measured cell with, in registered order: its setting, runs
    measured of registered, and its edge as the score reads it (`measured_edge`; None: no window)."""
    runs, _ = _joined(predicted, measured)
    out = []
    for cell in reg["cells"]:
        own = runs[runs["cell"] == cell["id"]]
        if not len(own):
            continue
        out.append({"id": cell["id"], "optimizer": cell["optimizer"], "gamma": cell["gamma"], "lambda": cell["lambda"],
                    "runs": int(len(own)), "registered": int((predicted["cell"] == cell["id"]).sum()),
                    "edge": measured_edge(own), "predicted": cell["predicted"]})
    return out


BY = ("optimizer", "gamma", "lambda")


def score_by(reg: dict, predicted: pd.DataFrame, measured: pd.DataFrame, key: str) -> pd.DataFrame:
    """The per-run score within each value of a cell setting (optimizer, gamma or lambda): a reading chosen after
    the registration, not its verdict. One row per (value, name): runs, Brier, AUC, and for a method its Brier skill
    over each baseline b with its 90% interval and clusters (columns `b_skill`, `b_lo`, `b_hi`, `b_clusters`)."""
    if key not in BY:
        raise ConfigError("by", key, "one of " + ", ".join(BY))
    setting = {c["id"]: c[key] for c in reg["cells"]}
    rows = []
    for value in sorted({setting[c] for c in measured["cell"].unique() if c in setting}):
        part = score_panel(reg, predicted, measured[measured["cell"].map(setting) == value])
        skill = part["skill"]
        for r in part["runs"].to_dict(orient="records"):
            row = {key: value, "runs": part["measured_runs"], **r}
            if r["name"] in reg["methods"]:
                for b in reg["baselines"]:
                    s = skill[(skill["method"] == r["name"]) & (skill["baseline"] == b) & (skill["score"] == "run Brier")]
                    if len(s):
                        row.update({f"{b}_{k}": s.iloc[0][k] for k in ("skill", "lo", "hi", "clusters")})
            rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["BASELINES", "BY", "METHODS", "METHOD_TEXT", "ONSETS", "SEEDS", "TASK_SEEDS", "at_onset", "cell_plan",
           "curve_cells", "fit_baselines", "load_panel", "load_probes", "measured_edge", "method_curve",
           "onset_curves", "predict_baselines", "register_cells", "registration_stamp", "score_by", "score_course",
           "score_panel"]
