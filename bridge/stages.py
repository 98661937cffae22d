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

import numpy as np

from ..errors import ConfigError


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


def detect_store(store, metrics=("event_a", "event_b", "event_c", "p_b_given_a"), split: str = "test",
                 method: str = "threshold", n: int = 3, task: str | None = None, on_corrupt: str = "raise"):
    """Per run and metric: the stage time (threshold rule) or the rises and dips (change
    points); then per condition (every config field but the seeds) the summary over seeds."""
    import pandas as pd

    from ..empirical import load_runs
    if method not in ("threshold", "changepoint"):
        raise ConfigError("method", method, "threshold or changepoint")
    runs = load_runs(store, on_corrupt)
    if task is not None:
        runs = runs[runs.task == task]
    runs = runs[(runs.split == split) & runs.metric.isin(metrics)]
    if runs.empty:
        raise ConfigError("metric", ",".join(metrics), f"metrics logged on split '{split}' by runs in {store}")
    group = ["task", "hops", "gamma", "wd_windows", "freeze", "reading", "steps"]
    group = [g for g in group if g in runs.columns]
    per_run = []
    for (rid, metric), g in runs.groupby(["run_id", "metric"]):
        g = g.sort_values("step")
        row = {"run_id": rid, "metric": metric, "seed": int(g.seed.iloc[0]), "task_seed": int(g.task_seed.iloc[0]),
               **{k: g[k].iloc[0] for k in group}}
        if method == "threshold":
            row["stage_step"] = ThresholdStage(STAGE_TAUS.get(metric, 0.9), n).fit(g.step, g.value).completion_
        else:
            cp = ChangePointStages().fit(g.step, g.value)
            row["stage_step"] = cp.rises_[-1]["completion"] if cp.rises_ else float("nan")
            row["rises"] = len(cp.rises_)
            row["dip_step"] = cp.dips_[0]["time"] if cp.dips_ else float("nan")
            row["dip_depth"] = cp.dips_[0]["depth"] if cp.dips_ else float("nan")
        per_run.append(row)
    per_run = pd.DataFrame(per_run)
    summary = [{**dict(zip(group + ["metric"], key if isinstance(key, tuple) else (key,))),
                **across_seeds(g.stage_step.to_numpy())}
               for key, g in per_run.groupby(group + ["metric"], dropna=False)]
    return per_run, pd.DataFrame(summary)


def cmd_stages(args):
    from pathlib import Path

    from ..empirical import RunStore
    from .table import format_table
    RunStore(args.store).require()
    metrics = tuple(m.strip() for m in args.metric.split(","))
    per_run, summary = detect_store(args.store, metrics, args.split, args.method, args.n, args.task,
                                    "skip" if args.skip_corrupt else "raise")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    per_run.to_csv(out / "stages_per_run.csv", index=False)
    summary.to_csv(out / "stages.csv", index=False)
    text = [format_table(summary.to_dict(orient="records")),
            f"stage: {'first evaluation held >= tau (0.95 for event_a, 0.90 otherwise) for ' + str(args.n) + ' evaluations' if args.method == 'threshold' else 'completion of the last rise found by change points in log-time'};"
            " median over seeds with censored seeds kept (never = inf), 90% bootstrap interval, fraction reached",
            f"wrote {out}/stages.csv and stages_per_run.csv"]
    return {"summary": summary.to_dict(orient="records"), "per_run": per_run.to_dict(orient="records")}, "\n".join(text)


def register(p):
    from .bridge_commands import add_store_args
    add_store_args(p)
    p.add_argument("--task", default=None, help="only runs of this task (e.g. alchemy_withheld)")
    p.add_argument("--metric", default="event_a,event_b,event_c,p_b_given_a", help="comma-separated curves")
    p.add_argument("--split", default="test", help="split the curves are read from")
    p.add_argument("--method", choices=("threshold", "changepoint"), default="threshold")
    p.add_argument("--n", type=int, default=3, help="consecutive evaluations at or above tau")
    p.add_argument("--out", default="critwin-out")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stages)
