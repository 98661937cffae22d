"""Locate a window edge by bisection on one numeric key instead of a full grid."""
from __future__ import annotations

import math

import numpy as np

from ...errors import ConfigError
from ..store import RunStore
from .runner import run_sweep
from .spec import KEYS, config_from_flat


def find_edge(base: dict, param: str, lo: float, hi: float, resolution: float, threshold: float,
              seeds=(0, 1, 2), metric: str = "ood_acc", store: RunStore | None = None,
              executor=None, progress: bool = True) -> dict:
    """Bisect `param` on [lo, hi] for where mean final `metric` over seeds crosses `threshold`.

    The outcome must lie on opposite sides of the threshold at lo and hi (checked first).
    Values are snapped to the grid lo + k * resolution, so every run is one a grid sweep
    would also have made; runs already in the store are reused.
    """
    if param not in KEYS:
        raise ConfigError("param", param, "a config key: " + ", ".join(KEYS))
    if not (resolution > 0 and hi > lo):
        raise ConfigError("resolution", resolution, "a positive step with lo < hi")
    store = store or RunStore("runs")
    seeds = list(seeds)
    evals: dict[float, float] = {}
    runs_used: set[str] = set()

    def outcome(v: float) -> float:
        if v not in evals:
            cfgs = [config_from_flat({**base, param: _cast(v), "seed": s}) for s in seeds]
            run_sweep(cfgs, store, executor, progress=progress)
            runs_used.update(c.run_id() for c in cfgs)
            vals = [_final(store, c.run_id(), metric) for c in cfgs]
            evals[v] = float(np.nanmean(vals)) if not all(math.isnan(x) for x in vals) else float("nan")
        return evals[v]

    n_grid = int(math.floor((hi - lo) / resolution)) + 1
    a, b = 0, n_grid - 1
    fa, fb = outcome(lo), outcome(lo + b * resolution)
    out = {"param": param, "threshold": threshold, "metric": metric, "seeds": seeds,
           "grid_points": n_grid, "grid_runs": n_grid * len(seeds)}
    if any(math.isnan(f) for f in (fa, fb)) or (fa >= threshold) == (fb >= threshold):
        return {**out, "edge": None, "message": f"no crossing of {threshold} between {lo} and {hi}"
                f" (outcomes {fa:.3f}, {fb:.3f})", "evaluations": _table(evals), "runs": len(runs_used)}
    side_a = fa >= threshold
    while b - a > 1:
        mid = (a + b) // 2
        if (outcome(lo + mid * resolution) >= threshold) == side_a:
            a = mid
        else:
            b = mid
    return {**out, "edge": [lo + a * resolution, lo + b * resolution],
            "direction": "falls" if side_a else "rises", "evaluations": _table(evals),
            "runs": len(runs_used)}


def _cast(v: float):
    return int(v) if float(v).is_integer() else float(v)


def _final(store: RunStore, run_id: str, metric: str) -> float:
    if store.status(run_id) != "complete":
        return float("nan")
    return float(store.load(run_id).summary["final"].get(metric, float("nan")))


def _table(evals: dict) -> list[dict]:
    return [{"value": k, "outcome": v} for k, v in sorted(evals.items())]
