"""Aggregate final metrics over runs: mean, sd and count per group."""
from __future__ import annotations

import pandas as pd

from ...errors import ConfigError
from ..store import load_summaries

ALIASES = {"wd_window": "wd_windows", "window": "wd_windows", "onset": "wd_window_start"}


def summarize(store, group_by, metrics=("ood_acc",), on_corrupt: str = "raise") -> pd.DataFrame:
    """One row per group of runs (every group, even one where every run failed): the mean and
    sd (ddof=1) of each metric over the complete runs that have it, n = the number of values
    averaged (of the first metric; <metric>_n for the others), and runs / failed / diverged."""
    df = load_summaries(store, on_corrupt)
    group_by = [ALIASES.get(g, g) for g in ([group_by] if isinstance(group_by, str) else group_by)]
    if df.empty:
        return pd.DataFrame(columns=[*group_by, "n"])
    for g in group_by:
        if g not in df.columns:
            raise ConfigError("group_by", g, "config columns: " + ", ".join(sorted(c for c in df.columns
                                                                                 if not c.startswith("final_"))))
    cols = []
    for m in metrics:
        col = m if m.startswith("final_") else f"final_{m}"
        if col not in df.columns:
            raise ConfigError("metric", m, "final metrics: " + ", ".join(
                sorted(c[6:] for c in df.columns if c.startswith("final_"))))
        cols.append(col)
    g = df.groupby(group_by, dropna=False)
    out = g.size().rename("runs").to_frame()
    ok = df["status"] == "complete"
    for i, col in enumerate(cols):
        name = col[6:]
        vals = df[col].where(ok).groupby([df[k] for k in group_by], dropna=False)
        if i == 0:
            out.insert(0, "n", vals.count())
        else:
            out[f"{name}_n"] = vals.count()
        out[f"{name}_mean"] = vals.mean()
        out[f"{name}_sd"] = vals.std(ddof=1)
    out["runs"] = out.pop("runs")
    for st in ("failed", "diverged"):
        out[st] = (df["status"] == st).groupby([df[k] for k in group_by], dropna=False).sum().astype(int)
    return out.reset_index()
