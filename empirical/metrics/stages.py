"""Stage detection on learning curves (event curves of the Alchemy tasks, or any metric).

Two detectors with the same shape (parameters in the constructor, `fit(steps, curve)`,
results as attributes ending in `_`), in the manner of ruptures and scikit-learn:

- `ThresholdStage(tau, n)`: the paper's rule: a stage completes at the first evaluation
  from which the curve stays >= tau for n consecutive evaluations (nan: censored).
- `ChangePointStages(penalty)`: threshold-free: change points of the curve in log-time
  (PELT from `ruptures` on the curve resampled to an even log-step grid); each segment's
  mean level, the rises between them (onset, completion, size) and the dips (a fall of
  at least `min_dip` before a later rise: time and depth, like P(B|A) dipping to ~0.38).

`across_seeds` summarises a stage time over seeds: median, bootstrap interval over seeds
with censored runs kept (a censored seed counts as "never", so the median can be
censored too), and the fraction of seeds in which the stage happens.
"""
from __future__ import annotations

import math

import numpy as np

from critwin.errors import ConfigError
from critwin.table import condition_columns


def _check_curve(steps, curve):
    s, c = np.asarray(steps, dtype=float), np.asarray(curve, dtype=float)
    if s.ndim != 1 or s.shape != c.shape or len(s) < 2:
        raise ConfigError("curve", len(c), "a 1-d curve with one value per evaluation step (at least 2)")
    if np.any(np.diff(s) <= 0):
        raise ConfigError("steps", "unsorted", "strictly increasing evaluation steps")
    return s, c


class ThresholdStage:
    """First evaluation from which the curve is >= tau for n consecutive evaluations."""

    def __init__(self, tau: float = 0.9, n: int = 3):
        if not (0 < tau <= 1):
            raise ConfigError("tau", tau, "a level in (0, 1]")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError("n", n, "a number of consecutive evaluations >= 1")
        self.tau, self.n = tau, n

    def fit(self, steps, curve) -> "ThresholdStage":
        s, c = _check_curve(steps, curve)
        ok = c >= self.tau
        run = 0
        self.completion_ = float("nan")
        for i, v in enumerate(ok):
            run = run + 1 if v else 0
            if run == self.n:
                self.completion_ = float(s[i - self.n + 1])
                break
        self.censored_ = bool(np.isnan(self.completion_))
        # censored: where the stage can still complete at the earliest, the first step of the curve's trailing
        # run at or above tau (nan if the last evaluation is below it: the stage completes after the curve ends)
        self.open_from_ = float(s[len(s) - run]) if self.censored_ and run else float("nan")
        return self


class ChangePointStages:
    """Change points in log-time, segment levels, rises and dips of one curve."""

    def __init__(self, penalty: float = 0.05, min_rise: float = 0.1, min_dip: float = 0.1, grid: int = 100,
                 min_size: int = 3):
        for name, v in (("penalty", penalty), ("min_rise", min_rise), ("min_dip", min_dip)):
            if not (np.isfinite(v) and v > 0):
                raise ConfigError(name, v, "a number > 0")
        if grid < 10 or min_size < 1:
            raise ConfigError("grid", grid, "at least 10 log-time points and min_size >= 1")
        self.penalty, self.min_rise, self.min_dip, self.grid, self.min_size = penalty, min_rise, min_dip, grid, min_size

    def fit(self, steps, curve) -> "ChangePointStages":
        import ruptures as rpt
        s, c = _check_curve(steps, curve)
        pos = s > 0
        s, c = s[pos], c[pos]
        t = np.geomspace(s[0], s[-1], self.grid)
        y = np.interp(np.log(t), np.log(s), c)
        bkps = rpt.Pelt(model="l2", min_size=self.min_size).fit(y.reshape(-1, 1)).predict(pen=self.penalty)
        edges = [0] + list(bkps)
        self.segments_ = [{"start": float(t[a]), "end": float(t[b - 1]), "level": float(y[a:b].mean())}
                          for a, b in zip(edges, edges[1:])]
        self.change_points_ = [float(t[b]) for b in bkps[:-1]]
        self.rises_, self.dips_ = [], []
        levels = [seg["level"] for seg in self.segments_]
        for k in range(1, len(levels)):
            step = levels[k] - levels[k - 1]
            if step >= self.min_rise:
                self.rises_.append({"onset": self.segments_[k - 1]["end"], "completion": self.segments_[k]["start"],
                                    "from": levels[k - 1], "to": levels[k]})
            elif -step >= self.min_dip and max(levels[k:]) - levels[k] >= self.min_rise:
                self.dips_.append({"time": self.segments_[k]["start"], "depth": -step, "level": levels[k]})
        return self


def changepoint_completion(cp: "ChangePointStages") -> float:
    """A fitted curve's stage time without a threshold: where its last rise completes (nan: none)."""
    return cp.rises_[-1]["completion"] if cp.rises_ else float("nan")


