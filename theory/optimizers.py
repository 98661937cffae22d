"""Discrete optimizers on the full stylised model: GD, SGD with momentum, AdamW.

Decay follows the Transformer protocol in either reading: `decoupled` shrinks every
trainable tensor after the optimizer step, theta <- theta - eta * lambda(step) * theta
(with GD the Euler step of the gradient flow in `flow.py`); `l2` adds the gradient
lambda * theta of the penalty 1/2 lambda |theta|^2 to the loss gradient before the step,
so Adam divides it by its gradient scale.
"""
from __future__ import annotations

import numpy as np
from critwin.theory.adam import adam_step
from critwin.theory.setting import Problem
from critwin.theory.stylised import (
    Params,
    init_params,
    loss_and_grads,
    order_parameters,
    reasoning_fraction,
)

from critwin.errors import ConfigError
from critwin.schedules import Schedule

from critwin.vocabulary import STYLISED_DECAY_FORMS
from critwin.vocabulary import THEORY_OPTIMIZERS as OPTIMIZERS


def run_discrete(p: Problem, q: Params, schedule, eta: float, optimizer: str = "gd",
                 eval_every: int = 100, momentum: float = 0.9, betas=(0.9, 0.98),
                 eps: float = 1e-8, batch_size: int | None = None, seed: int = 0,
                 progress=None, train_memorization: bool = True, decay_form: str = "decoupled"):
    """Train for the schedule's total steps; returns (steps, traj, final params).

    schedule: one Schedule for every batch member, or a list with one per member.
    batch_size samples that many (pair, key) examples per step (SGD); None = full batch.
    `progress`, if given, is called with the number of steps done since the last call.
    train_memorization=False leaves every M_ij untouched (no update, no decay).
    """
    if optimizer not in OPTIMIZERS:
        raise ConfigError("optimizer", optimizer, "one of " + ", ".join(OPTIMIZERS))
    if decay_form not in STYLISED_DECAY_FORMS:
        raise ConfigError("decay_form", decay_form, "one of " + ", ".join(STYLISED_DECAY_FORMS))
    n_members = q.W1.shape[0]
    schedules = [schedule] * n_members if isinstance(schedule, Schedule) else list(schedule)
    if len(schedules) != n_members:
        raise ConfigError("schedule", len(schedules), f"one schedule, or one per batch member ({n_members})")
    total = max(sc.total for sc in schedules)
    n_ex = p.targets.shape[0] * p.targets.shape[2]
    if batch_size is not None and not (0 < batch_size <= n_ex):
        raise ConfigError("batch_size", batch_size, f"an integer in [1, {n_ex}] or None")
    q = q.copy()
    rng = np.random.default_rng(seed)
    buf = [np.zeros_like(a) for a in q.arrays()]
    sq = [np.zeros_like(a) for a in q.arrays()]
    lam = np.stack([sc.value(np.arange(total)) for sc in schedules], axis=1)     # (steps, members)
    steps, records = [], {}

    def record(t):
        steps.append(t)
        obs = order_parameters(p, q)
        obs["reasoning_fraction"] = reasoning_fraction(obs["x"], obs["rho"])
        if optimizer == "adamw":
            obs["adam_gain"] = adam_gain(q.arrays(), sq, t, eta, betas[1], eps)
        for k, v in obs.items():
            records.setdefault(k, []).append(v)

    record(0)
    for t in range(total):
        lam_t = lam[t]
        w = None
        if batch_size is not None:
            pick = rng.choice(n_ex, batch_size, replace=False)
            w = np.zeros(n_ex)
            w[pick] = n_ex / batch_size
            w = w.reshape(p.targets.shape[0], p.targets.shape[2])
        _, g = loss_and_grads(p, q, w)
        for name, a, ga, b, s2 in zip(("M", "W1", "W2"), q.arrays(), g.arrays(), buf, sq):
            if name == "M" and not train_memorization:
                continue
            lt = lam_t.reshape((-1,) + (1,) * (a.ndim - 1))
            if decay_form == "l2" and lam_t.any():
                ga = ga + lt * a
            if optimizer == "gd":
                a -= eta * ga
            elif optimizer == "momentum":
                b *= momentum
                b += ga
                a -= eta * b
            else:
                a -= adam_step(b, s2, ga, t + 1, eta, betas, eps)
            if decay_form == "decoupled" and lam_t.any():
                a *= 1 - eta * lt
        if (t + 1) % eval_every == 0 or t + 1 == total:
            record(t + 1)
            if progress is not None:
                progress(eval_every)
    return np.array(steps, dtype=float), {k: np.array(v) for k, v in records.items()}, q


def adam_gain(arrays, second_moments, t: int, eta: float, beta2: float, eps: float) -> np.ndarray:
    """Per batch member, eta |theta| / |(sqrt(v_hat) + eps) * theta| over every array: the
    per-step shrink an L2 penalty of strength 1 causes through Adam after t steps at the weights'
    typical gradient scale (Adam's divisor averaged with weights theta^2, so coordinates whose
    gradient is 0 cannot dominate it; the Transformer runs log the same quantity); nan before
    the first step."""
    n = arrays[0].shape[0]
    if t == 0:
        return np.full(n, np.nan)
    num, den = np.zeros(n), np.zeros(n)
    for a, s2 in zip(arrays, second_moments):
        axes = tuple(range(1, a.ndim))
        num += (a ** 2).sum(axes)
        den += (((np.sqrt(s2 / (1 - beta2 ** t)) + eps) * a) ** 2).sum(axes)
    return eta * np.sqrt(num / den)


def crossing_step(steps: np.ndarray, values: np.ndarray, level: float) -> float:
    """First recorded step with value >= level (nan if never)."""
    hit = np.nonzero(np.asarray(values) >= level)[0]
    return float(np.asarray(steps)[hit[0]]) if len(hit) else float("nan")


def optimizer_time_scale(p: Problem, gamma, eta: float, delta: float, capacity: float,
                         optimizer: str = "adamw", horizon: int = 3000, seed: int = 0,
                         eval_every: int = 5) -> dict:
    """How much faster (or slower) an optimizer makes each path than plain GD on the same
    stylised model: t1 = steps to memorization 1 - delta (both paths on), t2 = steps for the
    shared path alone (M frozen) to reach (1 - delta) of its capacity. Returns both times for
    GD and the optimizer, and the ratios GD / optimizer (the factor by which the gradient-flow
    recipe's times shrink under the optimizer)."""
    g = np.atleast_1d(np.asarray(gamma, dtype=float))
    out = {"gamma": g}
    for name, opt in (("gd", "gd"), ("opt", optimizer)):
        q = init_params(p, g, np.full(len(g), seed))
        st, tr, _ = run_discrete(p, q, Schedule.none(horizon), eta, opt, eval_every=eval_every)
        st2, tr2, _ = run_discrete(p, q, Schedule.none(horizon), eta, opt, eval_every=eval_every,
                                   train_memorization=False)
        out[f"t1_{name}"] = np.array([crossing_step(st, tr["x"][:, k], 1 - delta) for k in range(len(g))])
        out[f"t2_{name}"] = np.array([crossing_step(st2, tr2["rho"][:, k], (1 - delta) * capacity)
                                      for k in range(len(g))])
    out["t1_ratio"] = out["t1_gd"] / out["t1_opt"]
    out["t2_ratio"] = out["t2_gd"] / out["t2_opt"]
    out["optimizer"] = optimizer
    return out
