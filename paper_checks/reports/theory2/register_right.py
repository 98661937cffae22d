"""The one revision of Theory II: right edges from the composition model's memorised plateau (bridge.late_window).

For every right-edge cell of registration.json it trains the cell's probes (the cell's own run, window at step
6000, 3 task instances x 2 seeds) into STORE, reads the predicted edge, and writes registration_right.json (dated,
with the commit it was made at) and late_probes.json (the lag curves). The width-2000 cells were measured before
(build): their predicted outcomes are set beside the measured ones (../edges/) to show what the reading does on
data it may be judged by, but they are not scored. Run it, commit its outputs, and only then bisect the
width-1000 cells (measure.sh right_adamw_g0.5_l0.01_w1000 ...).

    STORE=runs/theory2 python3 paper_checks/reports/theory2/register_right.py
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
from pathlib import Path

from critwin.bridge.late_window import PROBE_ONSET, predict
from critwin.empirical import RunStore
from critwin.empirical.sweep.executors import LocalExecutor
from critwin.empirical.sweep.spec import SweepSpec

HERE = Path(__file__).resolve().parent
TOTAL = 20000
BUILD = {0.5: "edge_right_gamma05_width2000.json", 0.8: "edge_right_gamma08_width2000.json",
         1.1: "edge_right_gamma11_width2000.json"}
MODEL = ("composition model on its memorised plateau (bridge.late_window, theory.composition.late_window_edge): once "
         "memorisation has converged the no-decay flow all but stops, so a window's outcome depends on the time since "
         "its onset only; the final OOD accuracy of a window at onset o is that of one penalised probe (the cell's run, "
         f"window at step {PROBE_ONSET}) {TOTAL} - o steps after its onset; the right edge is where that crosses the "
         "threshold; nothing fitted. Left edges: as registered in registration.json (unchanged)")


def edge_args(measure: str) -> argparse.Namespace:
    """The parts of a cell's `critwin sweep edge` command that define its runs and its bisection."""
    p = argparse.ArgumentParser(add_help=False)
    for k in ("--lo", "--hi", "--threshold", "--wd"):
        p.add_argument(k, type=float)
    p.add_argument("--width", type=float)
    p.add_argument("--set", action="append", default=[])
    args, _ = p.parse_known_args(shlex.split(measure)[3:])
    return args


def main() -> None:
    store = RunStore(os.environ.get("STORE", "runs/theory2") + "/store")
    reg = json.loads((HERE / "registration.json").read_text())
    cells, curves = [], {}
    for cell in (c for c in reg["cells"] if c["kind"] == "right"):
        a = edge_args(cell["measure"])
        base = {**SweepSpec().with_sets(a.set).base, "wd": a.wd, "wd_width": a.width}
        out = predict(base, TOTAL, a.lo, a.hi, a.threshold, store, LocalExecutor(workers=1), progress=True)
        row = {k: cell[k] for k in ("kind", "optimizer", "gamma", "lambda", "width")}
        row.update(predicted=out["predicted"], build=cell["build"], id=cell["id"], measure=cell["measure"],
                   predicted_outcome_by_onset=out["predicted_outcome_by_onset"])
        if cell["build"]:
            measured = json.loads((HERE.parent / "edges" / BUILD[cell["gamma"]]).read_text())
            row["build_measured"] = {"edge": measured["edge"], "edge_ci": measured.get("edge_ci"),
                                     "seeds": measured["seeds"], "outcome_by_onset": {
                                         int(e["value"]): round(e["outcome"], 3) for e in measured["evaluations"]}}
        cells.append(row)
        curves[cell["id"]] = {k: out[k] for k in ("lag", "mean", "probe_runs", "probe_onset", "probe_steps")}
        print(cell["id"], "predicted", out["predicted"], flush=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout.strip()
    doc = {"registered": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "commit": commit,
           "command": "STORE=runs/theory2 python3 paper_checks/reports/theory2/register_right.py", "model": MODEL,
           "revision_of": "registration.json (its right edges were 'not predicted'; this is the one revision allowed)",
           "inputs": {"probe_onset": PROBE_ONSET, "task_seeds": [0, 1, 2], "seeds": [0, 1], "total": TOTAL},
           "scoring": reg["scoring"], "cells": cells}
    (HERE / "registration_right.json").write_text(json.dumps(doc, indent=1) + "\n")
    (HERE / "late_probes.json").write_text(json.dumps(curves) + "\n")
    print("wrote", HERE / "registration_right.json", "and late_probes.json")


if __name__ == "__main__":
    main()
