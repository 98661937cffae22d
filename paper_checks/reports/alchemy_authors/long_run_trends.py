"""Is a later stage beginning in the long run? The linear trend, per 10 epochs, of the event curves on the
held-out chemistries and on the training sample from an epoch on, with a 90% bootstrap interval over epochs.

    python3 long_run_trends.py STATE [FROM_EPOCH] > trends.txt

STATE is the run's resume state (a store's .resume-ID.pt) or a stored run's folder (4fd235a0283b7550 in a store
that `train_long.sh 0` rebuilt from runs_authors/); FROM_EPOCH defaults to 50, where held-out A completes.
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from compare_precision import STEPS_PER_EPOCH, rows_of

CURVES = ("event_a", "p_b_given_a", "p_c_given_ab", "event_c")


def trends(rows: pd.DataFrame, start: int = 50, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per split and curve: epochs read, range, slope per 10 epochs and its 90% bootstrap interval."""
    out, rng = [], np.random.default_rng(seed)
    for (split, metric), g in rows[rows.metric.isin(CURVES)].groupby(["split", "metric"]):
        x, y = g.step.to_numpy() / STEPS_PER_EPOCH, g.value.to_numpy()
        x, y = x[x >= start], y[x >= start]
        if len(x) < 3:
            continue
        boot = [np.polyfit(x[i], y[i], 1)[0] for i in rng.integers(0, len(x), (n_boot, len(x)))]
        lo, hi = np.quantile(boot, [0.05, 0.95])
        out.append({"split": split, "curve": metric, "epochs": f"{x.min():.0f}-{x.max():.0f}",
                    "min": y.min(), "max": y.max(), "last": y[-1], "slope_per_10": 10 * np.polyfit(x, y, 1)[0],
                    "ci_low": 10 * lo, "ci_high": 10 * hi})
    return pd.DataFrame(out)


if __name__ == "__main__":
    table = trends(rows_of(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 50)
    print(table.to_string(index=False, float_format="%.4f"))
