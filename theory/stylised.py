"""The stylised model in full parameters: init, loss, gradients, order parameters.

f_ijk = M_ij e_k + c_ij W1 e_k with c_ij = u_j^T W2 u_i; every array carries a leading
batch axis B (seeds, onsets or gammas run side by side).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from critwin.theory.setting import Problem

NAMES = ("M", "W1", "W2")


@dataclass
class Params:
    """Trainable tensors: M (B, P, d, d), W1 (B, d, d), W2 (B, d, d)."""

    M: np.ndarray
    W1: np.ndarray
    W2: np.ndarray

    def arrays(self):
        return (self.M, self.W1, self.W2)

    def copy(self) -> "Params":
        return Params(*(a.copy() for a in self.arrays()))


def init_params(p: Problem, gamma, seeds) -> Params:
    """Entries ~ N(0, gamma^2/d), one independent draw per (gamma, seed) batch member."""
    seeds = np.atleast_1d(seeds)
    gamma = np.broadcast_to(np.asarray(gamma, dtype=float), seeds.shape)
    d, P = p.keys.shape[0], len(p.pairs)
    out = {n: [] for n in NAMES}
    for g, s in zip(gamma, seeds):
        rng = np.random.default_rng(np.random.SeedSequence([int(s), 7919]))
        std = g / np.sqrt(d)
        out["M"].append(rng.standard_normal((P, d, d)) * std)
        out["W1"].append(rng.standard_normal((d, d)) * std)
        out["W2"].append(rng.standard_normal((d, d)) * std)
    return Params(*(np.stack(out[n]) for n in NAMES))


def couplings(p: Problem, W2: np.ndarray, pairs: np.ndarray | None = None) -> np.ndarray:
    """c_ij = u_j^T W2 u_i for each pair, shape (B, P)."""
    pairs = p.pairs if pairs is None else pairs
    U = p.anchors
    return np.einsum("dp,bde,ep->bp", U[:, pairs[:, 1]], W2, U[:, pairs[:, 0]])


def residuals(p: Problem, q: Params):
    """(R, c, V): residuals f - y (B, P, d, K), couplings, and V = W1 E."""
    c = couplings(p, q.W2)
    V = q.W1 @ p.keys
    R = q.M @ p.keys + c[..., None, None] * V[:, None] - p.targets
    return R, c, V


def loss_and_grads(p: Problem, q: Params, weights: np.ndarray | None = None, out: Params | None = None):
    """Data loss alpha * sum 1/2 |f - y|^2 per batch member and its gradients (no decay).

    `weights` (P, K), optional, reweights examples (minibatch masks for SGD). `out`, optional,
    receives the gradients (the same floats, without allocating the large gM every step).
    """
    R, c, V = residuals(p, q)
    Rw = R if weights is None else R * weights[None, :, None, :]
    a, E, U, i, j = p.alpha, p.keys, p.anchors, p.pairs[:, 0], p.pairs[:, 1]
    o = Params(None, None, None) if out is None else out
    loss = 0.5 * a * np.einsum("bpdk,bpdk->b", R, Rw)
    gM = np.matmul(a * Rw, E.T, out=o.M)
    gW1 = np.matmul(a * np.einsum("bp,bpdk->bdk", c, Rw), E.T, out=o.W1)
    gc = a * np.einsum("bpdk,bdk->bp", Rw, V)
    gW2 = np.einsum("bp,dp,ep->bde", gc, U[:, j], U[:, i], out=o.W2)
    return loss, Params(gM, gW1, gW2)


def order_parameters(p: Problem, q: Params) -> dict:
    """Spec's m, r and the explained fractions x (memorization) and rho (reasoning)."""
    R, c, V = residuals(p, q)
    Y = p.targets
    ynorm = np.sum(Y**2)
    x = np.einsum("bpdk,pdk->b", q.M @ p.keys, Y) / ynorm
    rho = np.einsum("bp,bdk,pdk->b", c, V, Y) / ynorm
    m = np.mean(np.sqrt(np.sum(q.M**2, axis=(-2, -1))), axis=1)
    r = np.sqrt(np.sum(q.W1**2, axis=(1, 2)) * np.sum(q.W2**2, axis=(1, 2)))
    loss = 0.5 * p.alpha * np.einsum("bpdk,bpdk->b", R, R)
    return {"x": x, "rho": rho, "m": m, "r": r, "loss": loss, **ood_observables(p, q)}


def ood_observables(p: Problem, q: Params) -> dict:
    """Held-out pairs have no M_ij: only the shared path answers them."""
    if len(p.ood_pairs) == 0:
        nan = np.full(q.W1.shape[0], np.nan)
        return {"ood_rho": nan, "ood_loss": nan}
    c = couplings(p, q.W2, p.ood_pairs)
    V = q.W1 @ p.keys
    F = c[..., None, None] * V[:, None]
    Y = p.ood_targets
    return {"ood_rho": np.einsum("bpdk,pdk->b", F, Y) / np.sum(Y**2),
            "ood_loss": 0.5 * np.mean(np.sum((F - Y) ** 2, axis=2), axis=(1, 2))}


def reasoning_fraction(x, rho):
    """rho / (x + rho), the share of the explained target carried by the shared path."""
    x, rho = np.maximum(x, 0), np.maximum(rho, 0)
    return rho / np.maximum(x + rho, 1e-12)
