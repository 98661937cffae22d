"""Interventions that test how an L2 penalty acts through Adam, built from a measured run.

`matched_decoupled`: the same run with the L2 penalty replaced by a decoupled shrink whose
per-step size, interval by interval, is the effective shrink the L2 run logged (lambda * lr /
(sqrt(v_hat) + eps), split 'optim'). If the size of Adam's normalised shrink is the whole
mechanism, the matched run behaves like the L2 run. `adam-scaled` (decay form `adam_scaled`):
the same lambda, its gradient g = lambda theta normalised per coordinate as in Adam, lr g /
(sqrt(v_hat + g^2) + eps), but outside Adam's moments (no momentum; the loss's own steps not
slowed by it): if it behaves like the L2 run, what matters is the per-coordinate normalisation.
`frozen_second_moment`: the L2 run with Adam's second
moment held from an early step, so the penalty keeps the weight it had then (it can diverge
where v was tiny at that step); `max_second_moment`: the L2 run under AMSGrad, whose divisor is
the running max of v, so a collapsing v cannot amplify the penalty (the floored version).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from critwin.errors import ConfigError


def matched_decoupled(cfg, metrics):
    """A decoupled-decay config whose shrink per step follows the L2 run's logged effective
    shrink (piecewise constant between evaluations, inside the run's decay windows)."""
    if cfg.decay_form != "l2" or not cfg.wd_windows:
        raise ConfigError("decay_form", cfg.decay_form, "an l2 run with decay (its effective shrink is matched)")
    eff = metrics[(metrics.split == "optim") & (metrics.metric == "effective_shrink")].sort_values("step")
    if eff.empty:
        raise ConfigError("metrics", "effective_shrink", "a run that logged the decay mechanism (split 'optim')")
    steps, vals = eff.step.to_numpy(), eff.value.to_numpy()
    lam = cfg.schedule()
    windows = []
    starts = np.concatenate([[0], steps[:-1]])
    for a, b, shrink in zip(starts, steps, vals):
        # the value logged at step b describes the interval ending there; only where decay is on
        on = float(lam.value(b - 1)) > 0
        if on and np.isfinite(shrink) and shrink > 0:
            windows.append((float(a), float(b), float(shrink) / cfg.lr))
    return replace(cfg, decay_form="decoupled", wd_windows=tuple(windows))


def frozen_second_moment(cfg, step: int):
    """The same config with Adam's second moment held from `step`."""
    return replace(cfg, freeze_second_moment=int(step))


def max_second_moment(cfg):
    """The same config under AMSGrad (Adam divides by the running max of its second moment)."""
    if cfg.optimizer != "adamw":
        raise ConfigError("optimizer", cfg.optimizer, "adamw (AMSGrad is an Adam variant)")
    return replace(cfg, amsgrad=True)


INTERVENTIONS = ("matched-shrink", "adam-scaled", "amsgrad", "frozen-v")


def intervention_config(cfg, metrics, kind: str, from_step: int | None = None):
    """The intervention `kind` applied to a stored L2 run (its config and logged metrics)."""
    if kind == "matched-shrink":
        return matched_decoupled(cfg, metrics)
    if kind == "adam-scaled":        # the same lambda, normalised per coordinate outside Adam's moments
        return replace(cfg, decay_form="adam_scaled")
    if kind == "amsgrad":
        return max_second_moment(cfg)
    if kind == "frozen-v":
        if from_step is None or from_step < 1 or from_step >= cfg.steps:
            raise ConfigError("from_step", from_step, f"the step Adam's second moment is held from, 1..{cfg.steps - 1}")
        return frozen_second_moment(cfg, from_step)
    raise ConfigError("kind", kind, "one of " + ", ".join(INTERVENTIONS))


def _in_windows(steps: np.ndarray, windows) -> np.ndarray:
    return np.any([(steps >= a) & (steps <= b) for a, b, _ in windows], axis=0) if windows else steps < 0


def intervention_table(triples) -> pd.DataFrame:
    """Per (source run, intervention run id, that run or None if not trained): final OOD and train
    accuracy of both, and the lowest train accuracy each reaches while the source's decay is on
    (did the fit break?)."""
    from critwin.empirical.store import config_columns
    rows = []
    for src, out_id, out in triples:
        c = config_columns(src.config)
        wins = [tuple(w) for w in src.config["wd_windows"]]
        rec = {"schedule": c["wd_windows"], "gamma": c["gamma"], "task_seed": c["task_seed"], "seed": c["seed"],
               "source": src.run_id, "intervention": out_id}
        for name, run in (("source", src), ("intervention", out)):
            if run is None or run.summary.get("status") != "complete":
                rec.update({f"{name}_ood": float("nan"), f"{name}_train": float("nan"),
                            f"{name}_min_train_in_window": float("nan")})
                continue
            m = run.metrics
            tr = m[(m.split == "train") & (m.metric == "acc")].sort_values("step")
            ood = m[(m.split == "ood") & (m.metric == "acc")].sort_values("step")
            inside = tr.value.to_numpy()[_in_windows(tr.step.to_numpy(), wins)]
            rec.update({f"{name}_ood": float(ood.value.iloc[-1]), f"{name}_train": float(tr.value.iloc[-1]),
                        f"{name}_min_train_in_window": float(inside.min()) if len(inside) else float("nan")})
        rows.append(rec)
    return pd.DataFrame(rows)


STATE_METRICS = (("train", "acc"), ("ood", "acc"), ("train", "loss"), ("model", "weight_norm"),
                 ("model", "condensation"), ("model", "ov_qk_alignment"), ("optim", "effective_shrink"),
                 ("optim", "second_moment"), ("optim", "l2_over_ce"))


def plain_runs(frame: pd.DataFrame, optimizer: str = "adamw") -> pd.DataFrame:
    """Rows (runs or summaries) of `optimizer` without a second-moment intervention (AMSGrad, held v)."""
    return frame[(frame.optimizer == optimizer) & frame.amsgrad.eq(False) & frame.freeze_second_moment.isna()]


def variant_label(row) -> str:
    """A run's schedule and optimizer intervention: 'l2/non_embedding 5000:10000@0.004 amsgrad'."""
    sched = row["wd_windows"]
    if sched == "none":
        parts = ["no decay"]
    else:
        n = sched.count(";") + 1
        parts = [row["reading"], sched if n <= 3 else f"{n} windows (matched shrink)"]
    if row["optimizer"] != "adamw":
        parts.append(row["optimizer"])
    if row.get("amsgrad") is True:
        parts.append("amsgrad")
    fsm = row.get("freeze_second_moment")
    if fsm is not None and fsm == fsm:      # nan in a frame for runs without it
        parts.append(f"v frozen from {int(fsm)}")
    return " ".join(parts)


def state_table(runs: pd.DataFrame, steps, match=None) -> pd.DataFrame:
    """Per variant (`variant_label`) and step: the mean over runs (task instances x seeds) of the
    state a decay schedule leaves (accuracies, weight norm, condensation, alignment) and of the
    decay's share of the update (split 'optim', absent for runs that predate it: nan)."""
    if runs.empty:
        return pd.DataFrame()
    cfg = runs.drop_duplicates("run_id").set_index("run_id")
    labels = cfg.apply(variant_label, axis=1)
    if match:       # one text or several: keep variants whose label contains any of them
        match = [match] if isinstance(match, str) else list(match)
        labels = labels[labels.apply(lambda lab: any(m in lab for m in match))]
    rows = []
    for label, ids in labels.groupby(labels).groups.items():
        sub = runs[runs.run_id.isin(ids)]
        for step in steps:
            rec = {"variant": label, "runs": len(ids), "step": int(step)}
            for split, metric in STATE_METRICS:
                vals = []
                for _, m in sub[(sub.split == split) & (sub.metric == metric)].groupby("run_id"):
                    s = m.step.to_numpy()
                    vals.append(float(m.value.to_numpy()[np.argmin(np.abs(s - step))]))
                rec[f"{split}_{metric}" if split in ("train", "ood") else metric] = \
                    float(np.mean(vals)) if vals else float("nan")
            rows.append(rec)
    return pd.DataFrame(rows)


ARRIVAL_FEATURES = ("onset", "arrival_norm", "norm_ratio")


def _series(g: pd.DataFrame, split: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
    s = g[(g.split == split) & (g.metric == metric)].sort_values("step")
    return s.step.to_numpy(), s.value.to_numpy()


def arrival_table(runs: pd.DataFrame, mem_level: float = 0.9) -> pd.DataFrame:
    """Per run with one decay window: the decayed weight norm when the penalty meets a
    memorised model and the norm it has brought it to by the window's end.

    Memorisation: first evaluation with train accuracy >= mem_level. Arrival: the first
    evaluation at or after max(onset, memorisation), i.e. the penalty's first contact with a
    fitted model (when the window opens first, the model memorises under it). norm_ratio =
    arrival_norm / end_norm: how far the penalty must shrink the memorised solution.
    """
    from critwin.theory.optimizers import crossing_step
    if runs.empty:
        return pd.DataFrame()
    cfg = runs.drop_duplicates("run_id").set_index("run_id")
    cfg = cfg[cfg.wd_window_start.notna()]
    rows = []
    for rid, g in runs[runs.run_id.isin(cfg.index)].groupby("run_id"):
        c = cfg.loc[rid]
        st, tacc = _series(g, "train", "acc")
        ns, norm = _series(g, "model", "weight_norm")
        _, ood = _series(g, "ood", "acc")
        if not len(norm) or not len(ood):
            continue
        on, end = float(c.wd_window_start), float(c.wd_window_start + c.wd_width)
        mem = crossing_step(st, tacc, mem_level)
        after = ns >= max(on, mem) if np.isfinite(mem) else np.zeros(len(ns), bool)
        inside = ns <= end
        arrive = float(norm[after][0]) if after.any() and ns[after][0] <= end else float("nan")
        end_norm = float(norm[inside][-1])
        rows.append({"run_id": rid, "reading": c.reading, "gamma": float(c.gamma), "wd_value": float(c.wd_value),
                     "width": float(c.wd_width), "onset": on, "task_seed": int(c.task_seed), "seed": int(c.seed),
                     "memorization_step": mem, "arrival_norm": arrive, "end_norm": end_norm,
                     "norm_ratio": arrive / end_norm if end_norm > 0 else float("nan"),
                     "final_ood": float(ood[-1])})
    return pd.DataFrame(rows)


def fit_threshold(x: np.ndarray, success: np.ndarray) -> tuple[float, float]:
    """The threshold t for the rule 'x >= t succeeds' with the highest accuracy on (x, success)
    (midpoints between sorted values, ties to the lowest t); returns (t, accuracy)."""
    x, success = np.asarray(x, float), np.asarray(success, bool)
    keep = np.isfinite(x)
    x, success = x[keep], success[keep]
    if not len(x):
        return float("nan"), float("nan")
    u = np.unique(x)
    cands = np.concatenate([[u[0] - 1.0], (u[:-1] + u[1:]) / 2, [u[-1] + 1.0]])
    acc = np.array([np.mean((x >= t) == success) for t in cands])
    best = int(np.argmax(acc))
    return float(cands[best]), float(acc[best])


def threshold_holdout(table: pd.DataFrame, fit_gamma: float, level: float = 0.5,
                      features=ARRIVAL_FEATURES) -> pd.DataFrame:
    """For each feature: the threshold fitted on the rows at fit_gamma ('feature >= t' <=>
    final OOD >= level), and its accuracy on every gamma (the others held out). Rows are runs
    (`arrival_table`) or cell means with the same columns."""
    fit = table[np.isclose(table.gamma, fit_gamma)]
    if fit.empty:
        raise ConfigError("fit_gamma", fit_gamma, "a gamma present in the table: "
                          + ", ".join(f"{g:g}" for g in sorted(table.gamma.unique())))
    rows = []
    for feat in features:
        t, _ = fit_threshold(fit[feat], fit.final_ood >= level)
        for gamma, g in table.groupby("gamma"):
            ok = np.isfinite(g[feat].to_numpy(float))
            hit = (g[feat][ok] >= t) == (g.final_ood[ok] >= level)
            rows.append({"feature": feat, "threshold": t, "gamma": float(gamma), "held_out": not np.isclose(gamma, fit_gamma),
                         "n": int(ok.sum()), "accuracy": float(hit.mean()) if ok.any() else float("nan")})
    return pd.DataFrame(rows)
