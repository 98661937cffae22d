"""The (decay strength, window onset, gamma) map under one decay reading.

Final OOD accuracy (mean, and the fraction of runs above 0.5) over a log grid of decay
values x window onsets of a fixed width, per gamma, over task instances and seeds. The
onsets include the equal-budget early (0), middle ((T - W) / 2) and late (T - W) windows,
so the timing sensitivity OOD(middle) - OOD(early) comes with a bootstrap interval over
runs (task instance x seed, paired). The theory's predicted windows are drawn over each
panel. Runs go to the store, so a crashed map resumes where it stopped.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from critwin.empirical.sweep import config_from_flat, run_sweep
from critwin.empirical.sweep.spec import check_runs
from critwin.paper_checks.base import final_metric
from critwin.paper_checks.readings import Reading

from critwin.errors import ConfigError

PHASE_SIZES = ("quick", "paper")


@dataclass(frozen=True)
class PhaseGrid:
    """What the map covers, in paper units (steps of a 20k-step run); quick divides times by 10."""

    reading: Reading = Reading("l2", "non_embedding")
    gammas: tuple = (0.5, 0.8, 1.1)
    lambdas: tuple = (2.5e-4, 1e-3, 4e-3, 1.6e-2)
    onsets: tuple = (0, 100, 400, 2500, 7500, 15000)
    width: int = 5000
    steps: int = 20000
    task_seeds: int = 3
    seeds: int = 1
    size: str = "paper"

    def __post_init__(self):
        if self.size not in PHASE_SIZES:
            raise ConfigError("size", self.size, "one of " + ", ".join(PHASE_SIZES))
        if not self.lambdas or any(not (np.isfinite(v) and v > 0) for v in self.lambdas):
            raise ConfigError("wd", self.lambdas, "decay values > 0 (the map's lambda grid)")
        if not (0 < self.width < self.steps):
            raise ConfigError("width", self.width, f"a window width in (0, {self.steps}) steps")
        bad = [o for o in self.onsets if not (0 <= o <= self.steps - self.width)]
        if bad:
            raise ConfigError("onsets", bad, f"onsets in [0, {self.steps - self.width}] (steps - width)")
        for f in ("task_seeds", "seeds"):
            if getattr(self, f) < 1:
                raise ConfigError(f, getattr(self, f), "a count >= 1")

    @property
    def placements(self) -> dict:
        """Equal-budget early / middle / late onsets (always part of the map)."""
        return {"early": 0, "middle": (self.steps - self.width) // 2, "late": self.steps - self.width}

    def all_onsets(self) -> list:
        return sorted(set(self.onsets) | set(self.placements.values()))

    def scaled(self) -> "PhaseGrid":
        """The grid actually run: quick = every time / 10, one task instance and seed."""
        if self.size == "paper":
            return self
        return replace(self, onsets=tuple(o // 10 for o in self.all_onsets()), width=self.width // 10,
                       steps=self.steps // 10, task_seeds=1, seeds=1, size="paper")

    def grid_size(self) -> tuple[int, str]:
        """(the number of configs `configs` builds, where it comes from), counted without building one."""
        g = self.scaled()
        gammas, lambdas, onsets = len(set(g.gammas)), len(set(g.lambdas)), len(g.all_onsets())
        return (gammas * g.task_seeds * g.seeds * (1 + lambdas * onsets),
                f"{gammas} gammas x {g.task_seeds:,} task instances x {g.seeds:,} seeds x (no decay + {lambdas} decay"
                f" values x {onsets} onsets)")

    def check_size(self, max_runs: int | None) -> None:
        """Refuse a map of more than `max_runs` runs (None: any size), before a config is built."""
        runs, factors = self.grid_size()
        check_runs(runs, max_runs, factors)

    def configs(self) -> dict:
        """Run configs by (gamma, lambda, onset, task seed, seed); lambda = None is no decay."""
        g = self.scaled()
        opts = self.reading.options()
        base = {"steps": g.steps, "eval_every": 100 if self.size == "paper" else 10, **opts}
        out = {}
        for gamma in g.gammas:
            for t in range(g.task_seeds):
                for s in range(g.seeds):
                    out[(gamma, None, None, t, s)] = config_from_flat({**base, "gamma": gamma, "task_seed": t,
                                                                       "seed": s})
                    for lam in g.lambdas:
                        for o in g.all_onsets():
                            out[(gamma, lam, o, t, s)] = config_from_flat(
                                {**base, "gamma": gamma, "task_seed": t, "seed": s, "wd": lam * self.reading.wd_scale,
                                 "wd_window_start": o, "wd_width": g.width})
        return out


@dataclass
class PhaseMap:
    grid: PhaseGrid
    per_run: pd.DataFrame        # gamma, wd, onset, task_seed, seed, run_id, ood
    cells: pd.DataFrame          # gamma, wd, onset: mean, frac_above, n
    timing: pd.DataFrame         # gamma, wd: middle - early (paired), bootstrap interval
    predicted: pd.DataFrame = field(default_factory=pd.DataFrame)   # gamma, wd, method, t1, t2, onset window


def measure(grid: PhaseGrid, store, executor=None, train: bool = True, progress: bool = True,
            threshold: float = 0.5, n_boot: int = 2000) -> PhaseMap:
    cfgs = grid.configs()
    if train:
        run_sweep(list(cfgs.values()), store, executor, progress=progress)
    per_run = pd.DataFrame([{"gamma": k[0], "wd": k[1], "onset": k[2], "task_seed": k[3], "seed": k[4],
                             "run_id": c.run_id(), "ood": final_metric(store, c)} for k, c in cfgs.items()])
    dec = per_run[per_run.wd.notna()]
    cells = (dec.groupby(["gamma", "wd", "onset"])
             .agg(mean=("ood", "mean"), frac_above=("ood", lambda v: float((v.dropna() >= threshold).mean())
                                                    if v.notna().any() else np.nan),
                  n=("ood", lambda v: int(v.notna().sum()))).reset_index())
    return PhaseMap(grid, per_run, cells, timing_sensitivity(per_run, grid, n_boot))


def timing_sensitivity(per_run: pd.DataFrame, grid: PhaseGrid, n_boot: int = 2000, level: float = 0.9,
                       seed: int = 0) -> pd.DataFrame:
    """OOD(middle) - OOD(early) at equal budget per (gamma, lambda): the mean of the paired
    differences (same task instance and seed) and a bootstrap interval over those pairs."""
    g = grid.scaled()
    early, middle = 0, (g.steps - g.width) // 2
    rng = np.random.default_rng(seed)
    rows = []
    for (gamma, lam), grp in per_run[per_run.wd.notna()].groupby(["gamma", "wd"]):
        wide = grp.pivot_table(index=["task_seed", "seed"], columns="onset", values="ood")
        if early not in wide or middle not in wide:
            continue
        d = (wide[middle] - wide[early]).dropna().to_numpy()
        if not len(d):
            continue
        boot = d[rng.integers(0, len(d), (n_boot, len(d)))].mean(axis=1)
        lo, hi = np.quantile(boot, [(1 - level) / 2, 1 - (1 - level) / 2])
        rows.append({"gamma": gamma, "wd": lam, "middle_minus_early": float(d.mean()), "ci_low": float(lo),
                     "ci_high": float(hi), "pairs": int(len(d))})
    return pd.DataFrame(rows)


def predictions(grid: PhaseGrid, methods=("recipe", "reduced"), threshold: float = 0.5) -> pd.DataFrame:
    """The theory's windows for the map's runs: recipe / reduced delta-window (t1, t2) and the
    reduced (or full) onset window per decay value, with the decay acting as in gradient flow
    (the theory has no L2-through-Adam reading: see the figure's caption)."""
    from critwin.bridge.compare import config_setting, predicted_windows
    g = grid.scaled()
    cfg = next(iter(grid.configs().values()))       # the map's model and learning rate
    rows = []
    for gamma in g.gammas:
        s = config_setting(cfg, gamma, targets="permutation")
        for lam in g.lambdas:
            for m, p in predicted_windows(s, methods, width=g.width, wd=lam * grid.reading.wd_scale, total=g.steps,
                                          threshold=threshold).items():
                rows.append({"gamma": gamma, "wd": lam, "method": m, "t1": p["t1_steps"], "t2": p["t2_steps"],
                             "onset_first": p.get("onset_first", np.nan), "onset_last": p.get("onset_last", np.nan)})
    return pd.DataFrame(rows)


def render(pm: PhaseMap) -> str:
    from critwin.table import format_table
    g = pm.grid
    text = [f"Final OOD over decay x onset (reading {g.reading.label}, width {g.scaled().width},"
            f" {g.scaled().steps} steps, {g.scaled().task_seeds} task instances x {g.scaled().seeds} seeds):"]
    for gamma, grp in pm.cells.groupby("gamma"):
        wide = grp.pivot_table(index="wd", columns="onset", values="mean").reset_index()
        wide.columns = ["wd"] + [f"onset {c:g}" for c in wide.columns[1:]]
        base = pm.per_run[(pm.per_run.gamma == gamma) & pm.per_run.wd.isna()].ood
        text += ["", f"gamma {gamma:g} (no decay: {base.mean():.3f})", format_table(wide.to_dict(orient="records"))]
    text += ["", "Timing sensitivity at equal budget, OOD(middle) - OOD(early), paired over runs (90% bootstrap):",
             format_table(pm.timing.to_dict(orient="records")) if len(pm.timing) else "(no complete pairs)"]
    if len(pm.predicted):
        text += ["", "Predicted (theory, gradient flow; decay as a decoupled shrink):",
                 format_table(pm.predicted.to_dict(orient="records"))]
    missing = int(pm.per_run.ood.isna().sum())
    if missing:
        text.append(f"\n{missing} of {len(pm.per_run)} runs not in the store yet (resume with the same command).")
    return "\n".join(text)


