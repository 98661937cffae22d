"""Where do the reduced equations and the full flow agree, and by how much?"""
from __future__ import annotations

import numpy as np
from critwin.theory.setting import StylisedSetting
from critwin.theory.windows import simulate

from critwin.schedules import Schedule


def reduced_vs_full(s: StylisedSetting, schedule: Schedule, law: str = "bilinear",
                    eval_steps=None, seed: int = 0, split_step: float | None = None) -> dict:
    """x and rho from both engines on one schedule; max |difference| before and after
    `split_step` (default: the first decay edge, or T/10 without decay)."""
    if eval_steps is None:
        eval_steps = np.linspace(0, schedule.total, 101)
    steps, red = simulate(s, schedule, engine="reduced", law=law, eval_steps=eval_steps)
    _, full = simulate(s, schedule, engine="full", seed=seed, eval_steps=eval_steps)
    if split_step is None:
        split_step = schedule.windows[0][0] if schedule.windows else schedule.total / 10
    early = steps <= split_step
    out = {"steps": steps, "split_step": float(split_step), "law": law}
    for k in ("x", "rho", "reasoning_fraction"):
        diff = np.abs(red[k][:, 0] - full[k][:, 0])
        out[f"{k}_reduced"], out[f"{k}_full"] = red[k][:, 0], full[k][:, 0]
        out[f"{k}_maxdiff_early"] = float(diff[early].max()) if early.any() else float("nan")
        out[f"{k}_maxdiff_late"] = float(diff[~early].max()) if (~early).any() else float("nan")
    return out
