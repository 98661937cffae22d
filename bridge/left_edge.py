"""The L2 window's left edge, predicted from Adam's gain in the first steps.

An L2 penalty lambda switched on at step t shrinks the weights through Adam by about
lambda * gain(t) per step, where gain = |lr theta / (sqrt(v_hat) + eps)| / |theta| is read from
the run without decay (logged as `adam_gain`). The gain peaks on the initial plateau, while the
cross-entropy gradients are still small, and falls once learning starts. The rule: a window
opens at the first step after that early peak (the maximum before the training accuracy
reaches 0.5) at which lambda * gain <= s*; a penalty that arrives
earlier crushes the initial weights before learning starts. s* is fitted at one gamma from its
observed edge and the rule is scored on the others. The gain curves come from short no-decay
probe runs logged densely (they train like the first steps of the 20k-step runs: constant lr).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from critwin.bridge.observed import observed_window, onset_outcomes

from critwin.errors import ConfigError

PROBE_STEPS, PROBE_EVERY = 600, 10
LEARNING = 0.5     # training accuracy that ends the initial plateau
# config columns an onset-sweep run must share with the probes to be compared with them
SHARED = ("task", "optimizer", "lr", "momentum", "batch_size", "amsgrad", "lr_schedule", "d", "heads", "layers",
          "mlp_ratio", "init", "norm", "positions", "activation", "head_bias")


def probe_configs(gammas, task_seeds: int, seeds: int, steps: int = PROBE_STEPS, every: int = PROBE_EVERY,
                  max_runs: int | None = None, **base):
    """No-decay runs of `steps` logged every `every` steps, one per gamma x task instance x seed; more
    than `max_runs` of them (None: any number) is refused before one is built."""
    from critwin.empirical.sweep import config_from_flat
    from critwin.empirical.sweep.spec import check_runs
    if steps < 2 * every:
        raise ConfigError("probe_steps", steps, f"at least two evaluations (>= {2 * every})")
    check_runs(len(gammas) * task_seeds * seeds, max_runs,
               f"{len(gammas)} gammas x {task_seeds:,} task instances x {seeds:,} seeds")
    return [config_from_flat({**base, "gamma": g, "task_seed": ts, "seed": s, "steps": steps, "eval_every": every})
            for g in gammas for ts in range(task_seeds) for s in range(seeds)]


def gain_curves(runs: list) -> pd.DataFrame:
    """Rows gamma, step, gain, train_acc (means over the runs at that gamma), runs: Adam's
    logged gain and the training accuracy, which marks where the initial plateau ends."""
    rows = []
    for run in runs:
        m = run.metrics
        gain = m[(m.split == "optim") & (m.metric == "adam_gain")].set_index("step").value
        acc = m[(m.split == "train") & (m.metric == "acc")].set_index("step").value
        both = pd.concat({"gain": gain, "train_acc": acc}, axis=1).dropna().reset_index()
        rows.append(both.assign(gamma=run.config["model"]["gamma"], run=run.run_id))
    if not rows:
        return pd.DataFrame(columns=["gamma", "step", "gain", "train_acc", "runs"])
    return (pd.concat(rows).groupby(["gamma", "step"])
            .agg(gain=("gain", "mean"), train_acc=("train_acc", "mean"), runs=("run", "nunique")).reset_index())


def plateau_end(steps, train_acc, level: float = LEARNING) -> float:
    """First logged step with training accuracy >= level: the initial plateau is over (the
    gain rises again later, as the training set is fitted; that second rise is not the edge)."""
    steps, train_acc = np.asarray(steps, float), np.asarray(train_acc, float)
    hit = np.nonzero(train_acc >= level)[0]
    return float(steps[hit[0]]) if len(hit) else float(steps[-1])


def early_peak(steps, shrink, end: float | None = None) -> int:
    """Index of the largest shrink at or before `end` (the plateau's end; None: the whole curve)."""
    steps, shrink = np.asarray(steps, float), np.asarray(shrink, float)
    if not len(steps) or not np.all(np.diff(steps) > 0):
        raise ConfigError("steps", list(steps)[:5], "increasing logged steps")
    upto = len(steps) if end is None else max(1, int(np.searchsorted(steps, end, side="right")))
    return int(np.nanargmax(shrink[:upto]))


def predicted_edge(steps, shrink, s_star: float, end: float | None = None) -> float:
    """First step at or after the early peak of `shrink` (its maximum up to `end`) where it is
    at or below s_star; 0 when that peak stays below s_star; inf when it never falls to it."""
    steps, shrink = np.asarray(steps, float), np.asarray(shrink, float)
    peak = early_peak(steps, shrink, end)
    if shrink[peak] < s_star:
        return 0.0
    below = np.nonzero(shrink[peak:] <= s_star)[0]
    return float(steps[peak + below[0]]) if len(below) else float("inf")


def fit_s_star(steps, shrink, edge: float, end: float | None = None) -> float:
    """The threshold whose predicted edge is `edge`: the shrink at `edge` on the falling side
    of the early peak (linear interpolation between logged steps)."""
    steps, shrink = np.asarray(steps, float), np.asarray(shrink, float)
    peak = early_peak(steps, shrink, end)
    if not steps[peak] <= edge <= steps[-1]:
        raise ConfigError("fit edge", edge, f"a step between the gain's peak ({steps[peak]:g}) and the probe's end"
                                            f" ({steps[-1]:g})")
    return float(np.interp(edge, steps[peak:], shrink[peak:]))


def observed_edges(summaries: pd.DataFrame, reading: str, width: float, threshold: float, base: dict) -> pd.DataFrame:
    """First observed window edge per (gamma, wd) of the onset sweeps sharing the probes' setting."""
    if summaries.empty:
        return pd.DataFrame()
    s = summaries[summaries.reading == reading]
    for k in SHARED:
        if k in s.columns and k in base:
            s = s[s[k] == base[k]]
    if "freeze_second_moment" in s.columns:
        s = s[s.freeze_second_moment.isna()]
    table = onset_outcomes(s)
    table = table[np.isclose(table.wd_width, width)]
    rows = []
    for (gamma, wd), g in table.groupby(["gamma", "wd_value"]):
        obs = observed_window(g, threshold)
        lo, hi = obs["first_bracket"]
        rows.append({"gamma": float(gamma), "wd": float(wd), "onsets": len(obs["onsets"]), "runs": obs["seeds"],
                     "observed_first": obs["first"], "bracket_lo": lo, "bracket_hi": hi})
    return pd.DataFrame(rows)


def left_edge_table(curves: pd.DataFrame, observed: pd.DataFrame, wds, fit_gamma: float, fit_wd: float,
                    fit_edge: float | None = None) -> tuple[float, pd.DataFrame]:
    """(s*, rows): s* fitted at (fit_gamma, fit_wd) from fit_edge (default: the midpoint of that
    cell's observed bracket), then the predicted edge of every gamma x wd with its observed bracket."""
    fit = curves[np.isclose(curves.gamma, fit_gamma)]
    if fit.empty:
        raise ConfigError("fit_gamma", fit_gamma, "a gamma with probe runs: "
                          + ", ".join(f"{g:g}" for g in sorted(curves.gamma.unique())))
    if fit_edge is None:
        cell = observed[np.isclose(observed.gamma, fit_gamma) & np.isclose(observed.wd, fit_wd)] \
            if not observed.empty else observed
        if cell.empty or not np.isfinite(cell.bracket_lo.iloc[0]) or not np.isfinite(cell.bracket_hi.iloc[0]):
            raise ConfigError("fit_edge", None, f"an edge to fit at gamma {fit_gamma:g}, wd {fit_wd:g}: that cell"
                                                " has no bracketed left edge in the store (give --fit-edge STEP)")
        fit_edge = float((cell.bracket_lo.iloc[0] + cell.bracket_hi.iloc[0]) / 2)
    s_star = fit_s_star(fit.step, fit_wd * fit.gain, fit_edge, plateau_end(fit.step, fit.train_acc))
    obs = {(round(r.gamma, 6), round(r.wd, 9)): r for r in observed.itertuples()} if not observed.empty else {}
    cells = sorted({(round(g, 6), round(float(w), 9)) for g in curves.gamma.unique() for w in wds} | set(obs))
    rows = []
    for gamma, wd in cells:
        c = curves[np.isclose(curves.gamma, gamma)]
        if c.empty:
            continue
        shrink = wd * c.gain.to_numpy()
        end = plateau_end(c.step, c.train_acc)
        peak = early_peak(c.step, shrink, end)
        pred = predicted_edge(c.step, shrink, s_star, end)
        o = obs.get((gamma, wd))
        lo, hi = (o.bracket_lo, o.bracket_hi) if o is not None else (np.nan, np.nan)
        inside = bool(lo < pred <= hi) if np.isfinite(hi) else (bool(pred > lo) if np.isfinite(lo) else None)
        if o is not None and not np.isfinite(o.observed_first):
            inside = None
        rows.append({"gamma": gamma, "wd": wd, "plateau_end": end, "peak_shrink": float(shrink[peak]),
                     "peak_step": float(c.step.to_numpy()[peak]), "predicted_edge": pred,
                     "observed_first": o.observed_first if o is not None else np.nan, "bracket_lo": lo,
                     "bracket_hi": hi, "onsets": o.onsets if o is not None else 0,
                     "runs": o.runs if o is not None else 0, "in_bracket": inside,
                     "fitted": bool(np.isclose(gamma, fit_gamma) and np.isclose(wd, fit_wd))})
    return s_star, pd.DataFrame(rows)
