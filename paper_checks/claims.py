"""The checks, one per headline claim of the two papers (ids W1-W12, S1-S6). Values are the papers'."""
from __future__ import annotations

import numpy as np
from critwin.paper_checks.alchemy_checks import STAGE_CHECKS
from critwin.paper_checks.base import EmpiricalCheck, TheoryCheck, final_metric, mean_sd

PAPER_BASE = {"task": "anchor_permutation", "gamma": 0.8, "steps": 20000, "lr": 3e-3}

W1 = EmpiricalCheck(
    "W1", "a single 25%-of-training decay window [5000, 10000) at 4e-3 matches constant 1e-3",
    PAPER_BASE, {"window [5000,10000) 4e-3": {"wd": 4e-3, "wd_window": "5000:10000"},
                 "constant 1e-3": {"wd": 1e-3}},
    {"window [5000,10000) 4e-3": 0.931, "constant 1e-3": 0.912})

W2 = EmpiricalCheck(
    "W2", "the same budget placed early [0, 5000) does nothing (equal to no decay)",
    PAPER_BASE, {"window [0,5000) 4e-3": {"wd": 4e-3, "wd_window": "0:5000"}, "no decay": {}},
    {"window [0,5000) 4e-3": 0.151, "no decay": 0.151})

W3 = EmpiricalCheck(
    "W3", "budget-matched (lambda * width = 20): middle beats early by 5-9x",
    {**PAPER_BASE, "budget": 20.0},
    {f"{w} {p}": {"budget_placement": p, "width": width}
     for w, width in (("narrow", 2000), ("wide", 5000)) for p in ("early", "middle", "late")},
    {"narrow early": 0.103, "narrow middle": 0.847, "narrow late": 0.503,
     "wide early": 0.151, "wide middle": 0.908, "wide late": 0.735})

W4 = EmpiricalCheck(
    "W4", "the window onset is a cliff (width 5000 at 4e-3)",
    {**PAPER_BASE, "wd": 4e-3, "wd_width": 5000},
    {f"onset {s}": {"wd_window_start": s} for s in (0, 100, 400)},
    {"onset 0": 0.151, "onset 100": 0.607, "onset 400": 0.928}, seeds=4)

SCHEDULES = {"none": {}, "early [0,5000)": {"wd": 4e-3, "wd_window": "0:5000"},
             "middle [5000,10000)": {"wd": 4e-3, "wd_window": "5000:10000"},
             "late [15000,20000)": {"wd": 4e-3, "wd_window": "15000:20000"},
             "constant 1e-3": {"wd": 1e-3}}

W5 = EmpiricalCheck(
    "W5", "any 5000-step window starting in [2500, 12500] reaches 0.85-0.93; [15000, 20000) gives 0.735",
    {**PAPER_BASE, "wd": 4e-3, "wd_width": 5000},
    {f"onset {s}": {"wd_window_start": s} for s in (2500, 5000, 7500, 10000, 12500, 15000)},
    {**{f"onset {s}": (0.85, 0.93) for s in (2500, 5000, 7500, 10000, 12500)}, "onset 15000": 0.735})

W6_GAMMAS, W6_ONSETS = (0.5, 0.8, 1.1), (0, 2500, 7500, 12500, 15000)
W6_PLATEAU = {0.5: (0.41, 0.46), 0.8: (0.85, 0.93), 1.1: (0.93, 0.99)}


def _w6_edges(store, cfgs) -> list[dict]:
    """Report-only rows: per gamma, the first and last onset whose seed-mean OOD >= 0.5."""
    from critwin.theory.windows import onset_window
    rows = []
    for g in W6_GAMMAS:
        means = [mean_sd([final_metric(store, c) for (n, *_), c in cfgs.items()
                          if n == f"gamma {g} onset {o}"])["measured"] for o in W6_ONSETS]
        onsets = [cfgs[(f"gamma {g} onset {o}", 0, 0)].wd_windows[0][0] for o in W6_ONSETS]
        first, last = onset_window(np.array(onsets, float), np.array(means), 0.5)
        rows += [{"value": f"gamma {g}: first onset with OOD >= 0.5", "paper": None, "measured": first,
                  "sd": 0.0, "n": 1},
                 {"value": f"gamma {g}: last onset with OOD >= 0.5", "paper": None, "measured": last,
                  "sd": 0.0, "n": 1}]
    return rows


W6 = EmpiricalCheck(
    "W6", "the window's plateau height and position depend on gamma (larger gamma: higher, earlier)",
    {**PAPER_BASE, "wd": 4e-3, "wd_width": 5000},
    {f"gamma {g} onset {o}": {"gamma": g, "wd_window_start": o} for g in W6_GAMMAS for o in W6_ONSETS},
    {f"gamma {g} onset {o}": (W6_PLATEAU[g] if 2500 <= o <= 12500 else None)
     for g in W6_GAMMAS for o in W6_ONSETS},
    extra_rows=_w6_edges,
    notes="Judged: the plateau onsets 2500-12500 against the paper's per-gamma plateau ranges. The paper"
          " gives no numbers for the shift; onsets 0 and 15000 and the window edges are reported only.")

