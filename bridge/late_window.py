"""Right edges of the L2 window from one penalised probe per cell: the composition model's memorised plateau.

A probe is the cell's own run (the base of its `critwin sweep edge` command) with the window opened at
PROBE_ONSET, before the bisection's range, and trained until its lag covers every onset of that range. Its OOD
accuracy after the onset, averaged over task instances and seeds, is the outcome the model assigns to each lag
since onset; theory.composition.late_window_edge turns it into the predicted edge. Nothing is fitted: the probe
is a window of the cell's width and lambda at an onset the bisection never evaluates.
"""
from __future__ import annotations

import numpy as np
from critwin.empirical import RunStore
from critwin.empirical.config import TrainConfig
from critwin.empirical.sweep import run_sweep
from critwin.theory.composition import late_window_edge

from critwin.errors import ConfigError

PROBE_ONSET = 6000      # on the memorised plateau (train accuracy 1 by ~1000 steps), before the range 9000-18000


def probe_configs(base: dict, total: int, lo: float, task_seeds=(0, 1, 2), seeds=(0, 1),
                  onset: int = PROBE_ONSET) -> list[TrainConfig]:
    """The probes of a right-edge cell: `base` (the sweep's flat keys, with wd and wd_width) with the window at
    `onset`, trained `onset + total - lo` steps (the lag of the range's first onset), one per instance x seed."""
    if not onset < lo:
        raise ConfigError("onset", onset, f"a step before the bisection's range (lo = {lo:g})")
    steps = int(onset + total - lo)
    return [TrainConfig.from_flat({**base, "wd_window_start": onset, "steps": steps, "task_seed": t, "seed": s})
            for t in task_seeds for s in seeds]


def lag_curve(store: RunStore, cfgs, metric: str = "acc", split: str = "ood") -> tuple[np.ndarray, np.ndarray]:
    """(steps since the window's onset, mean outcome over the probes) from the stored probes, from the onset on."""
    curves = []
    for c in cfgs:
        run = store.complete(c.run_id())
        if run is None:
            raise ConfigError("store", str(store.root), f"the probe run {c.run_id()} stored complete")
        m = run.metrics
        curves.append(m[(m.split == split) & (m.metric == metric)].set_index("step")["value"].sort_index())
    onset = cfgs[0].wd_windows[0][0]
    mean = np.mean([c.to_numpy() for c in curves], axis=0)
    steps = curves[0].index.to_numpy(float)
    keep = steps >= onset
    return steps[keep] - onset, mean[keep]


def predict(base: dict, total: int, lo: float, hi: float, threshold: float, store: RunStore, executor=None,
            progress: bool = True, task_seeds=(0, 1, 2), seeds=(0, 1), onset: int = PROBE_ONSET) -> dict:
    """Train (or reuse) a cell's probes and return its predicted right edge (None: the predicted outcome
    stays on one side of `threshold` over [lo, hi]) with the lag curve it was read from."""
    cfgs = probe_configs(base, total, lo, task_seeds, seeds, onset)
    run_sweep(cfgs, store, executor, progress=progress)
    lag, mean = lag_curve(store, cfgs)
    edge = late_window_edge(lag, mean, total, lo, hi, threshold)
    at = {int(o): float(np.interp(total - o, lag, mean)) for o in np.arange(lo, hi + 1, 500)}
    return {"predicted": None if edge is None else round(edge, 1), "lag": lag.tolist(), "mean": mean.tolist(),
            "predicted_outcome_by_onset": at, "probe_runs": [c.run_id() for c in cfgs],
            "probe_onset": onset, "probe_steps": cfgs[0].steps}


__all__ = ["PROBE_ONSET", "lag_curve", "predict", "probe_configs"]
