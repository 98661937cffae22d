"""Rates of the stylised model: the paper's recipe and the derived constants.

`derive.py` proves the formulas used here symbolically; this file evaluates them on a
`Problem`. Every function is vectorised over gamma.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from critwin.theory.setting import (
    Problem,
    StylisedSetting,
    build_problem,
    check_gamma,
    pair_gram,
)

SIGMA_DEF_TEXT = {
    "gram": "smallest nonzero eigenvalue of sum_k e_k e_k^T (= 1 for orthonormal keys)",
    "gram_mean": "smallest nonzero eigenvalue of G_e = (1/K) sum_k e_k e_k^T",
    "literal": "smallest eigenvalue of G_e (0 whenever K < d)",
}


def key_spectrum(E: np.ndarray) -> np.ndarray:
    """Nonzero eigenvalues of sum_k e_k e_k^T, ascending (read on the span of the keys)."""
    small = E.T @ E if E.shape[1] <= E.shape[0] else E @ E.T
    ev = np.linalg.eigvalsh(small)
    return ev[ev > 1e-10 * max(ev.max(), 1e-300)]


def sigma_e(E: np.ndarray, definition: str = "gram") -> float:
    """sigma_e under one of the three definitions in `SIGMA_DEF_TEXT`."""
    lam = key_spectrum(E)[0]
    d, K = E.shape
    if definition == "gram":
        return float(lam)
    if definition == "gram_mean":
        return float(lam / K)
    return 0.0 if K < d else float(lam / K)


def c_r(U: np.ndarray, pairs: np.ndarray) -> float:
    """c_r = (1 / (d |P|)) sum_(i,j) |u_i|^2 |u_j|^2 (= 1/d for unit anchors)."""
    n2 = np.sum(U**2, axis=0)
    return float(np.mean(n2[pairs[:, 0]] * n2[pairs[:, 1]]) / U.shape[0])


def reasoning_capacity(p: Problem) -> float:
    """Largest fraction of sum |Y_p|^2 that one shared path c_p W1 E can explain."""
    Y = p.targets.reshape(len(p.targets), -1)
    C = Y @ Y.T
    return float(np.linalg.eigvalsh(C)[-1] / np.trace(C))


def frozen_reach(p: Problem) -> float:
    """Fraction of sum |Y_p|^2 that c_p V explains at the best V when the couplings c are frozen
    at a random init (c ~ N(0, s^2 Kc), Kc_pq = <b_p, b_q>), as a ratio of expectations:
    sum_pq <Y_p, Y_q> Kc_pq / (tr Kc sum_p |Y_p|^2); exactly 1/|P| when Kc = I (orthonormal
    anchors). The paper's linear law (W2 frozen) can reach no more than this."""
    Kc = pair_gram(p)
    Y = p.targets.reshape(len(p.targets), -1)
    return float(np.sum((Y @ Y.T) * Kc) / (np.trace(Kc) * np.sum(Y**2)))


def bilinear_gain(p: Problem) -> float:
    """Top singular value G of the W1-W2 cross-Hessian of L at W1 = W2 = 0, M = 0.

    The bilinear path escapes its saddle at rate 2G (Saxe et al.): G sets the log(1/gamma)
    escape time, while mu_r below is the gamma^2 curvature with W2 frozen.
    """
    A = np.einsum("pdk,ek->pde", p.targets, p.keys).reshape(len(p.pairs), -1)   # vec(Y_p E^T)
    gram_a = A @ A.T
    ev = np.linalg.eigvals(gram_a @ pair_gram(p)).real                # pair_gram: <u_j u_i^T, u_j' u_i'^T>
    return float(p.alpha * np.sqrt(max(ev.max(), 0.0)))


def memorization_drive(p: Problem) -> float:
    """x'(0) of the memorization path from M = 0, x = <M E, Y> / |Y|^2 (the flow's explained
    fraction): alpha sum_p tr(Y_p E^T E Y_p^T) / sum_p |Y_p|^2. Every key mode contributes at
    its own rate; mu_m is only the slowest of them, and the reduced model runs at this average."""
    EtE = p.keys.T @ p.keys
    num = np.einsum("pdk,kl,pdl->", p.targets, EtE, p.targets)
    return float(p.alpha * num / np.sum(p.targets ** 2))


