"""Interventions that test how an L2 penalty acts through Adam, built from a measured run.

`matched_decoupled`: the same run with the L2 penalty replaced by a decoupled shrink whose
per-step size, interval by interval, is the effective shrink the L2 run logged (lambda * lr /
(sqrt(v_hat) + eps), split 'optim'). If Adam's normalisation is the whole mechanism, the
matched run behaves like the L2 run. `frozen_second_moment`: the L2 run with Adam's second
moment held from an early step, so the penalty keeps the weight it had then (it can diverge
where v was tiny at that step); `max_second_moment`: the L2 run under AMSGrad, whose divisor is
the running max of v, so a collapsing v cannot amplify the penalty (the floored version).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..errors import ConfigError


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


STATE_METRICS = (("train", "acc"), ("ood", "acc"), ("train", "loss"), ("model", "weight_norm"),
                 ("model", "condensation"), ("model", "ov_qk_alignment"), ("optim", "effective_shrink"),
                 ("optim", "second_moment"), ("optim", "l2_over_ce"))


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
