"""Predicted Alchemy stages (the linear readout, `predicted_stages`) scored run by run against a base-rate baseline.

One timing rule on both sides: a stage completes at the first evaluation from which its held-out curve stays at
the stage level (0.95 for A, 0.90 for P(B|A) and P(C|A,B)) for three evaluations in a row
(`empirical.metrics.stages.stage_time`); for the prediction the evaluations are the points of a flow-time grid.

An observed stage time is known only to an interval: completed at evaluation step s, it completed after the
evaluation before s (lo) and by s (hi); not completed by the step the run reached, it is censored: (reached, inf).
Every comparison is read off these intervals, and is decided only where no time inside them could flip it;
otherwise it is undecided and counted as such.

Comparisons, per run:
- `late_order`: which late stage completes first, C|AB or B|A. The model: its predicted order (a stage it never
  completes is last; neither completing is a prediction of neither, wrong wherever the run decides). The
  baseline: the most frequent decided order over all runs (in-sample, which favours the baseline).
- `late_order_brier`: the same outcome as a probability: the baseline gives every run the base rate of
  "C|AB first", the model 1 or 0.
- `ratio` rows: log time ratios (C|AB over B|A, B|A over A, C|AB over A). The observed log ratio is an interval
  from the two time intervals. The baseline predicts one constant: the value inside the most observed intervals
  (the base-rate ratio; in-sample). Per run the outcome is whether the model's or the baseline's log ratio is
  closer to the observed one, decided only where that holds for every value inside the interval.

Errors are 0 / 1 (a tie 1/2); skill is the baseline's mean error minus the model's (`skill.error_skill`),
with a bootstrap interval over task instances (the runs of one task, hop count and task seed move together).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from critwin.errors import ConfigError

STAGES = {"A": "event_a", "B|A": "p_b_given_a", "C|AB": "p_c_given_ab"}
RATIOS = (("C|AB", "B|A"), ("B|A", "A"), ("C|AB", "A"))
C_FIRST, B_FIRST, NEITHER = "C|AB first", "B|A first", "neither"


# ---- observed ---------------------------------------------------------------------------------------------------

def stage_interval(steps, curve, metric: str, steps_per_epoch: float, protocol_epochs: int, reached=None,
                   n: int = 3) -> dict:
    """`empirical.metrics.stages.stage_timing` of one curve with the interval its time is known to: (lo, hi], lo the
    evaluation before the completing one (0 and 0 for a stage complete at a first evaluation at step 0), or
    (step reached, inf) when censored."""
    from critwin.empirical.metrics.stages import stage_timing
    s = np.asarray(steps, dtype=float)
    c = np.nan_to_num(np.asarray(curve, dtype=float), nan=0.0)    # a conditional with no cases is not at its level
    t = stage_timing(s, c, metric, steps_per_epoch, protocol_epochs, reached, "threshold", n)
    if t["censored"]:
        lo, hi = t["step_reached"], math.inf
    else:
        i = int(np.flatnonzero(s == t["step"])[0])
        lo, hi = (float(s[i - 1]) if i > 0 else t["step"]), t["step"]
    return {**t, "lo": lo, "hi": hi}


def observed_intervals(index: pd.DataFrame, metrics: pd.DataFrame, split: str = "test", n: int = 3,
                       protocol_epochs: int | None = None) -> pd.DataFrame:
    """One row per Alchemy run of an export (`run_export.read_export`) that trains unfrozen: its task instance and,
    per stage, the interval its time is known to, whether it is censored and the epoch reached."""
    if protocol_epochs is None:
        from critwin.empirical.presets import PAPER_EPOCHS
        protocol_epochs = PAPER_EPOCHS
    runs = index[index.task.astype(str).str.startswith("alchemy_")]
    if "freeze" in runs.columns:
        runs = runs[runs.freeze.fillna("none").astype(str) == "none"]
    m = metrics[(metrics.split == split) & metrics.metric.isin(list(STAGES.values()))]
    rows = []
    for _, r in runs.iterrows():
        g = m[m.run_id == r.run_id]
        hops = None if pd.isna(r.hops) else int(r.hops)
        row = {"run_id": r.run_id, "task": r.task, "hops": hops, "task_seed": int(r.task_seed), "seed": int(r.seed),
               "instance": f"{r.task}" + (f"_h{hops}" if hops else "") + f"_t{int(r.task_seed)}"}
        reached = float(r.steps_done) if "steps_done" in r and pd.notna(r.steps_done) else None
        for k, metric in STAGES.items():
            c = g[g.metric == metric].sort_values("step")
            if len(c) < 2:
                raise ConfigError("metrics", r.run_id, f"a run with its {split} {metric} curve logged")
            t = stage_interval(c.step.to_numpy(), c.value.to_numpy(), metric, float(r.steps_per_epoch),
                               protocol_epochs, reached, n)
            row.update({f"obs_lo_{k}": t["lo"], f"obs_hi_{k}": t["hi"], f"censored_{k}": t["censored"],
                        f"epoch_reached_{k}": t["epoch_reached"]})
            if k == "B|A":
                row["obs_dip_B|A"], row["obs_dip_step"] = dip_of(c.step.to_numpy(), c.value.to_numpy())
        row["protocol_epochs"] = int(protocol_epochs)
        rows.append(row)
    if not rows:
        raise ConfigError("export", "no Alchemy runs", "unfrozen Alchemy runs with held-out event curves")
    return pd.DataFrame(rows)


# ---- comparisons ------------------------------------------------------------------------------------------------

def observed_late_order(lo_b, hi_b, lo_c, hi_c):
    """C_FIRST / B_FIRST where the intervals decide it (one stage is complete by the time the other is known to be
    later), else None (both censored, or complete at the same evaluation)."""
    if hi_c <= lo_b and hi_c < hi_b:
        return C_FIRST
    if hi_b <= lo_c and hi_b < hi_c:
        return B_FIRST
    return None


def observed_a_first(lo_a, hi_a, later) -> bool | None:
    """Whether A completes before both later stages (`later`: their (lo, hi) intervals): True where A is complete
    by the time each is known to be later, False where one is complete by the time A is known to be later,
    None otherwise."""
    if all(hi_a <= lo and hi_a < hi for lo, hi in later):
        return True
    if any(hi <= lo_a and hi < hi_a for lo, hi in later):
        return False
    return None


def predicted_late_order(t_b, t_c):
    """The model's order from its point times (nan or inf: never): the one it completes first, NEITHER when it
    completes neither or both at the same grid point."""
    t_b = math.inf if not np.isfinite(t_b) else t_b
    t_c = math.inf if not np.isfinite(t_c) else t_c
    if t_c < t_b:
        return C_FIRST
    if t_b < t_c:
        return B_FIRST
    return NEITHER


def _log(x: float) -> float:
    return math.inf if x == math.inf else (-math.inf if x <= 0 else math.log(x))


def log_ratio_interval(lo_num, hi_num, lo_den, hi_den) -> tuple[float, float]:
    """The interval of log(t_num / t_den) over the two time intervals: an end is infinite where a time is censored
    (hi = inf) or may be 0 (lo = 0); an end the two can leave undefined (0 over 0, inf over inf) is left open."""
    lo, hi = _log(lo_num) - _log(hi_den), _log(hi_num) - _log(lo_den)
    return (-math.inf if math.isnan(lo) else lo), (math.inf if math.isnan(hi) else hi)


def predicted_log_ratio(t_num, t_den) -> float:
    """log(t_num / t_den) of point times (nan or inf: never): +inf when only the numerator is never, -inf when
    only the denominator is, nan when both are."""
    num = math.inf if not np.isfinite(t_num) else t_num
    den = math.inf if not np.isfinite(t_den) else t_den
    if math.isinf(num) and math.isinf(den):
        return float("nan")
    return _log(num) - _log(den)


def _side(m: float, b: float, o: float) -> int:
    """Sign of |m - o| - |b - o| at one end o of an interval (extended reals): -1 model closer, +1 baseline closer,
    0 equal. A prediction equal to an infinite end is exact there."""
    if math.isinf(o):
        if m == o and b == o:
            return 0
        if m == o:
            return -1
        if b == o:
            return 1
        return 0 if m == b else (-1 if (m > b) == (o > 0) else 1)
    dm, db = abs(m - o), abs(b - o)
    return 0 if dm == db else (-1 if dm < db else 1)


def closer(m: float, b: float, lo: float, hi: float):
    """Whether the model's value m or the baseline's b is closer to an observed value known only to lie in
    [lo, hi]: -1 model, +1 baseline, 0 a tie, None undecided (the answer differs inside the interval).
    |m - o| - |b - o| is monotone in o, so its signs at the two ends decide it. A model value of nan (no
    prediction) loses wherever the interval is not the whole line."""
    if lo == -math.inf and hi == math.inf:
        return None
    if math.isnan(m):
        return 1
    if m == b:
        return 0
    s_lo, s_hi = _side(m, b, lo), _side(m, b, hi)
    if s_lo == s_hi:
        return s_lo
    return None


def base_rate_value(intervals) -> float:
    """The constant inside the most intervals [lo, hi] (intervals that are the whole line say nothing and are left
    out). Candidates: every finite end, the middle between neighbouring ends, and one unit beyond the outer ends;
    among candidates that tie, the one nearest their median."""
    iv = [(lo, hi) for lo, hi in intervals if not (lo == -math.inf and hi == math.inf)]
    ends = sorted({e for pair in iv for e in pair if math.isfinite(e)})
    if not ends:
        return float("nan")
    cand = ends + [0.5 * (x + y) for x, y in zip(ends, ends[1:])] + [ends[0] - 1.0, ends[-1] + 1.0]
    count = np.array([sum(lo <= x <= hi for lo, hi in iv) for x in cand])
    best = np.array(cand)[count == count.max()]
    return float(best[np.argmin(np.abs(best - np.median(best)))])


def dip_of(times, curve) -> tuple[float, float]:
    """How far a curve (P(B|A)) falls below its first value, and where its lowest point is (the first, on ties);
    points where it is undefined (nan) are skipped. The same reading for predicted and observed curves."""
    t, c = np.asarray(times, dtype=float), np.asarray(curve, dtype=float)
    ok = np.isfinite(c)
    if ok.sum() < 2:
        return 0.0, float("nan")
    t, c = t[ok], c[ok]
    i = int(np.argmin(c))
    return float(c[0] - c[i]), float(t[i])


# ---- the table --------------------------------------------------------------------------------------------------

def predictions(observed: pd.DataFrame, times=None, chemistries: int | None = None, n: int = 3) -> dict:
    """{instance: predict_stages result} for every task instance of `observed` (one flow per instance)."""
    from critwin.bridge.predicted_stages import predict_stages
    from critwin.theory.readout_stages import flow_times
    times = flow_times(1e-3, 1e6, 271) if times is None else times
    out = {}
    for inst, g in observed.groupby("instance", sort=True):
        r = g.iloc[0]
        variant = str(r.task).removeprefix("alchemy_")
        hops = None if pd.isna(r.hops) else int(r.hops)
        out[inst] = predict_stages(variant, hops, chemistries, int(r.task_seed), times=times, n=n)
    return out


def per_run(observed: pd.DataFrame, predicted: dict) -> pd.DataFrame:
    """Observed intervals beside the predicted times (flow time; inf: never), orders and log ratios."""
    rows = []
    for _, r in observed.iterrows():
        p = predicted[r.instance]["stage_times"]
        row = r.to_dict()
        for k in STAGES:
            row[f"pred_t_{k}"] = float(p[k]) if np.isfinite(p[k]) else math.inf
        row["obs_order"] = observed_late_order(r["obs_lo_B|A"], r["obs_hi_B|A"], r["obs_lo_C|AB"], r["obs_hi_C|AB"])
        row["pred_order"] = predicted_late_order(p["B|A"], p["C|AB"])
        row["obs_a_first"] = observed_a_first(r["obs_lo_A"], r["obs_hi_A"],
                                              [(r[f"obs_lo_{k}"], r[f"obs_hi_{k}"]) for k in ("B|A", "C|AB")])
        late = min(row["pred_t_B|A"], row["pred_t_C|AB"])
        row["pred_a_first"] = bool(row["pred_t_A"] < late)
        for num, den in RATIOS:
            key = f"{num}/{den}"
            lo, hi = log_ratio_interval(r[f"obs_lo_{num}"], r[f"obs_hi_{num}"], r[f"obs_lo_{den}"], r[f"obs_hi_{den}"])
            row[f"obs_log_{key}_lo"], row[f"obs_log_{key}_hi"] = lo, hi
            row[f"pred_log_{key}"] = predicted_log_ratio(p[num], p[den])
        curves = predicted[r.instance]["curves"]
        row["pred_dip_B|A"], row["pred_dip_t"] = dip_of(curves.t, curves.p_b_given_a)
        rows.append(row)
    return pd.DataFrame(rows)


def score(runs: pd.DataFrame, resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The skill table: one row per comparison, with decided / undecided counts, both error rates, the skill
    (baseline's error minus the model's) and its bootstrap interval over task instances."""
    from scipy.stats import spearmanr

    from critwin.bridge.skill import error_skill
    out = []
    dec = runs[runs.obs_order.notna()]
    counts = dec.obs_order.value_counts()
    base_order = counts.index[0] if len(counts) else None
    if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
        base_order = sorted(counts.index[:2])[0]
    p_c = float((dec.obs_order == C_FIRST).mean()) if len(dec) else float("nan")
    m_err = (dec.pred_order != dec.obs_order).astype(float).to_numpy()
    b_err = (dec.obs_order != base_order).astype(float).to_numpy()
    y = (dec.obs_order == C_FIRST).astype(float).to_numpy()
    m_p = (dec.pred_order == C_FIRST).astype(float).to_numpy()
    da = runs[runs.obs_a_first.notna()]
    a_counts = da.obs_a_first.astype(bool).value_counts()
    a_base = bool(a_counts.index[0]) if len(a_counts) else None
    out.append(_row("A_first", f"always {a_base}", da, (da.obs_a_first.astype(bool) != a_base).astype(float).to_numpy(),
                    (da.obs_a_first.astype(bool) != da.pred_a_first).astype(float).to_numpy(), len(runs) - len(da),
                    resamples, seed, error_skill))
    for name, base, be, me in (("late_order", f"always {base_order}", b_err, m_err),
                               ("late_order_brier", f"P({C_FIRST}) = {p_c:.3f}", (p_c - y) ** 2, (m_p - y) ** 2)):
        out.append(_row(name, base, dec, be, me, len(runs) - len(dec), resamples, seed, error_skill))
    for num, den in RATIOS:
        key = f"{num}/{den}"
        lo, hi = runs[f"obs_log_{key}_lo"].to_numpy(), runs[f"obs_log_{key}_hi"].to_numpy()
        b = base_rate_value(zip(lo, hi))
        res = [closer(m, b, a, z) for m, a, z in zip(runs[f"pred_log_{key}"], lo, hi)]
        ok = np.array([x is not None for x in res])
        me = np.array([{-1: 0.0, 0: 0.5, 1: 1.0}[x] for x in res if x is not None])
        sub = runs[ok]
        row = _row(f"ratio {key}", f"log ratio {b:.3f} (x{math.exp(b):.3g})", sub, 1.0 - me, me,
                   int((~ok).sum()), resamples, seed, error_skill)
        pm = runs[f"pred_log_{key}"].to_numpy()
        inside = np.isfinite(lo) | np.isfinite(hi)
        row["model_inside_interval"] = int(np.sum(inside & (lo <= pm) & (pm <= hi)))
        row["baseline_inside_interval"] = int(np.sum(inside & (lo <= b) & (b <= hi)))
        row["informative_intervals"] = int(inside.sum())
        both = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(pm)
        if both.sum() >= 3 and np.ptp(pm[both]) > 0:
            row["spearman_pred_vs_obs_mid"] = float(spearmanr(pm[both], 0.5 * (lo[both] + hi[both])).statistic)
        out.append(row)
    return pd.DataFrame(out)


