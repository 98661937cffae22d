"""Registered edge predictions and their score against edges measured afterwards.

A registration is a JSON file written (and committed) before any of its edges is bisected: the date,
the model and where its inputs come from, the measuring protocol, and one row per cell (left or right
edge, optimizer, gamma, lambda, window width) with the predicted edge in steps, or null where the model
says no window opens. Measured edges are `critwin sweep edge --json` outputs, one file per cell, named
by the cell's id. A hit is a predicted edge inside the measured edge's bootstrap interval; a predicted
"no window" (null) is a hit when the bisection found no crossing. A cell the model says nothing about
("not predicted") is registered too and counts as a miss once measured. Cells marked `build` shaped the
model and are listed but never scored.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from critwin.errors import ConfigError
from critwin.vocabulary import RUN_OPTIMIZERS

KINDS = ("left", "right")
OPTIMIZERS = RUN_OPTIMIZERS
CELL_KEYS = ("kind", "optimizer", "gamma", "lambda", "width")
NOT_PREDICTED = "not predicted"


def cell_id(cell: dict) -> str:
    """A cell's file-name id, e.g. left_adamw_g0.8_l0.016_w5000."""
    return f"{cell['kind']}_{cell['optimizer']}_g{float(cell['gamma']):g}_l{float(cell['lambda']):g}_w{int(cell['width'])}"


def validate(reg: dict) -> dict:
    """Check a registration's shape at the boundary: one-line errors name the field and what is allowed."""
    for key in ("registered", "model", "cells"):
        if key not in reg:
            raise ConfigError(key, None, "a registration needs 'registered' (ISO date), 'model' and 'cells'")
    seen = set()
    for cell in reg["cells"]:
        for key in CELL_KEYS:
            if key not in cell:
                raise ConfigError(f"cells[].{key}", None, "every cell has " + ", ".join(CELL_KEYS))
        if cell["kind"] not in KINDS:
            raise ConfigError("cells[].kind", cell["kind"], "one of " + ", ".join(KINDS))
        if cell["optimizer"] not in OPTIMIZERS:
            raise ConfigError("cells[].optimizer", cell["optimizer"], "one of " + ", ".join(OPTIMIZERS))
        pred = cell.get("predicted")
        if pred is not None and pred != NOT_PREDICTED and not (
                isinstance(pred, (int, float)) and not isinstance(pred, bool) and math.isfinite(pred) and pred >= 0):
            raise ConfigError("cells[].predicted", pred, f"a step >= 0, null for 'no window', or '{NOT_PREDICTED}'")
        cid = cell_id(cell)
        if cid in seen:
            raise ConfigError("cells", cid, "each cell once")
        seen.add(cid)
    return reg


def load_registration(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ConfigError("registration", str(path), "an existing JSON file")
    return validate(json.loads(path.read_text()))


def verdict(predicted, measured: dict | None) -> tuple[str, bool | None]:
    """('hit' | 'miss' | 'not measured', hit?) for one cell."""
    if measured is None:
        return "not measured", None
    edge = measured.get("edge")
    if predicted == NOT_PREDICTED:
        return NOT_PREDICTED, False
    if predicted is None:
        return ("hit", True) if edge is None else ("miss", False)
    if edge is None:
        return "miss", False
    lo, hi = measured.get("edge_ci") or [float("nan"), float("nan")]
    if not (math.isfinite(lo) and math.isfinite(hi)):       # no resample crossed: the bracket is all we have
        lo, hi = edge
    ok = lo <= float(predicted) <= hi
    return ("hit" if ok else "miss"), ok


def score(reg: dict, measured_dir) -> pd.DataFrame:
    """One row per cell: prediction, measured bracket and interval, verdict; build cells are not scored."""
    measured_dir = Path(measured_dir)
    rows = []
    for cell in reg["cells"]:
        cid = cell_id(cell)
        path = measured_dir / f"{cid}.json"
        measured = json.loads(path.read_text()) if path.is_file() else None
        predicted = cell.get("predicted", NOT_PREDICTED)
        text, hit = verdict(predicted, measured)
        if cell.get("build"):
            text, hit = "build (not scored)", None
        rows.append({"cell": cid, **{k: cell[k] for k in CELL_KEYS},
                     "predicted": "no window" if predicted is None else predicted,
                     "measured": None if measured is None else (measured.get("edge") or "no crossing"),
                     "interval": None if measured is None else measured.get("edge_ci"),
                     "runs": None if measured is None else measured.get("runs"),
                     "verdict": text, "hit": hit})
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> dict:
    """Hits over the scored (measured, non-build) cells."""
    scored = frame[frame["hit"].notna()]
    out = {"hits": int(scored["hit"].sum()), "scored": int(len(scored)), "cells": int(len(frame)),
           "not_measured": int((frame["verdict"] == "not measured").sum())}
    for m in [c[:-4] for c in frame.columns if c.endswith("_hit") and c != "hit"]:      # older methods' tallies
            out[f"{m}_hits"] = int(frame.loc[scored.index, f"{m}_hit"].fillna(False).astype(bool).sum())
    return out


__all__ = ["CELL_KEYS", "KINDS", "NOT_PREDICTED", "OPTIMIZERS", "cell_id", "load_registration", "score", "summary", "validate",
           "verdict"]
