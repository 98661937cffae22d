"""Gradient flow of the full stylised model, integrated exactly with `solve_ivp`.

The loss sees M_ij only through Z_ij = M_ij E, W1 through V = W1 E and W2 through the
couplings c; gradient flow keeps every update inside those spans, so the flow is
integrated in (Z, V, c) (8x smaller than the raw parameters) and the parts of the
weights outside the spans only decay, which gives the norms m and r exactly. Z and V are
integrated in coordinates of the smallest subspace the flow cannot leave (`invariant_basis`):
another 11x smaller at paper size.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from critwin.theory.setting import Problem, pair_gram
from critwin.theory.stylised import Params, couplings, reasoning_fraction
from scipy.integrate import solve_ivp

from critwin.schedules import Schedule


@dataclass(frozen=True)
class Kernel:
    """Gram matrices that close the flow in (Z, V, c)."""

    G: np.ndarray        # E^T E (K, K)
    H: np.ndarray        # pinv(E) pinv(E)^T: |M_par|^2 = tr(Z H Z^T)
    Kc: np.ndarray       # <b_p, b_q>, b_p = u_j u_i^T, training pairs (P, P)
    Kc_pinv: np.ndarray
    Kc_ood: np.ndarray   # <b_o, b_p>, held-out vs training pairs (O, P)


def kernel(p: Problem) -> Kernel:
    E = p.keys
    Ep = np.linalg.pinv(E)
    Kc = pair_gram(p)
    return Kernel(E.T @ E, Ep @ Ep.T, Kc, np.linalg.pinv(Kc), pair_gram(p, p.ood_pairs))


@dataclass(frozen=True)
class Basis:
    """Orthonormal coordinates for vec(Z_p) and vec(V) (each d x K, flattened).

    The flow keeps Z and V inside the span S of V(0), every Z_p(0) and every target, closed
    under right-multiplication by G (every update is a combination of R_p G), so the flow is
    exact in coordinates of S: with orthonormal keys G = I and dim S <= 2|P| + 1, 91 instead of
    d K = 1024 at paper size. Q is None for the identity basis (used when S is most of the space).
    """

    Q: np.ndarray | None     # (B, dK, n) orthonormal columns, or None
    G: np.ndarray            # (B, n, n) G in coordinates, or (K, K) for the identity basis
    H: np.ndarray            # likewise for H (norms only)
    dK: tuple                # (d, K)

    def project(self, X: np.ndarray) -> np.ndarray:
        """(B, ..., d, K) -> coordinates (B, ..., n); X must lie in S (exact then)."""
        flat = X.reshape(*X.shape[:-2], -1)
        if self.Q is None:
            return flat
        return (flat.reshape(len(flat), -1, flat.shape[-1]) @ self.Q).reshape(*flat.shape[:-1], -1)

    def lift(self, x: np.ndarray) -> np.ndarray:
        """Coordinates (B, ..., n) -> (B, ..., d, K)."""
        flat = x if self.Q is None else np.einsum("b...n,bmn->b...m", x, self.Q)
        return flat.reshape(*x.shape[:-1], *self.dK)

    def times(self, x: np.ndarray, which: str) -> np.ndarray:
        """Right-multiplication by G or H, in coordinates."""
        op = self.G if which == "G" else self.H
        if self.Q is None:
            return (x.reshape(*x.shape[:-1], *self.dK) @ op).reshape(x.shape)
        return (x.reshape(len(x), -1, x.shape[-1]) @ op).reshape(x.shape)   # batched BLAS, not einsum


def identity_basis(p: Problem, k: Kernel) -> Basis:
    return Basis(None, k.G, k.H, p.targets.shape[1:])


def invariant_basis(p: Problem, Z: np.ndarray, V: np.ndarray, k: Kernel, max_share: float = 0.5,
                    rtol: float = 1e-10) -> Basis:
    """The G-invariant span of each member's init and the targets (see `Basis`); the identity
    basis when that span exceeds max_share of d K (then coordinates would not pay)."""
    d, K = p.targets.shape[1:]
    dK, ident = d * K, identity_basis(p, k)
    Y = p.targets.reshape(len(p.targets), dK)

    def orth(A):
        u, sv, _ = np.linalg.svd(A, full_matrices=False)
        return u[:, sv > rtol * sv[0]] if len(sv) and sv[0] > 0 else u[:, :0]

    bases = []
    for b in range(V.shape[0]):
        Q = orth(np.concatenate([V[b].reshape(1, dK), Z[b].reshape(-1, dK), Y]).T)
        while Q.shape[1] <= max_share * dK:
            Q2 = orth(np.concatenate([Q, (Q.T.reshape(-1, d, K) @ k.G).reshape(-1, dK).T], axis=1))
            if Q2.shape[1] == Q.shape[1]:
                break
            Q = Q2
        if Q.shape[1] > max_share * dK:
            return ident
        bases.append(Q)
    n = max(Q.shape[1] for Q in bases)
    Qs = np.zeros((len(bases), dK, n))
    for b, Q in enumerate(bases):
        Qs[b, :, :Q.shape[1]] = Q     # zero columns: coordinates that stay 0

    def op(M):
        MQ = (np.swapaxes(Qs, 1, 2).reshape(len(bases), n, d, K) @ M).reshape(len(bases), n, dK)
        return MQ @ Qs
    return Basis(Qs, op(k.G), op(k.H), (d, K))


@dataclass
class FlowState:
    """Compressed state in `basis` coordinates; `perp` holds |.|^2 outside the spans at t = 0
    (it only decays). `full()` gives Z and V as d x K matrices."""

    Z: np.ndarray        # (B, P, n) coordinates of Z_p = M_p E
    V: np.ndarray        # (B, n) coordinates of V = W1 E
    c: np.ndarray        # (B, P)
    c_ood: np.ndarray    # (B, O)
    decay: np.ndarray    # (B,) integral of lambda dt so far
    perp_M: np.ndarray   # (B, P)
    perp_W1: np.ndarray  # (B,)
    perp_W2: np.ndarray  # (B,)
    basis: Basis

    def full(self) -> tuple[np.ndarray, np.ndarray]:
        """(Z (B, P, d, K), V (B, d, K))."""
        return self.basis.lift(self.Z), self.basis.lift(self.V)

    def in_basis(self, basis: Basis) -> "FlowState":
        Z, V = self.full()
        return replace(self, Z=basis.project(Z), V=basis.project(V), basis=basis)


def compress(p: Problem, q: Params, k: Kernel | None = None) -> FlowState:
    """The flow state of `q` in the identity basis."""
    k = kernel(p) if k is None else k
    Z, V, c = q.M @ p.keys, q.W1 @ p.keys, couplings(p, q.W2)
    c_ood = couplings(p, q.W2, p.ood_pairs)
    par_M = np.einsum("bpdk,kl,bpdl->bp", Z, k.H, Z)
    par_W1 = np.einsum("bdk,kl,bdl->b", V, k.H, V)
    par_W2 = np.einsum("bp,pq,bq->b", c, k.Kc_pinv, c)
    ident = identity_basis(p, k)
    return FlowState(ident.project(Z), ident.project(V), c, c_ood, np.zeros(len(c)),
                     np.maximum(np.sum(q.M**2, axis=(-2, -1)) - par_M, 0),
                     np.maximum(np.sum(q.W1**2, axis=(1, 2)) - par_W1, 0),
                     np.maximum(np.sum(q.W2**2, axis=(1, 2)) - par_W2, 0), ident)


def _targets(p: Problem, basis: Basis, ood: bool = False) -> np.ndarray:
    """Targets in coordinates, (B or 1, P, n); held-out targets need not lie in S, but only
    their inner products with V are used, which the projection keeps exactly."""
    Y = p.ood_targets if ood else p.targets
    return basis.project(np.broadcast_to(Y, (1 if basis.Q is None else len(basis.Q), *Y.shape)))


def observables(p: Problem, s: FlowState, k: Kernel) -> dict:
    """x, rho, reasoning fraction, the spec's m and r, loss and held-out reasoning."""
    B = s.basis
    y = _targets(p, B)
    yn = np.sum(p.targets**2)
    R = s.Z + s.c[..., None] * s.V[:, None] - y
    x = np.einsum("bpn,bpn->b", s.Z, np.broadcast_to(y, s.Z.shape)) / yn
    rho = np.einsum("bp,bn,bpn->b", s.c, s.V, np.broadcast_to(y, s.Z.shape)) / yn
    shrink = np.exp(-2 * s.decay)
    m2 = s.perp_M * shrink[:, None] + np.einsum("bpn,bpn->bp", s.Z, B.times(s.Z, "H"))
    w1 = s.perp_W1 * shrink + np.einsum("bn,bn->b", s.V, B.times(s.V, "H"))
    w2 = s.perp_W2 * shrink + np.einsum("bp,pq,bq->b", s.c, k.Kc_pinv, s.c)
    out = {"x": x, "rho": rho, "reasoning_fraction": reasoning_fraction(x, rho),
           "m": np.mean(np.sqrt(m2), axis=1), "r": np.sqrt(w1 * w2),
           "loss": 0.5 * p.alpha * np.einsum("bpn,bpn->b", R, R)}
    if len(p.ood_pairs):
        yo = np.broadcast_to(_targets(p, B, ood=True), (len(s.V), *p.ood_targets.shape[:1], s.V.shape[-1]))
        out["ood_rho"] = np.einsum("bo,bn,bon->b", s.c_ood, s.V, yo) / np.sum(p.ood_targets**2)
    return out


