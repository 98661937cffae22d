"""The composition model's predicted left edges from the forces measured in no-decay runs (force_probe.json).

The model's two conditions for a penalty switched on at step t to end in composition (README, "The forces"):
- survival: the reasoning path's growth force per unit size beats the penalty, F_attn(t) >= lambda
  (below it Adam's sign-like step, or GD's net force, shrinks the path toward its random init);
- overtaking: reasoning's force per unit size beats memorisation's, F_attn(t) >= F_mlp(t), i.e. q > q*
  (else memorisation settles at eps = lambda / s_m and the penalty then shrinks reasoning).
The predicted left edge is the first probed step where both hold, in the mean over the 3 task instances;
"none" if no probed step does (then no window is predicted to open within the probe's horizon).
No constant is fitted: lambda is the penalty's own value, the forces are read off the no-decay runs.

Run: python3 paper_checks/reports/theory2/predict_edges.py [force_probe.json] (prints a Markdown table and JSON)
"""
import json
import sys
from pathlib import Path

import numpy as np

GAMMAS, LAMBDAS, OPTIMIZERS = (0.5, 0.8, 1.1), (4e-3, 1.6e-2), ("adamw", "sgd")


def mean_curves(probe: dict, opt: str, gamma: float) -> dict:
    runs = [v for k, v in probe.items() if k.startswith(f"{opt} gamma {gamma} task")]
    out = {"step": np.asarray(runs[0]["step"])}
    for key in ("radial_attn", "radial_mlp", "kappa_attn", "kappa_mlp", "train_acc"):
        out[key] = np.mean([r[key] for r in runs], axis=0)
    return out


def left_edge(curves: dict, lam: float):
    """First probed step where F_attn >= lambda and F_attn >= F_mlp; None when no probed step qualifies."""
    ok = (curves["radial_attn"] >= lam) & (curves["radial_attn"] >= curves["radial_mlp"])
    return int(curves["step"][np.argmax(ok)]) if ok.any() else None


def predictions(probe: dict) -> list[dict]:
    rows = []
    for opt in OPTIMIZERS:
        for g in GAMMAS:
            c = mean_curves(probe, opt, g)
            for lam in LAMBDAS:
                rows.append({"optimizer": opt, "gamma": g, "lambda": lam, "left_edge": left_edge(c, lam),
                             "probe_horizon": int(c["step"][-1])})
    return rows


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "force_probe.json"
    rows = predictions(json.loads(path.read_text()))
    print("| optimizer | gamma | lambda | predicted left edge (steps) |\n|---|---|---|---|")
    for r in rows:
        e = r["left_edge"]
        print(f"| {r['optimizer']} | {r['gamma']} | {r['lambda']:g} | "
              f"{e if e is not None else 'none within ' + str(r['probe_horizon'])} |")
    print(json.dumps(rows))