W10_LAMBDAS = (0.0, 3e-4, 1e-3, 3e-3, 1e-2)
W10_CONDENSATION = dict(zip(W10_LAMBDAS, (42.4, 38.2, 32.5, 25.6, 21.6)))


def _condensation_at(store, cfg, fraction: float = 0.2) -> float:
    """Condensation at the evaluation nearest fraction * steps."""
    run = store.complete(cfg.run_id())
    if run is None:
        return float("nan")
    c = run.metrics[run.metrics.metric == "condensation"]
    return float(c.value.to_numpy()[np.argmin(np.abs(c.step.to_numpy() - fraction * cfg.steps))])


def _w10_rows(store, cfgs) -> list[dict]:
    from scipy.stats import spearmanr
    rows, cs, oods = [], [], []
    for lam in W10_LAMBDAS:
        keys = [k for k in cfgs if k[0] == f"lambda {lam:g}"]
        c = np.array([_condensation_at(store, cfgs[k]) for k in keys])
        cs += c.tolist()
        oods += [final_metric(store, cfgs[k]) for k in keys]
        rows.append({"value": f"C(0.2T) lambda {lam:g}", "paper": W10_CONDENSATION[lam], **mean_sd(c),
                     "tolerance": 0.1 * W10_CONDENSATION[lam]})
    ok = ~(np.isnan(cs) | np.isnan(oods))
    rho = float(spearmanr(np.array(cs)[ok], np.array(oods)[ok]).statistic) if ok.sum() > 2 else float("nan")
    rows.append({"value": "Spearman rho(C(0.2T), final OOD) over runs", "paper": 0.25, "measured": rho,
                 "sd": 0.0, "n": int(ok.sum()), "tolerance": 0.25})
    return rows


W10 = EmpiricalCheck(
    "W10", "condensation at 0.2T is a weak predictor of the final OOD accuracy (constant decay)",
    PAPER_BASE, {f"lambda {lam:g}": {"wd": lam} for lam in W10_LAMBDAS},
    {f"lambda {lam:g}": p for lam, p in zip(W10_LAMBDAS, (0.137, 0.681, 0.925, 0.281, 0.105))},
    extra_rows=_w10_rows,
    notes="Tolerances fixed before running: OOD 0.1, condensation 10% of the paper's value, Spearman rho"
          " 0.25 around the paper's 0.25 (|rho| <= 0.5: a weak predictor). C = mean participation ratio"
          " (sum s)^2 / sum s^2 of W_V over layers, at the evaluation nearest 0.2T.")

W7 = EmpiricalCheck(
    "W7", "the reasoning basin shrinks at small init (window [5000, 10000) at 4e-3, 12 seeds)",
    {**PAPER_BASE, "wd": 4e-3, "wd_window": "5000:10000"},
    {f"gamma {g}": {"gamma": g} for g in (0.5, 0.7, 0.9, 1.1)},
    {"gamma 0.5": 0.642, "gamma 0.7": 0.854, "gamma 0.9": 0.838, "gamma 1.1": 0.966}, seeds=12,
    notes="Compares mean OOD per gamma; the paper's seed counts with OOD > 0.5 are 8, 12, 11, 12 of 12.")

W8 = EmpiricalCheck(
    "W8", "with 4 layers, middle windows help and constant decay hurts",
    {**PAPER_BASE, "layers": 4}, {k: v for k, v in SCHEDULES.items()},
    {"none": 0.11, "early [0,5000)": 0.10, "middle [5000,10000)": (0.46, 0.54),
     "late [15000,20000)": 0.43, "constant 1e-3": 0.15},
    notes="Window placement for 'early/mid/late' is not stated in the paper; the W1/W2 windows are used.")

W9 = EmpiricalCheck(
    "W9", "SGD with momentum shows the window more clearly than AdamW (SGD lr 0.1, momentum 0.9)",
    {**PAPER_BASE, "optimizer": "sgd", "lr": 0.1, "momentum": 0.9}, SCHEDULES,
    {"none": 0.11, "early [0,5000)": 0.32, "middle [5000,10000)": 0.99, "late [15000,20000)": 0.96,
     "constant 1e-3": 0.52},
    notes="The AdamW half of the claim (0.22/0.12/0.94/0.80/0.77) is W1/W2/W5's protocol.")


W11_LAMBDAS = (0.01, 0.1, 0.3, 1.0, 3.0)
W11_BASE = {"task": "modarith", "d": 128, "heads": 4, "layers": 2, "steps": 10000, "lr": 1e-3,
            "batch_size": 512, "eval_every": 50}