def _pack(s: FlowState) -> np.ndarray:
    return np.concatenate([s.Z.ravel(), s.V.ravel(), s.c.ravel(), s.c_ood.ravel(), s.decay])


def _unpack(y: np.ndarray, like: FlowState) -> FlowState:
    parts, at = [], 0
    for a in (like.Z, like.V, like.c, like.c_ood, like.decay):
        parts.append(y[at:at + a.size].reshape(a.shape))
        at += a.size
    return FlowState(*parts, like.perp_M, like.perp_W1, like.perp_W2, like.basis)


def _rhs(p: Problem, k: Kernel, like: FlowState, lam: np.ndarray, train_memorization: bool, y: np.ndarray):
    """Right-hand side in coordinates; y: the targets in them (`_targets`)."""
    a = p.alpha
    mem = 1.0 if train_memorization else 0.0

    def f(_t, state):
        s = _unpack(state, like)
        R = s.Z + s.c[..., None] * s.V[:, None] - y
        RG = like.basis.times(R, "G")
        g = a * (R @ s.V[:, :, None])[..., 0]
        dZ = (-a * RG - lam[:, None, None] * s.Z) * mem
        dV = -a * (s.c[:, None, :] @ RG)[:, 0] - lam[:, None] * s.V
        dc = -g @ k.Kc - lam[:, None] * s.c
        dco = -g @ k.Kc_ood.T - lam[:, None] * s.c_ood
        return np.concatenate([dZ.ravel(), dV.ravel(), dc.ravel(), dco.ravel(), lam])
    return f


def integrate_flow(p: Problem, q: Params, schedules, eta: float, eval_steps,
                   rtol: float = 1e-6, atol: float = 1e-9, method: str = "RK45",
                   train_memorization: bool = True, progress=None, subspace: bool = True):
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
    if subspace:    # exact: the flow cannot leave this span (see `Basis`); False keeps d x K coordinates
        state = state.in_basis(invariant_basis(p, *state.full(), k))
    y_coords = _targets(p, state.basis)
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
        sol = solve_ivp(_rhs(p, k, state, lam, train_memorization, y_coords), (a * eta, b * eta), y, method=method,
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
