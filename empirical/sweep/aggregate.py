"""Aggregate final metrics over runs: mean, sd and count per group."""
from __future__ import annotations

import pandas as pd

from ...errors import ConfigError
from ..store import load_summaries

ALIASES = {"wd_window": "wd_windows", "window": "wd_windows", "onset": "wd_window_start"}


def summarize(store, group_by, metrics=("ood_acc",), on_corrupt: str = "raise") -> pd.DataFrame:
    """One row per group of complete runs: <metric>_mean, <metric>_sd (ddof=1), n."""
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
    ok = df[df["status"] == "complete"]
    g = ok.groupby(group_by, dropna=False)
    out = g.size().rename("n").to_frame()
    for col in cols:
        name = col[6:]
        out[f"{name}_mean"] = g[col].mean()
        out[f"{name}_sd"] = g[col].std(ddof=1)
    failed = df[df["status"] != "complete"].groupby(group_by, dropna=False).size()
    out["failed"] = failed.reindex(out.index).fillna(0).astype(int)
    return out.reset_index()
