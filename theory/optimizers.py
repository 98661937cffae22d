"""Discrete optimizers on the full stylised model: GD, SGD with momentum, AdamW.

Decay follows the Transformer protocol in either reading: `decoupled` shrinks every
trainable tensor after the optimizer step, theta <- theta - eta * lambda(step) * theta
(with GD the Euler step of the gradient flow in `flow.py`); `l2` adds the gradient
lambda * theta of the penalty 1/2 lambda |theta|^2 to the loss gradient before the step,
so Adam divides it by its gradient scale.
"""
from __future__ import annotations

import numpy as np
from critwin.theory.adam import adam_update
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

    Members that start from the same init and have had the same lambda so far are in the same
    state, so they share one row of the state and are stepped once; they part when their lambdas
    do (an onset sweep runs its no-decay prefix once and each onset branches off it).
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
    rng = np.random.default_rng(seed)
    lam = np.stack([sc.value(np.arange(total)) for sc in schedules], axis=1)     # (steps, members)
    parts = {0, *(np.flatnonzero(np.any(lam[1:] != lam[:-1], axis=1)) + 1).tolist()}   # where rows may part
    rows = _Rows(q)
    step = _Step(q, optimizer, decay_form, eta, momentum, betas, eps, train_memorization)
    steps, records = [], {}

    def record(t):
        steps.append(t)
        live = rows.live()
        obs = order_parameters(p, live)
        obs["reasoning_fraction"] = reasoning_fraction(obs["x"], obs["rho"])
        if optimizer == "adamw":
            obs["adam_gain"] = adam_gain(live.arrays(), rows.live_moments(1), t, eta, betas[1], eps)
        for k, v in obs.items():
            records.setdefault(k, []).append(v[rows.row_of])

    record(0)
    for t in range(total):
        if t in parts:
            rows.part(lam[t])
        w = None
        if batch_size is not None:
            pick = rng.choice(n_ex, batch_size, replace=False)
            w = np.zeros(n_ex)
            w[pick] = n_ex / batch_size
            w = w.reshape(p.targets.shape[0], p.targets.shape[2])
        step(p, rows, rows.lam_of_rows(lam[t]), t, w)
        if (t + 1) % eval_every == 0 or t + 1 == total:
            record(t + 1)
            if progress is not None:
                progress(eval_every)
    final = Params(*(a[rows.row_of] for a in rows.live().arrays()))
    return np.array(steps, dtype=float), {k: np.array(v) for k, v in records.items()}, final


class _Rows:
    """The distinct states of a batch: row r holds the parameters and optimizer moments
    (first: buffer or m; second: v) shared by the members i with row_of[i] == r."""

    def __init__(self, q: Params):
        n = q.W1.shape[0]
        self.row_of, firsts = np.zeros(n, dtype=int), []     # firsts: one member per distinct init
        for i in range(n):
            same = (r for r, f in enumerate(firsts) if all(np.array_equal(a[i], a[f]) for a in q.arrays()))
            self.row_of[i] = next(same, len(firsts))
            if self.row_of[i] == len(firsts):
                firsts.append(i)
        self.n = len(firsts)
        self.params = Params(*(np.zeros_like(a) for a in q.arrays()))    # room for one row per member
        for a, a0 in zip(self.params.arrays(), q.arrays()):
            a[:self.n] = a0[firsts]
        self.moments = [[np.zeros_like(a) for a in q.arrays()] for _ in range(2)]

    def live(self) -> Params:
        return Params(*(a[:self.n] for a in self.params.arrays()))

    def live_moments(self, k: int) -> list[np.ndarray]:
        return [a[:self.n] for a in self.moments[k]]

    def lam_of_rows(self, lam_t: np.ndarray) -> np.ndarray:
        """This step's lambda per live row (every member of a row has the same)."""
        out = np.zeros(self.n)
        out[self.row_of] = lam_t
        return out

    def part(self, lam_t: np.ndarray) -> None:
        """Give each (row, lambda) pair its own row: the row's first lambda keeps it, any other
        gets a copy of it appended."""
        new = {}
        for i, (r, lt) in enumerate(zip(self.row_of.tolist(), lam_t.tolist())):
            if (r, lt) not in new:
                kept = any(k[0] == r for k in new)
                new[r, lt] = self.n if kept else r
                if kept:
                    for a in (*self.params.arrays(), *self.moments[0], *self.moments[1]):
                        a[self.n] = a[r]
                    self.n += 1
            self.row_of[i] = new[r, lt]


class _Step:
    """One optimizer step of every live row, in place: row by row for M (its gradient, about a
    megabyte a row, is used while in cache), then W1 and W2 for all rows at once."""

    def __init__(self, shape: Params, optimizer, decay_form, eta, momentum, betas, eps, train_memorization):
        self.optimizer, self.decay_form, self.eta = optimizer, decay_form, eta
        self.momentum, self.betas, self.eps, self.train_memorization = momentum, betas, eps, train_memorization
        # gradients and two temporaries: one row for M, every row for W1 and W2
        self.scratch = [Params(np.zeros_like(shape.M[:1]), np.zeros_like(shape.W1), np.zeros_like(shape.W2))
                        for _ in range(3)]

    def __call__(self, p: Problem, rows: _Rows, lam: np.ndarray, t: int, w) -> None:
        grad, s1, s2 = self.scratch
        q, m1, m2 = rows.live(), rows.live_moments(0), rows.live_moments(1)
        decaying = bool(lam.any())
        for r in range(rows.n):
            one = slice(r, r + 1)
            loss_and_grads(p, Params(q.M[one], q.W1[one], q.W2[one]), w, Params(grad.M, grad.W1[one], grad.W2[one]))
            if self.train_memorization:
                self.update(q.M[one], grad.M, m1[0][one], m2[0][one], lam[one], t, decaying, (s1.M, s2.M))
        n = slice(0, rows.n)
        for k in (1, 2):
            self.update(q.arrays()[k], grad.arrays()[k][n], m1[k], m2[k], lam, t, decaying,
                        (s1.arrays()[k][n], s2.arrays()[k][n]))

    def update(self, a, g, first, second, lam, t, decaying, scratch) -> None:
        """a's step from its gradient g (overwritten), with the decay as decay_form says."""
        lt = lam.reshape((-1,) + (1,) * (a.ndim - 1))
        if self.decay_form == "l2" and decaying:
            g += np.multiply(lt, a, out=scratch[0])
        if self.optimizer == "gd":
            g *= self.eta
            a -= g
        elif self.optimizer == "momentum":
            first *= self.momentum
            first += g
            a -= np.multiply(first, self.eta, out=scratch[0])
        else:
            adam_update(a, first, second, g, t + 1, self.eta, self.betas, self.eps, scratch)
        if self.decay_form == "decoupled" and decaying:
            a *= 1 - self.eta * lt


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
