"""Locate a window edge by bisection on one numeric key instead of a full grid."""
from __future__ import annotations

import math

import numpy as np
from critwin.empirical.config import FLAT_KEYS, TrainConfig
from critwin.empirical.store import RunStore
from critwin.empirical.sweep.runner import run_sweep
from critwin.empirical.sweep.spec import check_runs

from critwin.errors import ConfigError


def find_edge(base: dict, param: str, lo: float, hi: float, resolution: float, threshold: float,
              seeds=(0, 1, 2), metric: str = "ood_acc", store: RunStore | None = None,
              executor=None, progress: bool = True, task_seeds=None, max_runs: int | None = None) -> dict:
    """Bisect `param` on [lo, hi] for where mean final `metric` over seeds (and task instances,
    when `task_seeds` is given: every pair of the two) crosses `threshold`.

    The outcome must lie on opposite sides of the threshold at lo and hi (checked first).
    Values are snapped to the grid lo + k * resolution, so every run is one a grid sweep
    would also have made; runs already in the store are reused. The interval resamples the
    (task instance, seed) pairs. A search that could train more than `max_runs` runs (None: any
    number) is refused before the first is built.
    """
    if param not in FLAT_KEYS:
        raise ConfigError("param", param, "a config key: " + ", ".join(FLAT_KEYS))
    if not (resolution > 0 and hi > lo):
        raise ConfigError("resolution", resolution, "a positive step with lo < hi")
    n_grid = int(math.floor((hi - lo) / resolution)) + 1
    points = min(n_grid, 2 + max(n_grid - 2, 0).bit_length())      # lo, hi, then one per halving
    seeds = seeds if isinstance(seeds, range) else list(seeds)      # a range is counted without listing it
    if task_seeds is not None and not isinstance(task_seeds, range):
        task_seeds = list(task_seeds)
    n_tasks = 1 if task_seeds is None else len(task_seeds)
    check_runs(points * n_tasks * len(seeds), max_runs, f"at most {points} bisection points x {n_tasks:,} task"
                                                        f" instances x {len(seeds):,} seeds")
    store = store or RunStore("runs")
    seeds = list(seeds)
    units = [{"seed": s} for s in seeds] if task_seeds is None else \
        [{"task_seed": t, "seed": s} for t in task_seeds for s in seeds]
    evals: dict[float, float] = {}
    per_seed: dict[float, list[float]] = {}
    runs_used: set[str] = set()

    def outcome(v: float) -> float:
        if v not in evals:
            cfgs = [TrainConfig.from_flat({**base, param: _cast(v), **u}) for u in units]
            run_sweep(cfgs, store, executor, progress=progress)
            runs_used.update(c.run_id() for c in cfgs)
            per_seed[v] = [_final(store, c.run_id(), metric) for c in cfgs]
            evals[v] = float(np.nanmean(per_seed[v])) if not all(math.isnan(x) for x in per_seed[v]) else float("nan")
        return evals[v]

    a, b = 0, n_grid - 1
    fa, fb = outcome(lo), outcome(lo + b * resolution)
    out = {"param": param, "threshold": threshold, "metric": metric, "seeds": seeds,
           "task_seeds": None if task_seeds is None else list(task_seeds),
           "grid_points": n_grid, "grid_runs": n_grid * len(units)}
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
            "runs": len(runs_used), "edge_ci": bootstrap_edge(per_seed, threshold),
            "ci_level": 0.9}


def bootstrap_edge(per_seed: dict, threshold: float, n_boot: int = 1000, level: float = 0.9,
                   seed: int = 0) -> list[float]:
    """Seed-bootstrap interval of the edge: resample seeds (the same ones at every evaluated
    value), take the midpoint of the first adjacent pair of evaluated values whose resampled
    means lie on opposite sides of the threshold; quantiles over resamples with a crossing."""
    values = np.array(sorted(per_seed))
    vals = np.array([per_seed[v] for v in values], dtype=float)       # values x seeds
    rng = np.random.default_rng(seed)
    mids = []
    for _ in range(n_boot):
        with np.errstate(all="ignore"):
            m = np.nanmean(vals[:, rng.integers(0, vals.shape[1], vals.shape[1])], axis=1)
        side = m >= threshold
        cross = np.nonzero(side[1:] != side[:-1])[0]
        if len(cross):
            mids.append((values[cross[0]] + values[cross[0] + 1]) / 2)
    if not mids:
        return [float("nan"), float("nan")]
    return [float(x) for x in np.quantile(mids, [(1 - level) / 2, 1 - (1 - level) / 2])]


def _cast(v: float):
    return int(v) if float(v).is_integer() else float(v)


def _final(store: RunStore, run_id: str, metric: str) -> float:
    run = store.complete(run_id)
    return float("nan") if run is None else float(run.summary["final"].get(metric, float("nan")))


def _table(evals: dict) -> list[dict]:
    return [{"value": k, "outcome": v} for k, v in sorted(evals.items())]
