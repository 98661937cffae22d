"""Can the composition model be calibrated from no-decay measurements alone? (run before any
registration; it prints JSON, committed as calibration_check.json)

Inputs, every one a no-decay measurement or the architecture (never an edge):
- memorisation half time per gamma: first logged step with train accuracy >= 0.5 in the 9 no-decay
  probes of the left-edge report (600 steps, 3 task instances x seed 0 per gamma), and their
  step-0 norms of the MLP and attention parameters (`PROBE_STORE`, remade by the command in
  ../left_edge/left_edge_rescored.txt);
- the reasoning share of the 20k-step no-decay runs, (OOD - 1/16) / (1 - 1/16), OOD from
  ../phase_l2_gamma/README.md;
- the paper-size anchor model's parameter counts.

Two readings of a path's initial size are tried: `group norm` (each factor carries its group's
norm, spread over its coordinates) and `aligned` (each factor starts at the size of a random
overlap with the task direction, gamma / sqrt(d), one coordinate). A calibration is consistent if
one s_m explains the three half times and one s_r the three no-decay shares.

Run: python3 paper_checks/reports/theory2/calibration_check.py PROBE_STORE > paper_checks/reports/theory2/calibration_check.json
"""
import json
import sys
from dataclasses import replace

import numpy as np
from critwin.theory.composition import (
    CompositionModel,
    calibrate_s_m,
    reasoning_fraction,
    simulate,
)

GAMMAS, D = (0.5, 0.8, 1.1), 64
NO_DECAY_OOD = {0.5: 0.468, 0.8: 0.140, 1.1: 0.107}
CHANCE, TOTAL, LR, BETAS = 1 / 16, 20000, 3e-3, (0.9, 0.98)
N_MLP, N_ATTN = 66176, 33280
S_R_GRID = (1e-6, 1e-4, 1e-2, 1.0, 1e2)


def probe_inputs(store_path: str) -> dict:
    from critwin.empirical import RunStore
    store, out = RunStore(store_path), {}
    for rid in store.scan()[0]:
        run = store.load(rid)
        m, g = run.metrics, run.config["model"]["gamma"]
        acc = m[(m.split == "train") & (m.metric == "acc")].set_index("step").value
        n0 = m[(m.step == 0) & (m.split == "model")].set_index("metric").value
        out.setdefault(g, []).append((float(acc[acc >= 0.5].index.min()), n0["norm_mlp"], n0["norm_attn"]))
    return {g: dict(zip(("t_half", "norm_mlp", "norm_attn"), np.mean(v, axis=0).tolist())) for g, v in out.items()}


def readings(inp: dict) -> dict:
    return {"group norm": {g: CompositionModel(1.0, 1.0, inp[g]["norm_mlp"] / np.sqrt(2), inp[g]["norm_attn"] / np.sqrt(3),
                                               N_MLP // 2, N_ATTN // 3) for g in GAMMAS},
            "aligned": {g: CompositionModel(1.0, 1.0, g / np.sqrt(D), g / np.sqrt(D)) for g in GAMMAS}}


def main(store_path: str) -> dict:
    inp = probe_inputs(store_path)
    share = {g: (NO_DECAY_OOD[g] - CHANCE) / (1 - CHANCE) for g in GAMMAS}
    out = {"inputs": {str(g): inp[g] for g in GAMMAS}, "no_decay_share": {str(g): share[g] for g in GAMMAS}}
    for name, base in readings(inp).items():
        s_m = {g: calibrate_s_m(base[g], inp[g]["t_half"], LR, "adamw", betas=BETAS) for g in GAMMAS}
        common = float(np.exp(np.mean(np.log(list(s_m.values())))))
        reach = {str(g): {f"{s:g}": float(reasoning_fraction(simulate(replace(base[g], s_m=common, s_r=s),
                                                                       np.zeros((1, TOTAL)), LR, "adamw",
                                                                       betas=BETAS, every=TOTAL))[0])
                          for s in S_R_GRID} for g in GAMMAS}
        out[name] = {"s_m_per_gamma": {str(g): v for g, v in s_m.items()},
                     "s_m_spread": max(s_m.values()) / min(s_m.values()), "s_m_common": common,
                     "no_decay_share_by_s_r": reach}
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), indent=1))