def across_seeds(times, n_boot: int = 2000, level: float = 0.9, seed: int = 0) -> dict:
    """Median stage time over seeds (censored seeds = never: inf), its bootstrap interval over
    seeds, and the fraction of seeds that reach the stage. Censored runs are kept, not dropped."""
    t = np.asarray(times, dtype=float)
    if t.size == 0:
        raise ConfigError("times", [], "one stage time per seed (nan for a seed that never gets there)")
    x = np.where(np.isnan(t), np.inf, t)
    rng = np.random.default_rng(seed)
    boot = np.median(x[rng.integers(0, len(x), (n_boot, len(x)))], axis=1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, 1 - (1 - level) / 2], method="inverted_cdf")
    fin = lambda v: float(v) if np.isfinite(v) else float("nan")   # noqa: E731  (inf = censored)
    return {"median": fin(np.median(x)), "ci_low": fin(lo), "ci_high": fin(hi), "median_censored": bool(np.isinf(np.median(x))),
            "fraction_reached": float(np.mean(np.isfinite(x))), "seeds": int(len(x))}


STAGE_TAUS = {"event_a": 0.95}   # the paper: 0.95 for event A, 0.90 for the others
STAGE_METHODS = ("threshold", "changepoint")


def check_method(method: str) -> str:
    if method not in STAGE_METHODS:
        raise ConfigError("method", method, " or ".join(STAGE_METHODS))
    return method


def stage_time(steps, curve, metric: str, method: str = "threshold", n: int = 3) -> float:
    """When the stage of `metric`'s curve completes (nan: never): the paper's threshold rule
    (STAGE_TAUS, n consecutive evaluations) or where the curve's last change-point rise completes."""
    if check_method(method) == "threshold":
        return ThresholdStage(STAGE_TAUS.get(metric, 0.9), n).fit(steps, curve).completion_
    return changepoint_completion(ChangePointStages().fit(steps, curve))


def stage_timing(steps, curve, metric: str, steps_per_epoch: float, protocol_epochs: int, reached=None,
                 method: str = "threshold", n: int = 3) -> dict:
    """A stage's time with its censoring: `step` and `epoch` where it completes (nan: not by the end), `censored`
    (not completed by the step the run reached: `reached`, else its last evaluation), the step and epoch
    reached, and the protocol's length in epochs, so a stage not reached reads "censored at epoch E of N".
    `bound_step` / `bound_epoch`: the completion time, or for a censored stage the earliest it can still
    complete by the threshold rule (the first step of the curve's trailing run at or above the level, else the
    step reached); the change-point rule gives the step reached."""
    s = np.asarray(steps, dtype=float)
    end = float(s[-1] if reached is None else reached)
    if check_method(method) == "threshold":
        fit = ThresholdStage(STAGE_TAUS.get(metric, 0.9), n).fit(s, curve)
        t, bound = fit.completion_, fit.completion_ if not fit.censored_ else fit.open_from_
    else:
        t, bound = stage_time(s, curve, metric, method, n), math.nan
    bound = t if np.isfinite(t) else (bound if np.isfinite(bound) else end)
    return {"metric": metric, "step": t, "epoch": t / steps_per_epoch, "censored": not np.isfinite(t),
            "step_reached": end, "epoch_reached": end / steps_per_epoch, "protocol_epochs": int(protocol_epochs),
            "bound_step": bound, "bound_epoch": bound / steps_per_epoch}


def _logged_curve(rows, split: str, metric: str) -> list:
    """(step, value) of `split:metric` in a run's logged rows, by step; a one-line error, at the first evaluation,
    when the run does not log it (a pause rule on a curve that never comes would never hold)."""
    pts = sorted((int(r[0]), float(r[3])) for r in rows if r[1] == split and r[2] == metric)
    if rows and not pts:
        logged = sorted({f"{r[1]}:{r[2]}" for r in rows})
        raise ConfigError("stop_at_stage", f"{split}:{metric}", "a metric the run logs: " + ", ".join(logged))
    return pts


class StageReached:
    """A pause rule on a run's logged rows (empirical.sweep.Pause's `when`): true once the stage of
    `metric` on `split` has completed by the threshold rule (`stage_time`), so training it further
    cannot move the stage's time. A class, not a closure, so a process pool can pickle it."""

    def __init__(self, metric: str, split: str = "test", n: int = 3):
        self.metric, self.split, self.n = metric, split, n

    def __call__(self, rows) -> bool:
        pts = _logged_curve(rows, self.split, self.metric)
        if len(pts) < max(2, self.n):
            return False
        steps, values = zip(*pts)
        return bool(np.isfinite(stage_time(steps, values, self.metric, "threshold", self.n)))

    def __repr__(self) -> str:
        return f"StageReached({self.metric!r}, {self.split!r}, n={self.n})"


class StagesReached:
    """A pause rule like `StageReached`, true once every stage of `metrics` has completed (the paper-form S6's
    frozen runs: both later stages timed, training on cannot move either)."""

    def __init__(self, metrics, split: str = "test", n: int = 3):
        self.rules = [StageReached(m, split, n) for m in metrics]

    def __call__(self, rows) -> bool:
        return all(r(rows) for r in self.rules)

    def __repr__(self) -> str:
        return "StagesReached(" + ", ".join(repr(r.metric) for r in self.rules) + ")"


