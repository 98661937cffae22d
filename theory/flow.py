"""Gradient flow of the full stylised model, integrated exactly with `solve_ivp`.

The loss sees M_ij only through Z_ij = M_ij E, W1 through V = W1 E and W2 through the
couplings c; gradient flow keeps every update inside those spans, so the flow is
integrated in (Z, V, c) (8x smaller than the raw parameters) and the parts of the
weights outside the spans only decay, which gives the norms m and r exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from ..schedules import Schedule
from .setting import Problem
from .stylised import Params, couplings, reasoning_fraction


@dataclass(frozen=True)
class Kernel:
    """Gram matrices that close the flow in (Z, V, c)."""

    G: np.ndarray        # E^T E (K, K)
    H: np.ndarray        # pinv(E) pinv(E)^T: |M_par|^2 = tr(Z H Z^T)
    Kc: np.ndarray       # <b_p, b_q>, b_p = u_j u_i^T, training pairs (P, P)
    Kc_pinv: np.ndarray
    Kc_ood: np.ndarray   # <b_o, b_p>, held-out vs training pairs (O, P)


def kernel(p: Problem) -> Kernel:
    E, U = p.keys, p.anchors
    Ep = np.linalg.pinv(E)

    def gram(a, b):
        return (U[:, a[:, 1]].T @ U[:, b[:, 1]]) * (U[:, a[:, 0]].T @ U[:, b[:, 0]])

    Kc = gram(p.pairs, p.pairs)
    return Kernel(E.T @ E, Ep @ Ep.T, Kc, np.linalg.pinv(Kc), gram(p.ood_pairs, p.pairs))


@dataclass
class FlowState:
    """Compressed state; `perp` holds |.|^2 outside the spans at t = 0 (it only decays)."""

    Z: np.ndarray        # (B, P, d, K)
    V: np.ndarray        # (B, d, K)
    c: np.ndarray        # (B, P)
    c_ood: np.ndarray    # (B, O)
    decay: np.ndarray    # (B,) integral of lambda dt so far
    perp_M: np.ndarray   # (B, P)
    perp_W1: np.ndarray  # (B,)
    perp_W2: np.ndarray  # (B,)


def compress(p: Problem, q: Params, k: Kernel | None = None) -> FlowState:
    k = kernel(p) if k is None else k
    Z, V, c = q.M @ p.keys, q.W1 @ p.keys, couplings(p, q.W2)
    c_ood = couplings(p, q.W2, p.ood_pairs)
    par_M = np.einsum("bpdk,kl,bpdl->bp", Z, k.H, Z)
    par_W1 = np.einsum("bdk,kl,bdl->b", V, k.H, V)
    par_W2 = np.einsum("bp,pq,bq->b", c, k.Kc_pinv, c)
    return FlowState(Z, V, c, c_ood, np.zeros(len(c)),
                     np.maximum(np.sum(q.M**2, axis=(-2, -1)) - par_M, 0),
                     np.maximum(np.sum(q.W1**2, axis=(1, 2)) - par_W1, 0),
                     np.maximum(np.sum(q.W2**2, axis=(1, 2)) - par_W2, 0))


def observables(p: Problem, s: FlowState, k: Kernel) -> dict:
    """x, rho, reasoning fraction, the spec's m and r, loss and held-out reasoning."""
    Y = p.targets
    yn = np.sum(Y**2)
    R = s.Z + s.c[..., None, None] * s.V[:, None] - Y
    x = np.einsum("bpdk,pdk->b", s.Z, Y) / yn
    rho = np.einsum("bp,bdk,pdk->b", s.c, s.V, Y) / yn
    shrink = np.exp(-2 * s.decay)
    m2 = s.perp_M * shrink[:, None] + np.einsum("bpdk,kl,bpdl->bp", s.Z, k.H, s.Z)
    w1 = s.perp_W1 * shrink + np.einsum("bdk,kl,bdl->b", s.V, k.H, s.V)
    w2 = s.perp_W2 * shrink + np.einsum("bp,pq,bq->b", s.c, k.Kc_pinv, s.c)
    out = {"x": x, "rho": rho, "reasoning_fraction": reasoning_fraction(x, rho),
           "m": np.mean(np.sqrt(m2), axis=1), "r": np.sqrt(w1 * w2),
           "loss": 0.5 * p.alpha * np.einsum("bpdk,bpdk->b", R, R)}
    if len(p.ood_pairs):
        F = s.c_ood[..., None, None] * s.V[:, None]
        out["ood_rho"] = np.einsum("bpdk,pdk->b", F, p.ood_targets) / np.sum(p.ood_targets**2)
    return out