def _w11_rows(store, cfgs) -> list[dict]:
    """Per lambda, does constant decay grok no later than the window (mean over runs)?"""
    faster = []
    for lam in W11_LAMBDAS:
        c, w = (np.nanmean([final_metric(store, cfg, "test_reach_step") for (n, *_), cfg in cfgs.items()
                            if n == f"{kind} {lam:g}"]) for kind in ("constant", "window"))
        faster.append(float(c <= w) if np.isfinite(c) and np.isfinite(w) else np.nan)
    ok = [f for f in faster if np.isfinite(f)]
    return [{"value": "lambdas where constant groks no later than the window", "paper": len(W11_LAMBDAS),
             "measured": float(sum(ok)) if ok else float("nan"), "sd": 0.0, "n": len(ok), "tolerance": 0,
             "unit": "lambdas (count)"}]


W11 = EmpiricalCheck(
    "W11", "grokking has no window: constant decay groks faster than a window [0.1T, 0.6T)",
    W11_BASE,
    {f"{kind} {lam:g}": ({"wd": lam} if kind == "constant" else {"wd": lam, "wd_window": "1000:6000"})
     for lam in W11_LAMBDAS for kind in ("constant", "window")},
    {f"{kind} {lam:g}": ((700 if kind == "constant" else 3500) if lam == 0.01 else None)
     for lam in W11_LAMBDAS for kind in ("constant", "window")},
    metric="test_reach_step", extra_rows=_w11_rows, row_tolerance={"constant 0.01": 350, "window 0.01": 1750},
    notes="Metric: the grokking step (first evaluation with test accuracy >= 0.95; a run that never groks"
          " counts as T). Judged: lambda* = 0.01 (constant ~700, window ~3500 steps, tolerance 350 and 1750"
          " steps) and the count of lambdas where constant decay groks no later than the window (paper: all"
          " 5). Assumed where the paper is silent: T = 10,000 steps, lr 1e-3, batch 512, 4 heads, decoupled"
          " decay on the matrices; task instance = the train/test split seed.")


W12_BASE = {"task": "scan_add_prim_jump", "d": 32, "gamma": 0.8, "lr": 1e-4, "steps": 12000, "batch_size": 128,
            "eval_every": 1000, "eval_max": 1000}
W12 = EmpiricalCheck(
    "W12", "SCAN add_prim_jump is unreachable: test sequence accuracy 0 under every decay schedule",
    W12_BASE, {"no decay": {}, "early [0,3000) 4e-3": {"wd": 4e-3, "wd_window": "0:3000"},
               "middle [3000,6000) 4e-3": {"wd": 4e-3, "wd_window": "3000:6000"}, "constant 1e-3": {"wd": 1e-3}},
    {"no decay": 0.0, "early [0,3000) 4e-3": 0.0, "middle [3000,6000) 4e-3": 0.0, "constant 1e-3": 0.0},
    metric="test_seq_acc", task_seeds=1,
    notes="Metric: exact-match greedy decoding on 1,000 fixed test commands (eval_max). Assumed where the paper"
          " is silent: batch 128, 2 heads, windows of a quarter of training at 4e-3 and constant 1e-3 (W1's"
          " values), decoupled decay on the matrices; one task instance (the seed only orders the examples).")


def _t1():
    from critwin.theory import StylisedSetting, derive, predict
    d = derive()
    (rec,) = predict(StylisedSetting(), 0.8, "recipe")
    (red,) = predict(StylisedSetting(targets="permutation"), 0.8, "reduced")
    rows = [
        {"value": "gamma exponent of mu_m", "paper": 0, "measured": d.gamma_exponent_m},
        {"value": "gamma exponent of mu_r", "paper": 2, "measured": d.gamma_exponent_r},
        {"value": "recipe t1 (steps)", "paper": "200-500", "measured": rec["t1_steps"]},
        {"value": "recipe t2 (steps)", "paper": "12000-15000", "measured": rec["t2_steps"]},
        {"value": "derived t2, bilinear law (steps)", "paper": "12000-15000", "measured": red["t2_steps"]},
    ]
    ok = (d.gamma_exponent_m, d.gamma_exponent_r) == (0, 2) and 200 <= rec["t1_steps"] <= 500 \
        and 12000 <= rec["t2_steps"] <= 15000
    return rows, "reproduced" if ok else "not reproduced"


T1 = TheoryCheck(
    "T1", "rates mu_m = Theta(1), mu_r = Theta(gamma^2); window [t1, t2] ~ [200-500, 12-15k] steps"
    " for d = 64, gamma = 0.8, eta = 3e-3", _t1,
    "Rule: reproduced iff the exponents are (0, 2) and the recipe's t1 and t2 fall in the claimed"
    " ranges (sigma_e = 1, orthonormal keys, delta = 1/2).")

CHECKS = {c.id: c for c in (T1, W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11, W12, *STAGE_CHECKS)}
CLAIM_IDS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12", "T1",
             "S1", "S2", "S3", "S4", "S5", "S6")