def stage_decided(timing: dict, deadline) -> bool:
    """Whether a stage's `stage_timing` settles if it completes by step `deadline` (None: nothing to wait for):
    it has completed, or the earliest it can still complete (bound_step) is past the deadline."""
    return deadline is None or not timing["censored"] or timing["bound_step"] > deadline


class StagesDecided:
    """A pause rule for a frozen branch (the paper-form S6): true once each stage of `deadlines` (metric -> a step,
    or None for a stage not to wait for) has completed, or can no longer complete at or before its deadline by
    the threshold rule (`stage_timing`'s bound_step past it), so training on cannot change whether the stage
    completes by then. A class, not a closure, so a process pool can pickle it."""

    def __init__(self, deadlines: dict, split: str = "test", n: int = 3):
        self.deadlines, self.split, self.n = dict(deadlines), split, n

    def decided(self, rows, metric: str, deadline) -> bool:
        if deadline is None:
            return True
        pts = _logged_curve(rows, self.split, metric)
        if len(pts) < 2:
            return False
        steps, values = zip(*pts)
        return stage_decided(stage_timing(steps, np.nan_to_num(values), metric, 1.0, 0, None, "threshold", self.n),
                             deadline)

    def __call__(self, rows) -> bool:
        return all(self.decided(rows, m, d) for m, d in self.deadlines.items())

    def __repr__(self) -> str:
        return f"StagesDecided({self.deadlines!r})"


def detect_store(store, metrics=("event_a", "event_b", "event_c", "p_b_given_a"), split: str = "test",
                 method: str = "threshold", n: int = 3, task: str | None = None, on_corrupt: str = "raise"):
    """`detect` on every run of a store."""
    from critwin.empirical import load_runs
    return detect(load_runs(store, on_corrupt), metrics, split, method, n, task, store)


def detect(runs, metrics=("event_a", "event_b", "event_c", "p_b_given_a"), split: str = "test",
           method: str = "threshold", n: int = 3, task: str | None = None, where: str = "the store"):
    """Per run and metric (runs: a load_runs frame): the stage time (threshold rule) or the rises
    and dips (change points); then per condition (every config field but the seeds) the summary over seeds."""
    import pandas as pd
    check_method(method)
    if task is not None:
        runs = runs[runs.task == task]
    runs = runs[(runs.split == split) & runs.metric.isin(metrics)]
    if runs.empty:
        raise ConfigError("metric", ",".join(metrics), f"metrics logged on split '{split}' by runs in {where}")
    group = condition_columns(runs)
    per_run = []
    for (rid, metric), g in runs.groupby(["run_id", "metric"]):
        g = g.sort_values("step")
        row = {"run_id": rid, "metric": metric, "seed": int(g.seed.iloc[0]), "task_seed": int(g.task_seed.iloc[0]),
               **{k: g[k].iloc[0] for k in group}}
        if method == "threshold":
            row["stage_step"] = stage_time(g.step, g.value, metric, "threshold", n)
        else:
            cp = ChangePointStages().fit(g.step, g.value)
            row["stage_step"] = changepoint_completion(cp)
            row["rises"] = len(cp.rises_)
            row["dip_step"] = cp.dips_[0]["time"] if cp.dips_ else float("nan")
            row["dip_depth"] = cp.dips_[0]["depth"] if cp.dips_ else float("nan")
        per_run.append(row)
    per_run = pd.DataFrame(per_run)
    summary = [{**dict(zip(group + ["metric"], key if isinstance(key, tuple) else (key,))),
                **across_seeds(g.stage_step.to_numpy())}
               for key, g in per_run.groupby(group + ["metric"], dropna=False)]
    return per_run, pd.DataFrame(summary)


# The stage curve (split, metric) a task's plasticity reads unless told otherwise: its held-out accuracy,
# or for Alchemy the paper's event C; by task name prefix.
STAGE_CURVES = {"anchor_": ("ood", "acc"), "alchemy_": ("test", "event_c"), "modarith": ("test", "acc"),
                "scan_": ("test", "seq_acc")}


def stage_curve(task: str, split: str | None, metrics: str | None) -> tuple[str, list[str]]:
    """(split, metrics) a plasticity of `task` reads: those given, the task's own (`STAGE_CURVES`) where not."""
    own = next((v for k, v in STAGE_CURVES.items() if task.startswith(k)), ("test", "acc"))
    names = [m.strip() for m in (metrics or own[1]).split(",") if m.strip()]
    return split or own[0], names


def check_curves(cfg, split: str, metrics) -> None:
    """Refuse, before any training, a split or metric that `cfg`'s runs do not log (naming those they do)."""
    from critwin.empirical.training_parts import logged_curves
    curves = logged_curves(cfg)
    if split not in curves:
        raise ConfigError("split", split, f"a split task {cfg.task} logs: {', '.join(curves)}")
    for m in metrics:
        if m not in curves[split]:
            raise ConfigError("metric", m, f"a curve task {cfg.task} logs on split '{split}':"
                                           f" {', '.join(curves[split])}")
    if not metrics:
        raise ConfigError("metric", "", f"a curve task {cfg.task} logs on split '{split}': {', '.join(curves[split])}")
