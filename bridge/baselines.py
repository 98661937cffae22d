"""Older methods scored on a registration's measured cells: the stylised model's window at each cell's run
config, turned into the cell's edge and judged by the registration's own rule."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from critwin import theory as th
from critwin.bridge.compare import config_setting
from critwin.bridge.registration import cell_id, verdict
from critwin.errors import ConfigError

BASELINES = ("recipe", "reduced", "adamw")     # the stylised model's methods with an L2 reading (`full` is decoupled only)


def baseline_edge(kind: str, method: str, cfg, width: float, wd: float, threshold: float):
    """An older method's edge for one cell: the left (t1) or right (t2) edge, in steps, of the stylised model's
    window at the cell's run config `cfg` (a TrainConfig); None (no window) where it has none or an inverted one.
    A window that never closes has its right edge at the last onset, total - width: it predicts composing there,
    so it is not a 'no window' prediction."""
    if method not in BASELINES:
        raise ConfigError("baselines", method, "any of " + ", ".join(BASELINES))
    s = config_setting(cfg, targets="permutation")
    (row,) = th.predict(s, s.gamma, method, width=width, wd=wd, total=cfg.steps, threshold=threshold,
                        decay_form=cfg.decay_form)
    t1, t2 = float(row["t1_steps"]), float(row["t2_steps"])
    t2 = t2 if math.isfinite(t2) else math.inf      # a window that never closes
    if not math.isfinite(t1) or t2 < t1:            # no window, or an inverted one (reduced flags those)
        return None
    return t1 if kind == "left" else min(t2, cfg.steps - width)


def score_baselines(frame: pd.DataFrame, reg: dict, measured_dir, configs: dict, methods=BASELINES) -> pd.DataFrame:
    """The scored frame with each older method's prediction and verdict beside the registered one, on the
    same measured cells by the same rule. configs: cell id -> {cfg (a TrainConfig), width, wd, threshold} of the
    cell's own measuring command; build and unmeasured cells get none."""
    measured_dir = Path(measured_dir)
    out = frame.copy()
    for m in methods:
        preds, texts, hits = [], [], []
        for cell in reg["cells"]:
            cid = cell_id(cell)
            path = measured_dir / f"{cid}.json"
            if cell.get("build") or not path.is_file() or cid not in configs:
                preds.append(None), texts.append(""), hits.append(None)
                continue
            pred = baseline_edge(cell["kind"], m, **configs[cid])
            text, hit = verdict(pred, json.loads(path.read_text()))
            preds.append("no window" if pred is None else round(pred, 1)), texts.append(text), hits.append(hit)
        out[m], out[f"{m}_verdict"], out[f"{m}_hit"] = preds, texts, hits
    return out


__all__ = ["BASELINES", "baseline_edge", "score_baselines"]