def _pack(s: FlowState) -> np.ndarray:
    return np.concatenate([s.Z.ravel(), s.V.ravel(), s.c.ravel(), s.c_ood.ravel(), s.decay])


def _unpack(y: np.ndarray, like: FlowState) -> FlowState:
    parts, at = [], 0
    for a in (like.Z, like.V, like.c, like.c_ood, like.decay):
        parts.append(y[at:at + a.size].reshape(a.shape))
        at += a.size
    return FlowState(*parts, like.perp_M, like.perp_W1, like.perp_W2)


def _rhs(p: Problem, k: Kernel, like: FlowState, lam: np.ndarray, train_memorization: bool):
    a = p.alpha
    mem = 1.0 if train_memorization else 0.0

    def f(_t, y):
        s = _unpack(y, like)
        R = s.Z + s.c[..., None, None] * s.V[:, None] - p.targets
        RG = R @ k.G
        g = a * np.einsum("bpdk,bdk->bp", R, s.V)
        dZ = (-a * RG - lam[:, None, None, None] * s.Z) * mem
        dV = -a * np.einsum("bp,bpdk->bdk", s.c, RG) - lam[:, None, None] * s.V
        dc = -g @ k.Kc - lam[:, None] * s.c
        dco = -g @ k.Kc_ood.T - lam[:, None] * s.c_ood
        return np.concatenate([dZ.ravel(), dV.ravel(), dc.ravel(), dco.ravel(), lam])
    return f


def integrate_flow(p: Problem, q: Params, schedules, eta: float, eval_steps,
                   rtol: float = 1e-6, atol: float = 1e-9, method: str = "RK45",
                   train_memorization: bool = True, progress=None):
    """Gradient flow from `q` under one schedule per batch member.

    Time is continuous, t = step * eta; the integration restarts at every schedule edge
    (the union over members), so no edge is stepped over. train_memorization=False freezes
    every M_ij at its init (no gradient, no decay) to isolate the shared path. Returns (steps, traj, state)
    where traj[name] has shape (len(steps), B). `progress`, if given, is called with the steps
    integrated after every schedule segment.
    """
    if isinstance(schedules, Schedule):
        schedules = [schedules] * q.W1.shape[0]
    if len(schedules) != q.W1.shape[0]:
        raise ValueError("one schedule per batch member")
    if not train_memorization and any(sc.windows for sc in schedules):
        raise ValueError("train_memorization=False isolates the shared path without decay")
    k = kernel(p)
    state = compress(p, q, k)
    total = max(sc.total for sc in schedules)
    edges = sorted({e for sc in schedules for e in sc.breakpoints()} | {0.0, float(total)})
    steps = np.unique(np.clip(np.asarray(eval_steps, dtype=float), 0, total))
    records = {}

    def record(s):
        for name, v in observables(p, s, k).items():
            records.setdefault(name, []).append(v)

    y = _pack(state)
    if len(steps) and steps[0] == 0:
        record(state)
    for a, b in zip(edges, edges[1:]):
        lam = np.array([float(sc.value(a)) if a < sc.total else 0.0 for sc in schedules])
        want = steps[(steps > a) & (steps <= b)]
        t_eval = np.unique(np.append(want, b)) * eta
        sol = solve_ivp(_rhs(p, k, state, lam, train_memorization), (a * eta, b * eta), y, method=method,
                        t_eval=t_eval, rtol=rtol, atol=atol)
        if not sol.success:
            raise RuntimeError(f"flow integration failed on [{a:g}, {b:g}): {sol.message}")
        for col in range(len(want)):
            record(_unpack(sol.y[:, col], state))
        y = sol.y[:, -1]
        if progress is not None:
            progress(b - a)
    traj = {n: np.array(v) for n, v in records.items()}
    return steps, traj, _unpack(y, state)
