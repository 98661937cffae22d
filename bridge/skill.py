"""Skill of a prediction over trivial baselines: per-cell edge errors and per-run Brier and AUC, each with a
paired bootstrap interval, so a hit that a constant also gets is not counted as skill.

Per cell the error is |log2((p + PAD) / (m + PAD))| between predicted and measured left edges in steps (PAD keeps
an edge at step 0 finite); "no window" counts as an edge at NO_WINDOW steps, twice the last onset measured.
Per run the outcome is "composes" (final OOD accuracy >= COMPOSES); a method gives P(composes) for each run.
Skill is the baseline's error minus the method's (for AUC: the method's minus the baseline's), so > 0 is better.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize

from critwin.errors import ConfigError

PAD = 25.0            # steps added to both edges before the log ratio: one bisection step of Theory II
NO_WINDOW = 1600.0    # "no window" as an edge: twice the panel's last onset
COMPOSES = 0.5        # a run composes when its final OOD accuracy reaches this
LEVEL = 0.90          # bootstrap interval
RESAMPLES = 2000
MIN_CLUSTERS = 8      # below this many clusters the interval is printed but no verdict is drawn


def edge_steps(edge) -> float:
    """An edge in steps, with None ("no window") as NO_WINDOW."""
    if edge is None:
        return NO_WINDOW
    edge = float(edge)
    if not math.isfinite(edge) or edge < 0:
        raise ConfigError("edge", edge, "a step >= 0, or None for no window")
    return edge


def edge_error(predicted, measured) -> float:
    """|log2((p + PAD) / (m + PAD))|, "no window" (None) as NO_WINDOW steps."""
    return abs(math.log2((edge_steps(predicted) + PAD) / (edge_steps(measured) + PAD)))


def crossing(onsets, outcome, level: float = COMPOSES):
    """The first upward crossing of `level` by an outcome curve over increasing onsets, linearly interpolated
    between the two grid points that bracket it; 0 when the first onset already reaches it; None when none does."""
    x, y = np.asarray(onsets, float), np.asarray(outcome, float)
    if x.ndim != 1 or x.shape != y.shape or len(x) == 0 or np.any(np.diff(x) <= 0):
        raise ConfigError("onsets", list(x), "increasing onsets, one outcome each")
    if y[0] >= level:
        return float(x[0])
    for i in range(1, len(x)):
        if y[i] >= level > y[i - 1]:
            return float(x[i - 1] + (level - y[i - 1]) / (y[i] - y[i - 1]) * (x[i] - x[i - 1]))
    return None


def brier(p, y) -> float:
    p, y = np.asarray(p, float), np.asarray(y, float)
    return float(np.mean((p - y) ** 2))


def auc(p, y) -> float:
    """P(a composing run is ranked above a non-composing one), ties counting one half; nan with one class."""
    p, y = np.asarray(p, float), np.asarray(y, bool)
    pos, neg = p[y], p[~y]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


RELIABILITY_BINS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)


def reliability(p, y, bins=RELIABILITY_BINS) -> list[dict]:
    """Calibration of probabilities `p` for outcomes `y`: per bin of p ([0, 0.1], then (lo, hi]) the runs in it, their
    mean p and the fraction with y true, so a reader sees where a method is over- or under-confident."""
    p, y = np.asarray(p, float), np.asarray(y, bool)
    out = []
    for k, (lo, hi) in enumerate(zip(bins[:-1], bins[1:])):
        inside = (p >= lo if k == 0 else p > lo) & (p <= hi)
        n = int(inside.sum())
        out.append({"bin": f"{'[' if k == 0 else '('}{lo:g}, {hi:g}]", "n": n,
                    "predicted": float(p[inside].mean()) if n else float("nan"),
                    "observed": float(y[inside].mean()) if n else float("nan")})
    return out


class OnsetLogistic:
    """Onset alone: P(composes) = sigmoid(a + b * onset / 100), fitted by maximum likelihood on build runs."""

    def fit(self, onsets, composes) -> "OnsetLogistic":
        x, y = np.asarray(onsets, float) / 100.0, np.asarray(composes, float)
        if len(x) < 2 or len(np.unique(y)) < 2:
            raise ConfigError("build runs", len(x), "at least one composing and one non-composing run")

        def nll(w):
            z = w[0] + w[1] * x
            return float(np.sum(np.logaddexp(0.0, z) - y * z))

        self.coef_ = minimize(nll, np.zeros(2), method="BFGS").x
        return self

    def predict_proba(self, onsets) -> np.ndarray:
        z = self.coef_[0] + self.coef_[1] * np.asarray(onsets, float) / 100.0
        return 1.0 / (1.0 + np.exp(-z))

    def edge(self):
        """The onset where the fitted probability crosses 1/2 upwards (None if it never does for onsets >= 0)."""
        a, b = self.coef_
        if b <= 0:
            return 0.0 if a >= 0 else None
        return max(0.0, -a / b * 100.0)


def nearest_cell(cell: dict, build: list[dict]) -> dict:
    """The build cell nearest to `cell`: the same optimizer first, then the smallest distance in
    (gamma / 0.3, log2 lambda / 2), so a step of 0.3 in gamma weighs as a factor 4 in lambda."""
    if not build:
        raise ConfigError("build cells", 0, "at least one build cell")

    def dist(b):
        return ((b["optimizer"] != cell["optimizer"]) * 1e6
                + math.hypot((b["gamma"] - cell["gamma"]) / 0.3, math.log2(b["lambda"] / cell["lambda"]) / 2))
    return min(build, key=dist)


def bootstrap_skill(clusters, skill_of, level: float = LEVEL, resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """skill_of(item indices) -> skill on those items; its value on all items and a bootstrap interval that
    resamples whole clusters (the items of one cell, or of one cell's task instance, move together).
    Resamples where the skill is undefined (an AUC with one class) are dropped."""
    clusters = np.asarray(clusters)
    keys = np.unique(clusters)
    index = [np.flatnonzero(clusters == k) for k in keys]
    point = float(skill_of(np.arange(len(clusters))))
    rng = np.random.default_rng(seed)
    draws = np.array([skill_of(np.concatenate([index[i] for i in rng.integers(0, len(keys), len(keys))]))
                      for _ in range(resamples)], float)
    draws = draws[np.isfinite(draws)]
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2]) if len(draws) else (float("nan"),) * 2
    if len(keys) < MIN_CLUSTERS:
        verdict = f"too few clusters ({len(keys)} < {MIN_CLUSTERS})"
    else:
        verdict = "skill" if lo > 0 else ("worse" if hi < 0 else "no skill shown")
    return {"skill": point, "lo": float(lo), "hi": float(hi), "clusters": int(len(keys)), "verdict": verdict}


def error_skill(clusters, base_err, method_err, **kw) -> dict:
    """Mean error of the baseline minus the method's (edge errors, Brier terms), > 0 where the method is better."""
    base_err, method_err = np.asarray(base_err, float), np.asarray(method_err, float)
    return bootstrap_skill(clusters, lambda i: base_err[i].mean() - method_err[i].mean(), **kw)


def auc_skill(clusters, composes, p_method, p_base, **kw) -> dict:
    """AUC of the method minus the baseline's, > 0 where the method ranks runs better."""
    y, pm, pb = np.asarray(composes, bool), np.asarray(p_method, float), np.asarray(p_base, float)
    return bootstrap_skill(clusters, lambda i: auc(pm[i], y[i]) - auc(pb[i], y[i]), **kw)


__all__ = ["COMPOSES", "LEVEL", "MIN_CLUSTERS", "NO_WINDOW", "PAD", "OnsetLogistic", "auc", "auc_skill", "brier",
           "bootstrap_skill", "crossing", "edge_error", "edge_steps", "error_skill", "nearest_cell"]