def _row(name, base, sub, base_err, model_err, undecided, resamples, seed, error_skill) -> dict:
    row = {"comparison": name, "baseline": base, "decided": int(len(sub)), "undecided": int(undecided),
           "clusters": int(sub.instance.nunique()) if len(sub) else 0,
           "model_error": float(np.mean(model_err)) if len(sub) else float("nan"),
           "baseline_error": float(np.mean(base_err)) if len(sub) else float("nan")}
    if len(sub):
        s = error_skill(sub.instance.to_numpy(), base_err, model_err, resamples=resamples, seed=seed)
        row.update({"skill": s["skill"], "skill_lo": s["lo"], "skill_hi": s["hi"], "verdict": s["verdict"]})
    else:
        row.update({"skill": float("nan"), "skill_lo": float("nan"), "skill_hi": float("nan"),
                    "verdict": "nothing decided"})
    return row


def stage_skill(index, metrics, times=None, chemistries: int | None = None, split: str = "test", n: int = 3,
                resamples: int = 2000, seed: int = 0) -> dict:
    """The whole comparison on an export's runs (the index and metrics frames of `run_export.read_export`):
    {'runs': per-run frame, 'table': skill table, 'predicted': per task instance the predicted times, order and dip}."""
    observed = observed_intervals(index, metrics, split, n)
    predicted = predictions(observed, times, chemistries, n)
    runs = per_run(observed, predicted)
    return {"runs": runs, "table": score(runs, resamples, seed),
            "predicted": {k: {"stage_times": v["stage_times"], "order": v["order"], "final": v["final"],
                              "dip_b_given_a": dict(zip(("depth", "t"), dip_of(v["curves"].t, v["curves"].p_b_given_a)))}
                          for k, v in predicted.items()}}


__all__ = ["B_FIRST", "C_FIRST", "NEITHER", "RATIOS", "STAGES", "base_rate_value", "closer", "dip_of",
           "log_ratio_interval", "observed_a_first", "observed_intervals", "observed_late_order", "per_run", "predicted_late_order", "predicted_log_ratio",
           "predictions", "score", "stage_interval", "stage_skill"]
