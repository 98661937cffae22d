"""The stylised two-layer attention model's setting and its fixed data.

A `StylisedSetting` is a frozen, validated config; `build_problem` turns it into the
embeddings, training/held-out pairs and targets the rate equations and flows use.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from critwin.errors import ConfigError

EMBEDDINGS = ("orthonormal", "unit", "gaussian")
SIGMA_DEFS = ("gram", "gram_mean", "literal")
LOSS_NORMS = ("sum", "pair", "mean")
TARGETS = ("teacher", "permutation")


@dataclass(frozen=True)
class StylisedSetting:
    """Sizes, init scale and optimizer constants of the stylised model.

    gamma multiplies the fan-in std (entries ~ N(0, gamma^2/d)): larger = bigger init.
    loss_norm sets alpha in L = alpha * sum_pairs sum_keys 1/2 |f - y|^2:
    "sum" alpha = 1, "pair" alpha = 1/K, "mean" alpha = 1/(|P| K) (the spec's L).
    sigma_def picks which key-Gram eigenvalue is called sigma_e (see `rates.sigma_e`).
    """

    d: int = 64
    keys: int = 16
    anchors: int = 8
    train_pairs: int = 45
    gamma: float = 0.8
    eta: float = 3e-3
    delta: float = 0.5
    seed: int = 0
    embeddings: str = "orthonormal"
    sigma_def: str = "gram"
    loss_norm: str = "sum"
    targets: str = "teacher"

    def __post_init__(self):
        for name in ("d", "keys", "anchors", "train_pairs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(name, v, "a positive integer")
        if self.anchors < 2:
            raise ConfigError("anchors", self.anchors, "at least 2")
        if self.train_pairs > self.anchors**2:
            raise ConfigError("train_pairs", self.train_pairs,
                              f"at most anchors^2 = {self.anchors ** 2} ordered pairs")
        if self.train_pairs * 2 < self.anchors:
            raise ConfigError("train_pairs", self.train_pairs,
                              f"at least anchors/2 = {self.anchors / 2:g} so every anchor is trained")
        check_gamma(self.gamma)
        if not (np.isfinite(self.eta) and self.eta > 0):
            raise ConfigError("eta", self.eta, "a learning rate > 0")
        if not (0 < self.delta <= 0.5):
            raise ConfigError("delta", self.delta, "a window threshold in (0, 1/2] (1/2 gives half-times)")
        if self.seed < 0:
            raise ConfigError("seed", self.seed, "a non-negative integer")
        for name, allowed in (("embeddings", EMBEDDINGS), ("sigma_def", SIGMA_DEFS),
                              ("loss_norm", LOSS_NORMS), ("targets", TARGETS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(name, getattr(self, name), "one of " + ", ".join(allowed))
        if self.embeddings == "orthonormal" and max(self.keys, self.anchors) > self.d:
            raise ConfigError("embeddings", self.embeddings,
                              f"orthonormal needs keys and anchors <= d = {self.d}; use unit or gaussian")

    @property
    def alpha(self) -> float:
        """Loss prefactor alpha of the chosen normalisation."""
        return {"sum": 1.0, "pair": 1.0 / self.keys,
                "mean": 1.0 / (self.train_pairs * self.keys)}[self.loss_norm]

    def with_(self, **changes) -> "StylisedSetting":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


def multiplier_from_exponent(gamma_exp, d_in):
    """Exponent-form init std = d_in^-g as the multiplier-form gamma (std = gamma/sqrt(d_in))."""
    return np.asarray(d_in, dtype=float) ** (0.5 - np.asarray(gamma_exp, dtype=float))


def exponent_from_multiplier(gamma_mult, d_in):
    """Inverse of `multiplier_from_exponent`."""
    return 0.5 - np.log(np.asarray(gamma_mult, dtype=float)) / np.log(np.asarray(d_in, dtype=float))


def check_gamma(gamma) -> None:
    g = np.asarray(gamma, dtype=float)
    if g.size == 0 or not np.all(np.isfinite(g)) or np.any(g <= 0):
        shown = g.tolist() if g.ndim else float(g)
        raise ConfigError("gamma", shown, "init scale(s) gamma > 0 (finite)")


@dataclass(frozen=True)
class Problem:
    """Fixed data of one stylised instance (all arrays float64)."""

    keys: np.ndarray        # E, (d, K), columns e_k
    anchors: np.ndarray     # U, (d, M), columns u_i
    pairs: np.ndarray       # (P, 2) training ordered pairs (i, j)
    ood_pairs: np.ndarray   # (M^2 - P, 2) held-out pairs
    targets: np.ndarray     # (P, d, K) target columns y for each training pair
    ood_targets: np.ndarray  # (M^2 - P, d, K)
    alpha: float


def pair_gram(p: Problem, a: np.ndarray | None = None, b: np.ndarray | None = None) -> np.ndarray:
    """<b_p, b_q> for b_p = u_j u_i^T, pairs p in `a` against q in `b` (default: the training
    pairs): (u_j . u_j')(u_i . u_i'). The couplings c_p = <b_p, W2> move through this kernel."""
    a = p.pairs if a is None else a
    b = p.pairs if b is None else b
    U = p.anchors
    return (U[:, a[:, 1]].T @ U[:, b[:, 1]]) * (U[:, a[:, 0]].T @ U[:, b[:, 0]])


def _vectors(rng, d: int, n: int, kind: str) -> np.ndarray:
    x = rng.standard_normal((d, n))
    if kind == "orthonormal":
        q, r = np.linalg.qr(x)
        return q * np.sign(np.diag(r))
    if kind == "unit":
        return x / np.linalg.norm(x, axis=0, keepdims=True)
    return x / np.sqrt(d)


def _split_pairs(rng, m: int, n_train: int) -> tuple[np.ndarray, np.ndarray]:
    """Random ordered pairs (i = j included) such that every anchor is trained."""
    all_pairs = np.array([(i, j) for i in range(m) for j in range(m)])
    for _ in range(10_000):
        order = rng.permutation(len(all_pairs))
        train = all_pairs[np.sort(order[:n_train])]
        if len(np.unique(train)) == m:
            return train, all_pairs[np.sort(order[n_train:])]
    raise ConfigError("train_pairs", n_train, "enough pairs to cover every anchor")


def build_problem(s: StylisedSetting) -> Problem:
    """Draw embeddings, pairs and targets deterministically from `s.seed`."""
    r_keys, r_anch, r_pairs, r_targ = (np.random.default_rng(c)
                                       for c in np.random.SeedSequence(s.seed).spawn(4))
    E = _vectors(r_keys, s.d, s.keys, s.embeddings)
    U = _vectors(r_anch, s.d, s.anchors, s.embeddings)
    train, ood = _split_pairs(r_pairs, s.anchors, s.train_pairs)
    if s.targets == "permutation":
        perms = np.array([r_targ.permutation(s.keys) for _ in range(s.anchors)])

        def make(pairs):
            return np.stack([E[:, perms[j][perms[i]]] for i, j in pairs]) if len(pairs) else \
                np.zeros((0, s.d, s.keys))
    else:
        # A planted shared path: y = c*_ij W1* e_k, with W1* orthogonal and mean c*^2 = 1.
        w1 = _vectors(r_targ, s.d, s.d, "orthonormal")
        w2 = r_targ.standard_normal((s.d, s.d))
        cstar = np.einsum("ai,ab,bj->ij", U, w2, U)  # cstar[j, i] = u_j^T W2* u_i
        cstar /= np.sqrt(np.mean(cstar**2))
        V = w1 @ E

        def make(pairs):
            return np.stack([cstar[j, i] * V for i, j in pairs]) if len(pairs) else \
                np.zeros((0, s.d, s.keys))
    return Problem(E, U, train, ood, make(train), make(ood), s.alpha)
