"""Aggregate final metrics (and reach steps) over runs: mean, sd and count per group."""
from __future__ import annotations

import pandas as pd
from critwin.empirical.store import load_summaries
from critwin.empirical.training_parts import censored_reach

from critwin.errors import ConfigError

ALIASES = {"wd_window": "wd_windows", "window": "wd_windows", "onset": "wd_window_start"}


def default_metrics(df: pd.DataFrame) -> list[str]:
    """What a summary shows when no metric is named: the held-out accuracy the store's tasks
    log (ood_acc, else test_acc), train_acc, and the held-out reach step where there is one."""
    finals = {c[6:] for c in df.columns if c.startswith("final_")}
    held = [m for m in ("ood_acc", "test_acc") if m in finals][:1]
    reach = [c for c in ("ood_reach_step", "test_reach_step") if c in df.columns][:1]
    return held + [m for m in ("train_acc",) if m in finals] + reach


def summarize(store, group_by, metrics=None, on_corrupt: str = "raise") -> pd.DataFrame:
    """One row per group of runs (every group, even one where every run failed): the mean and
    sd (ddof=1) of each metric over the complete runs that have it, n = the number of values
    averaged (of the first metric; <metric>_n for the others), and runs / failed / diverged.
    A metric is a final metric or a summary's `<split>_reach_step` (a run that never reached
    the level counts as its last step; `<metric>_censored` counts those). None: default_metrics."""
    df = load_summaries(store, on_corrupt)
    group_by = [ALIASES.get(g, g) for g in ([group_by] if isinstance(group_by, str) else group_by)]
    if df.empty:
        return pd.DataFrame(columns=[*group_by, "n"])
    for g in group_by:
        if g not in df.columns:
            raise ConfigError("group_by", g, "config columns: " + ", ".join(sorted(c for c in df.columns
                                                                                 if not c.startswith("final_"))))
    reach = sorted(c for c in df.columns if c.endswith("_reach_step"))
    cols = []
    for m in (default_metrics(df) if metrics is None else metrics):
        col = m if m.startswith("final_") or m in reach else f"final_{m}"
        if col not in df.columns:
            raise ConfigError("metric", m, "final metrics: " + ", ".join(
                sorted(c[6:] for c in df.columns if c.startswith("final_"))) + "; reach steps: " + (
                ", ".join(reach) or "none in this store"))
        cols.append(col)
    g = df.groupby(group_by, dropna=False)
    out = g.size().rename("runs").to_frame()
    ok = df["status"] == "complete"
    keys = [df[k] for k in group_by]
    for i, col in enumerate(cols):
        name = col[6:] if col.startswith("final_") else col
        values = df[col]
        if col in reach:
            censored = values.isna() & ok
            values = pd.Series([censored_reach(v, n) for v, n in zip(values, df["steps_done"])], index=df.index)
            out[f"{name}_censored"] = censored.groupby(keys, dropna=False).sum().astype(int)
        vals = values.where(ok).groupby(keys, dropna=False)
        if i == 0:
            out.insert(0, "n", vals.count())
        else:
            out[f"{name}_n"] = vals.count()
        out[f"{name}_mean"] = vals.mean()
        out[f"{name}_sd"] = vals.std(ddof=1)
    out["runs"] = out.pop("runs")
    for st in ("failed", "diverged"):
        out[st] = (df["status"] == st).groupby(keys, dropna=False).sum().astype(int)
    return out.reset_index()
