"""The checks, one per claim (ids as in specs/claims.md). Values are the papers'."""
from __future__ import annotations

from .base import EmpiricalCheck, TheoryCheck

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


def _t1():
    from ..theory import StylisedSetting, derive, predict
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

CHECKS = {c.id: c for c in (T1, W1, W2, W3, W4)}
CLAIM_IDS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12", "T1",
             "S1", "S2", "S3", "S4", "S5", "S6")
