"""Predicted learning stages from a task's own statistics: the exact gradient flow of a linear readout.

A linear map W from context features x to output scores, trained by gradient flow on the
squared loss from zero (scores centred on the mean target ym),

    dW/dt = S_yx - W S_xx,   W(0) = 0   =>   W(t) = S_yx E diag((1 - exp(-l_k t)) / l_k) E^T,

with S_xx = E diag(l) E^T the feature covariance and S_yx the target-feature cross-covariance
(Saxe et al.'s linear-network analysis in its one-layer form: each eigen-direction of the
features is learned on its own timescale 1 / l_k). The prediction at time t is the argmax of
ym + W(t) (x - mx): what a readout has learned when only the directions with l_k t >~ 1 are in.
The events a task defines on predictions (Alchemy's A, B, C) then have predicted curves; a
stage's predicted time is when its curve first reaches the stage's level (the paper's rule),
and, for curves that rise without getting there, when they have risen half-way.

Time is in units of the inverse feature variance (one unit = 1 / (learning rate * ...)): only
orders and ratios of times are predictions, not epochs.
"""
from __future__ import annotations

import numpy as np

from critwin.errors import ConfigError


class LinearReadoutFlow:
    """fit(X, Y) from training features and one-hot (or real) targets; scores(X, t) at flow time t."""

    def __init__(self, ridge: float = 0.0):
        if not (np.isfinite(ridge) and ridge >= 0):
            raise ConfigError("ridge", ridge, "a covariance ridge >= 0")
        self.ridge = ridge

    def fit(self, X, Y) -> "LinearReadoutFlow":
        X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
        if X.ndim != 2 or Y.ndim != 2 or len(X) != len(Y) or len(X) < 2:
            raise ConfigError("X", getattr(X, "shape", None), "features (n, p) and targets (n, k) with the same n >= 2")
        self.mx_, self.my_ = X.mean(0), Y.mean(0)
        Xc = X - self.mx_
        cov = Xc.T @ Xc / len(X) + self.ridge * np.eye(X.shape[1])
        lam, self.E_ = np.linalg.eigh(cov)
        self.l_ = np.clip(lam, 0.0, None)
        self.B_ = ((Y - self.my_).T @ Xc / len(X)) @ self.E_     # S_yx in the eigenbasis
        return self

    def weights(self, t: float) -> np.ndarray:
        """W(t), (k, p)."""
        if not (np.isfinite(t) and t >= 0):
            raise ConfigError("t", t, "a flow time >= 0")
        pos = self.l_ > 1e-12
        g = np.where(pos, -np.expm1(-self.l_ * t) / np.where(pos, self.l_, 1.0), t)
        return (self.B_ * g) @ self.E_.T

    def scores(self, X, t: float) -> np.ndarray:
        return self.my_ + (np.asarray(X, dtype=float) - self.mx_) @ self.weights(t).T

    def predict(self, X, t: float) -> np.ndarray:
        return np.argmax(self.scores(X, t), axis=1)

    def timescales(self) -> np.ndarray:
        """1 / l_k of the directions that carry target signal (nonzero S_yx), fastest first."""
        carry = np.linalg.norm(self.B_, axis=0) > 1e-12 * max(1.0, np.abs(self.B_).max())
        return np.sort(1.0 / self.l_[carry & (self.l_ > 1e-12)])


def flow_times(t_min: float = 1e-2, t_max: float = 1e6, n: int = 81) -> np.ndarray:
    if not (0 < t_min < t_max) or n < 2:
        raise ConfigError("times", (t_min, t_max, n), "0 < t_min < t_max and at least 2 points")
    return np.geomspace(t_min, t_max, n)


def half_rise_time(times, curve) -> float:
    """First time the curve has covered half its net change from its first to its last value
    (nan when it does not rise by at least 0.02: no stage)."""
    t, c = np.asarray(times, dtype=float), np.asarray(curve, dtype=float)
    if c[-1] - c[0] < 0.02:
        return float("nan")
    return float(t[np.argmax(c - c[0] >= 0.5 * (c[-1] - c[0]))])


def stage_order(times: dict) -> str:
    """'A < B = C': stages by time, ties (equal times) joined by '='; never-reached (nan) ones left out."""
    done = sorted((v, k) for k, v in times.items() if np.isfinite(v))
    out = ""
    for i, (v, k) in enumerate(done):
        out += ("" if i == 0 else " = " if v == done[i - 1][0] else " < ") + k
    return out
