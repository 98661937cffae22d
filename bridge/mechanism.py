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