@dataclass(frozen=True)
class Rates:
    """All rate constants of one setting; gamma-dependent fields are arrays."""

    gamma: np.ndarray
    sigma_e: float              # under setting.sigma_def
    sigma_def: str
    c_r: float
    key_eig_min: float          # lambda_min+ of sum_k e_k e_k^T
    alpha: float
    paper_mu_m: float           # recipe: mu_m = sigma_e
    paper_mu_r: np.ndarray      # recipe: c_r gamma^2 sigma_e
    mu_m: float                 # derived: alpha * lambda_min+(E E^T), the slowest key mode
    mu_r: np.ndarray            # derived W1-block curvature (W2 frozen): alpha |P| c_r gamma^2 lambda_min+
    gain: float                 # bilinear escape gain G (gamma-independent)
    capacity: float             # reasoning-explainable fraction of the targets
    reach: float                # what the linear law (W2 frozen at a random init) can explain: min(capacity, ~1/|P|)
    rho0: np.ndarray            # initial explained fraction of the balanced reduced mode
    mu_r_drive: np.ndarray      # target-aligned drive of a random init: alpha c_r gamma^2 kappa, kappa = mu_m_drive / alpha
    mu_m_drive: float           # initial memorization speed x'(0) = alpha tr(Y E^T E Y^T) / |Y|^2: the reduced model's mu_m

    def row(self, k: int) -> dict:
        return {"gamma": float(self.gamma[k]), "sigma_e": self.sigma_e, "sigma_def": self.sigma_def,
                "c_r": self.c_r, "alpha": self.alpha, "paper_mu_m": self.paper_mu_m,
                "paper_mu_r": float(self.paper_mu_r[k]), "mu_m": self.mu_m,
                "mu_r": float(self.mu_r[k]), "mu_r_drive": float(self.mu_r_drive[k]),
                "mu_m_drive": self.mu_m_drive, "gain": self.gain, "capacity": self.capacity,
                "reach_w2_frozen": self.reach}


def compute_rates(s: StylisedSetting, gamma=None, problem: Problem | None = None) -> Rates:
    """Recipe and derived rates of `s` for one gamma or an array of them."""
    gamma = np.atleast_1d(np.asarray(s.gamma if gamma is None else gamma, dtype=float))
    check_gamma(gamma)
    p = build_problem(s) if problem is None else problem
    lam = float(key_spectrum(p.keys)[0])
    sig, cr = sigma_e(p.keys, s.sigma_def), c_r(p.anchors, p.pairs)
    n_pairs = len(p.pairs)
    mu_r = p.alpha * n_pairs * cr * gamma**2 * lam
    # A random coupling vector is aligned with the target couplings only to cos^2 ~ 1/|P|, so
    # the reasoning path's initial drive, averaged over inits, is the curvature over |P|, at the key
    # factor the targets actually start at: their average over the key modes, x'(0) / alpha (the
    # slowest mode lambda_min+ for orthonormal keys; for unit keys it made the drive ~4x too slow).
    mem_drive = memorization_drive(p)
    drive = mu_r / n_pairs * (mem_drive / p.alpha) / lam
    gain, cap = bilinear_gain(p), reasoning_capacity(p)
    return Rates(gamma=gamma, sigma_e=sig, sigma_def=s.sigma_def, c_r=cr, key_eig_min=lam,
                 alpha=p.alpha, paper_mu_m=sig, paper_mu_r=cr * gamma**2 * sig,
                 mu_m=p.alpha * lam, mu_r=mu_r, gain=gain, capacity=cap, reach=min(cap, frozen_reach(p)),
                 rho0=np.minimum(drive * cap / max(gain, 1e-300), cap), mu_r_drive=drive,
                 mu_m_drive=mem_drive)
