"""Does the composition model have a window when each gamma is calibrated on its own no-decay runs?
(run before any registration; prints JSON, committed as per_gamma_check.json)

Inputs: calibration_check.json's no-decay measurements per gamma (the memorisation half time and the
20k-step no-decay reasoning share), the `aligned` reading of a factor's initial size (gamma / sqrt(d);
the reading whose share rises monotonically with s_r). s_m is fitted to the half time and s_r to the
share, per gamma, under AdamW (lr 3e-3, betas 0.9/0.98). Then an onset sweep of a 5000-step L2 window
at lambda 4e-3 and 1.6e-2, 20k steps, reports the final reasoning fraction per onset and the edges.

Run: python3 paper_checks/reports/theory2/per_gamma_check.py > paper_checks/reports/theory2/per_gamma_check.json
"""
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from critwin.theory.composition import (
    CompositionModel,
    calibrate_s_m,
    calibrate_s_r,
    edges,
)

D, LR, BETAS, TOTAL, WIDTH = 64, 3e-3, (0.9, 0.98), 20000, 5000
ONSETS = [0, 50, 100, 150, 200, 250, 300, 400, 500, 1000, 2000, 5000, 10000, 14000]


def main() -> dict:
    cal = json.loads((Path(__file__).parent / "calibration_check.json").read_text())
    out = {}
    for g in (0.5, 0.8, 1.1):
        base = CompositionModel(1.0, 1.0, g / np.sqrt(D), g / np.sqrt(D))
        s_m = calibrate_s_m(base, cal["inputs"][str(g)]["t_half"], LR, "adam", betas=BETAS)
        s_r = calibrate_s_r(replace(base, s_m=s_m), cal["no_decay_share"][str(g)], TOTAL, LR, "adam", betas=BETAS)
        model = replace(base, s_m=s_m, s_r=s_r)
        q_max = s_r ** (-1 / 3)          # the size at which reasoning alone explains everything
        row = {"s_m": s_m, "s_r": s_r, "q0": model.q0, "q_star": model.q_star, "q_at_full_reasoning": q_max}
        for lam in (4e-3, 1.6e-2):
            e = edges(model, ONSETS, WIDTH, lam, TOTAL, LR, "adam", betas=BETAS)
            row[f"lambda {lam:g}"] = {"left": e["left"], "right": e["right"],
                                      "fraction_by_onset": dict(zip(map(int, ONSETS), np.round(e["fraction"], 4).tolist()))}
        out[str(g)] = row
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
