"""Observed windows and timescales, read from runs in the store."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from critwin.theory.optimizers import crossing_step
from critwin.theory.windows import onset_window

from critwin.errors import ConfigError


def onset_outcomes(summaries: pd.DataFrame, metric: str = "ood_acc") -> pd.DataFrame:
    """Single-window runs as (reading, optimizer, gamma, wd_width, wd_value, onset, task_seed, seed, value) rows."""
    col = f"final_{metric}"
    if col not in summaries.columns:
        raise ConfigError("metric", metric, "a final metric of the runs")
    df = summaries[(summaries["status"] == "complete") & summaries["wd_window_start"].notna()]
    out = df[["reading", "optimizer", "gamma", "wd_width", "wd_value", "wd_window_start", "task_seed", "seed", col]].rename(
        columns={"wd_window_start": "onset", col: "value"})
    return out.sort_values(["reading", "optimizer", "gamma", "wd_width", "wd_value", "onset", "task_seed", "seed"]
                           ).reset_index(drop=True)


def observed_window(table: pd.DataFrame, threshold: float = 0.5, n_boot: int = 1000,
                    level: float = 0.9, seed: int = 0) -> dict:
    """Window of onsets from one (gamma, width, value) group, with a seed-bootstrap interval.

    `table`: rows onset, seed (and task_seed), value. Runs (a task instance and seed) are
    resampled with replacement, the same for every onset, so a run's whole curve moves together.
    """
    index = ["task_seed", "seed"] if "task_seed" in table.columns else "seed"
    wide = table.pivot_table(index=index, columns="onset", values="value")
    onsets, vals = wide.columns.to_numpy(float), wide.to_numpy()
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():     # onsets without any finished seed: nan, as intended
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, sd = np.nanmean(vals, axis=0), np.nanstd(vals, axis=0, ddof=1) if len(vals) > 1 else np.zeros(len(onsets))
        first, last = onset_window(onsets, mean, threshold)
        boot = np.array([onset_window(onsets, np.nanmean(vals[rng.integers(0, len(vals), len(vals))], axis=0),
                                      threshold) for _ in range(n_boot)])
    q = [(1 - level) / 2, 1 - (1 - level) / 2]

    def ci(col):
        ok = boot[~np.isnan(boot[:, col]), col]
        return [float(x) for x in np.quantile(ok, q)] if len(ok) else [float("nan")] * 2
    return {"onsets": onsets.tolist(), "mean": mean.tolist(),
            "first_bracket": edge_bracket(onsets, first, -1), "last_bracket": edge_bracket(onsets, last, +1),
            "sd": sd.tolist(),
            "seeds": int(len(vals)), "threshold": threshold, "first": first, "last": last,
            "first_ci": ci(0), "last_ci": ci(1), "p_window_exists": float(np.mean(~np.isnan(boot[:, 0]))),
            "ci_level": level}


def edge_bracket(onsets: np.ndarray, edge: float, side: int) -> list[float]:
    """Where the true edge lies given the scanned onsets: (previous onset, first] for the first
    edge (side -1), [last, next onset) for the last (side +1); open-ended at the scan's ends.
    Its width is the resolution to which the edge is located."""
    if not np.isfinite(edge):
        return [float("nan"), float("nan")]
    on = np.sort(onsets)
    nxt = on[on > edge] if side > 0 else on[on < edge]
    other = (float(nxt.min()) if len(nxt) else float("inf")) if side > 0 else \
        (float(nxt.max()) if len(nxt) else float("-inf"))
    return sorted([other, float(edge)])


def timescales(metrics: pd.DataFrame, mem_level: float = 0.9, ood_level: float = 0.5) -> pd.DataFrame:
    """Per run: memorization time (train acc >= mem_level), train-loss half-time, and
    reasoning time (OOD acc >= ood_level), in steps (nan when never reached)."""
    rows = []
    for rid, g in metrics.groupby("run_id"):
        def series(split, metric):
            s = g[(g.split == split) & (g.metric == metric)].sort_values("step")
            return s.step.to_numpy(), s.value.to_numpy()
        st, tacc = series("train", "acc")
        _, tloss = series("train", "loss")
        _, oacc = series("ood", "acc")
        half = crossing_step(st, -tloss, -tloss[0] / 2) if len(tloss) else float("nan")
        rows.append({"run_id": rid, "memorization_step": crossing_step(st, tacc, mem_level),
                     "loss_half_step": half, "reasoning_step": crossing_step(st, oacc, ood_level)})
    return pd.DataFrame(rows)


QUANTITIES = ("memorization", "reasoning", "window_first", "window_last")


def observed_times(store, quantity: str, mem_level: float = 0.9, ood_level: float = 0.5,
                   threshold: float = 0.5, on_corrupt: str = "raise") -> dict:
    """Observed times per gamma, one table (gamma, value per run or per sweep) per group.

    memorization: first eval with train acc >= mem_level, for runs with no decay before it.
    reasoning: steps from the decay onset to OOD acc >= ood_level, for runs with one decay
      window or constant decay, grouped by (decay value, window width); nan where never reached.
    window_first / window_last: edges of the observed onset window per (width, decay value);
      an edge at the first / last scanned onset is censored (the true edge may lie beyond it)
      and is given as nan, with the censored gammas listed.
    """
    from critwin.empirical import load_summaries
    if quantity not in QUANTITIES:
        raise ConfigError("quantity", quantity, ", ".join(QUANTITIES))
    summ = load_summaries(store, on_corrupt)
    summ = summ[summ.status == "complete"] if not summ.empty else summ
    if summ.empty:
        return {}
    if quantity.startswith("window"):
        out = {}
        table = onset_outcomes(summ)
        for (reading, gamma, width, lam), grp in table.groupby(["reading", "gamma", "wd_width", "wd_value"]):
            if grp.onset.nunique() < 3:
                continue
            obs = observed_window(grp, threshold, n_boot=1)
            edge = obs["first"] if quantity == "window_first" else obs["last"]
            bound = min(obs["onsets"]) if quantity == "window_first" else max(obs["onsets"])
            censored = bool(np.isfinite(edge) and edge == bound)
            out.setdefault((reading, f"width {width:g}", f"decay {lam:g}"), []).append(
                {"gamma": gamma, "value": float("nan") if censored else edge, "censored": censored})
        return {k: pd.DataFrame(v) for k, v in out.items()}
    ts = _run_times(store, summ, mem_level, ood_level, on_corrupt)
    if quantity == "memorization":
        clean = ts[ts.wd_window_start.isna() | (ts.wd_window_start >= ts.memorization_step)]
        return {("runs without decay before memorization",):
                clean.assign(value=clean.memorization_step)[["gamma", "value", "run_id", "reading"]]}
    return {(reading, f"decay {lam:g}", f"width {w:g}"): g[["gamma", "value", "run_id"]].reset_index(drop=True)
            for (reading, lam, w), g in _rise_times(ts).groupby(["reading", "wd_value", "wd_width"])}


def _run_times(store, summ: pd.DataFrame, mem_level: float, ood_level: float,
               on_corrupt: str = "raise") -> pd.DataFrame:
    """Per complete run: its timescales next to gamma, lr and its (single) decay window."""
    from critwin.empirical import load_runs
    return timescales(load_runs(store, on_corrupt), mem_level, ood_level).merge(
        summ[["run_id", "reading", "gamma", "lr", "wd_window_start", "wd_width", "wd_value"]], on="run_id")


def _rise_times(ts: pd.DataFrame) -> pd.DataFrame:
    """Decayed runs with value = steps from the decay onset to the OOD rise (nan: never)."""
    dec = ts[ts.wd_window_start.notna()]
    return dec.assign(value=dec.reasoning_step - dec.wd_window_start)


def decay_budget_at_rise(store, ood_level: float = 0.5, on_corrupt: str = "raise") -> pd.DataFrame:
    """Per (decay value, width, gamma): the reasoning time after the decay onset and the
    cumulative shrink lr * lambda * time it took, i.e. how much decay the OOD rise needed."""
    from critwin.empirical import load_summaries
    summ = load_summaries(store, on_corrupt)
    summ = summ[summ.status == "complete"] if not summ.empty else summ
    if summ.empty:
        return pd.DataFrame()
    rise = _rise_times(_run_times(store, summ, 0.9, ood_level, on_corrupt))
    rise = rise.assign(per_step=rise.lr * rise.wd_value)
    rows = [{"reading": reading, "decay": lam, "width": w, "gamma": gamma, "per_step": g.per_step.mean(), "runs": len(g),
             "reached": int(g.value.notna().sum()), "rise_steps": g.value.mean(),
             "budget": (g.value * g.per_step).mean()}
            for (reading, lam, w, gamma), g in rise.groupby(["reading", "wd_value", "wd_width", "gamma"])]
    return pd.DataFrame(rows)
