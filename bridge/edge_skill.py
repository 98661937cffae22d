"""A bisected-edge registration (bridge.registration) scored like a panel: each scored left cell's |log2| edge
error for the registered method beside trivial baselines fitted on that registration's own build cells only (their
mean edge, the nearest one), with skill and a bootstrap interval over cells (bridge.skill).

A measured edge is its bisection bracket's midpoint, "no crossing" is "no window". Right cells are listed with
their hits only: the skill scores are defined for left edges (NO_WINDOW sits past the left grid).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from critwin.bridge.registration import NOT_PREDICTED
from critwin.bridge.skill import edge_error, error_skill, nearest_cell
from critwin.errors import ConfigError

BASELINES = ("constant", "nearest")
TEXT = {"constant": "the registration's build cells' mean measured left edge",
        "nearest": "the measured edge of the build cell nearest in (optimizer, gamma / 0.3, log2 lambda / 2)"}


def measured_edge(measured):
    """A scored cell's edge in steps: the bracket's midpoint; None where the bisection found no crossing."""
    if isinstance(measured, (list, tuple)) and len(measured) == 2:
        return float(np.mean(measured))
    if measured == "no crossing":
        return None
    raise ConfigError("measured", measured, "a bisection bracket [lo, hi] or 'no crossing'")


def build_edges(reg: dict, build_cells: pd.DataFrame) -> list[dict]:
    """The registration's own left build cells with their measured edges (rows optimizer, gamma, lambda, edge of
    `build_cells`, e.g. theory3/build_cells.csv); a build cell with no row is left out."""
    for col in ("optimizer", "gamma", "lambda", "edge"):
        if col not in build_cells.columns:
            raise ConfigError("build cells", list(build_cells.columns), "columns optimizer, gamma, lambda, edge")
    rows = {(r.optimizer, float(r.gamma), float(r["lambda"])): r.edge for _, r in build_cells.iterrows()}
    out = []
    for c in reg["cells"]:
        key = (c["optimizer"], float(c["gamma"]), float(c["lambda"]))
        if c.get("build") and c["kind"] == "left" and key in rows:
            edge = rows[key]
            out.append({"optimizer": key[0], "gamma": key[1], "lambda": key[2],
                        "edge": None if pd.isna(edge) else float(edge)})
    return out


def score_edges(frame: pd.DataFrame, build: list[dict], name: str = "method") -> dict:
    """Per-cell errors of the method (frame: bridge.registration.score) and each baseline on the measured,
    non-build left cells, and the method's skill over each baseline."""
    left = frame[(frame["kind"] == "left") & frame["hit"].notna()]
    if not build:
        raise ConfigError("build cells", 0, "at least one of the registration's build cells with a measured edge")
    constant = float(np.mean([b["edge"] if b["edge"] is not None else 1600.0 for b in build]))
    rows = []
    for _, r in left.iterrows():
        m = measured_edge(r["measured"])
        p = None if r["predicted"] == "no window" else r["predicted"]
        near = nearest_cell({"optimizer": r["optimizer"], "gamma": float(r["gamma"]), "lambda": float(r["lambda"])},
                            build)["edge"]
        row = {"cell": r["cell"], "measured": "no window" if m is None else m, name: r["predicted"],
               "constant": round(constant, 1), "nearest": "no window" if near is None else near, "hit": bool(r["hit"])}
        row[f"{name}_err"] = float("nan") if p == NOT_PREDICTED else edge_error(p, m)
        row["constant_err"], row["nearest_err"] = edge_error(constant, m), edge_error(near, m)
        rows.append(row)
    cells = pd.DataFrame(rows)
    skill = pd.DataFrame([{"method": name, "baseline": b, "score": "cell |log2| edge error",
                           **error_skill(cells["cell"], cells[f"{b}_err"], cells[f"{name}_err"])}
                          for b in BASELINES]) if len(cells) else pd.DataFrame()
    return {"cells": cells, "skill": skill, "constant": constant, "build_cells": len(build)}


__all__ = ["BASELINES", "TEXT", "build_edges", "measured_edge", "score_edges"]
