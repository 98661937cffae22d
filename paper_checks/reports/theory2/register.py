"""Register the composition model's predicted L2 window edges before any of them is bisected.

The model (theory.composition.survival_edge, read off no-decay probes by bridge.survival): the left edge is
the first onset at which an L2 penalty holds back less than half of the attention weights the loss grows.
It predicts left edges only; right edges are registered as "not predicted" and count as misses.

Writes, next to this file: registration.json (dated; the cells, each with the exact `critwin sweep edge`
command that measures it), held_curves.json (the probes' mean curves) and held_share.png.
Cells whose edge was measured while the model was being built are marked build and never scored.

Run: python3 paper_checks/reports/theory2/register.py      (36 no-decay probes, ~15 CPU-minutes)
"""
import datetime
import json
import subprocess
import sys
from pathlib import Path

from critwin.figures import plot_held_share
from critwin.bridge.registration import NOT_PREDICTED, cell_id, validate
from critwin.bridge.survival import PROBES, predict

HERE = Path(__file__).parent
GAMMAS, LAMBDAS, OPTIMIZERS = (0.5, 0.8, 1.1), (4e-3, 1.6e-2), ("adamw", "sgd")
TASK_SEEDS, SEEDS = (0, 1, 2), (0, 1)
RIGHT_LAMBDA, RIGHT_WIDTHS = 1e-2, (2000, 1000)
# edges measured before this registration (paper_checks/reports/edges, left_edge): they shaped the model
BUILD = {("left", "adamw", 0.5, 4e-3, 5000), ("left", "adamw", 0.8, 4e-3, 5000), ("left", "adamw", 0.5, 1.6e-2, 5000),
         ("left", "adamw", 0.8, 1.6e-2, 5000), ("left", "adamw", 1.1, 1.6e-2, 5000), ("left", "sgd", 0.8, 4e-3, 5000),
         ("right", "adamw", 0.5, 1e-2, 2000), ("right", "adamw", 0.8, 1e-2, 2000), ("right", "adamw", 1.1, 1e-2, 2000)}
SGD_SETS = "--set optimizer=sgd --set lr=0.1 --set momentum=0.9 "


def edge_command(kind: str, opt: str, gamma: float, lam: float, width: int) -> str:
    """The bisection that measures a cell: 3 task instances x 2 seeds, the L2 reading on the non-embedding
    weights, 20k steps; left: onsets 0-800 to 25 steps at final OOD 0.5; right: 9000-18000 to 500 at 0.7."""
    grid = ("--lo 0 --hi 800 --resolution 25 --threshold 0.5" if kind == "left"
            else "--lo 9000 --hi 18000 --resolution 500 --threshold 0.7")
    return (f"critwin sweep edge --param wd_window_start {grid} --seeds {len(SEEDS)} --task-seeds {len(TASK_SEEDS)}"
            f" --wd {lam:g} --width {width} --set gamma={gamma:g} --set decay_form=l2 --set decay_set=non_embedding "
            f"{SGD_SETS if opt == 'sgd' else ''}--workers 1 --store runs/theory2 --json")


def main() -> dict:
    rows, curves = predict(OPTIMIZERS, GAMMAS, LAMBDAS, TASK_SEEDS, SEEDS,
                           progress=lambda m: print(m, file=sys.stderr, flush=True))
    cells = []
    for r in rows:
        edge = r["predicted_left_edge"]
        cells.append({"kind": "left", "optimizer": r["optimizer"], "gamma": r["gamma"], "lambda": r["lambda"],
                      "width": 5000, "predicted": None if edge is None else round(edge, 1)})
    for width in RIGHT_WIDTHS:
        for g in GAMMAS:
            cells.append({"kind": "right", "optimizer": "adamw", "gamma": g, "lambda": RIGHT_LAMBDA, "width": width,
                          "predicted": NOT_PREDICTED})
    for c in cells:
        c["build"] = (c["kind"], c["optimizer"], c["gamma"], c["lambda"], c["width"]) in BUILD
        c["id"] = cell_id(c)
        c["measure"] = edge_command(c["kind"], c["optimizer"], c["gamma"], c["lambda"], c["width"])
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    reg = {
        "registered": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "command": "python3 paper_checks/reports/theory2/register.py",
        "model": "composition model read coordinate by coordinate (theory.composition.survival_edge): the left "
                 "edge is the first upward crossing of 1/2 by the |theta|-weighted share of the attention weights "
                 "the loss grows (full training set's gradient) whose pull beats the penalty (-g theta >= lambda "
                 "theta^2), along no-decay runs; 1/2 from Adam's sign limit; nothing fitted. Right edges: not "
                 "predicted by this model",
        "inputs": {"probes": {k: {"steps": v[1], "state_every": v[2], **v[0]} for k, v in PROBES.items()},
                   "gammas": GAMMAS, "lambdas": LAMBDAS, "task_seeds": TASK_SEEDS, "seeds": SEEDS,
                   "probes_per_cell": len(TASK_SEEDS) * len(SEEDS)},
        "scoring": "a hit: the prediction inside the measured edge's 90% bootstrap interval; 'no window' (null): "
                   "a hit when the bisection finds no crossing; 'not predicted': a miss; build cells are not scored",
        "cells": cells,
    }
    validate(reg)
    (HERE / "registration.json").write_text(json.dumps(reg, indent=1) + "\n")
    (HERE / "held_curves.json").write_text(json.dumps(curves) + "\n")
    plot_held_share(curves, rows, HERE / "held_share.png")
    return reg


if __name__ == "__main__":
    out = main()
    for c in out["cells"]:
        print(f"{c['id']:34s} {str(c['predicted']):>14s} {'build' if c['build'] else ''}")
