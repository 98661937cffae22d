"""The held share calibrated on measured runs, per optimizer: P(composes) = sigmoid(a + b logit(held) + c log2(lambda /
8e-3)), where held is a run's running maximum of the composition model's held share at the onset (bridge.panel);
for the optimizers named in `train_terms`, plus d tr + e tr log2(lambda / 8e-3), tr the run's own training accuracy
at the onset (how far memorisation, the fast rate, has gone).

Why: read raw, the held share is SGD's rule (Brier 0.10 on the panel's SGD runs) but not AdamW's, whose runs compose
under lambda 3.2e-2 with a held share near 0.3. The fit keeps the rate equations' ordering (more held, more composing)
and learns each optimizer's level and lambda dependence from earlier cells' penalised runs, never from the cells it
is scored on. A ridge of 1/2 (b^2 + c^2 + ...) keeps the fit finite where build runs separate. Under AdamW at lambda
3.2e-2 a window composes once it opens after the run has fitted its training set, hence the training-accuracy terms.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from critwin.errors import ConfigError

CLIP = 0.01          # held shares are clipped to [CLIP, 1 - CLIP] before the logit: 0 and 1 are reached
LAMBDA_REF = 8e-3    # log2(lambda / LAMBDA_REF): the panel's middle lambda reads as 0
RIDGE = 1.0


def features(held, lam, train=None) -> np.ndarray:
    """(logit of the clipped held share, log2 lambda / LAMBDA_REF) per run; with `train` (training accuracy at the
    onset) also (train, train * log2 lambda / LAMBDA_REF)."""
    h = np.clip(np.asarray(held, float), CLIP, 1.0 - CLIP)
    lam = np.broadcast_to(np.asarray(lam, float), h.shape)
    if (lam <= 0).any():
        raise ConfigError("lambda", float(lam.min()), "positive")
    cols = [np.log(h / (1.0 - h)), np.log2(lam / LAMBDA_REF)]
    if train is not None:
        tr = np.broadcast_to(np.asarray(train, float), h.shape)
        cols += [tr, tr * cols[1]]
    return np.column_stack(cols)


class HeldLogistic:
    """One optimizer's calibration, fitted by ridge-penalised maximum likelihood (the intercept unpenalised); with
    train=True it also reads the training accuracy at the onset."""
    NAMES = ("intercept", "logit_held", "log2_lambda", "train_acc", "train_acc_x_log2_lambda")

    def __init__(self, train: bool = False):
        self.train = train

    def _x(self, held, lam, train):
        if self.train and train is None:
            raise ConfigError("train_acc", None, "the runs' training accuracy at the onset (this calibration reads it)")
        return features(held, lam, train if self.train else None)

    def fit(self, held, lam, composes, train=None) -> "HeldLogistic":
        x, y = self._x(held, lam, train), np.asarray(composes, float)
        if len(y) < 2 or len(np.unique(y)) < 2:
            raise ConfigError("build runs", len(y), "at least one composing and one non-composing run")
        X = np.column_stack([np.ones(len(y)), x])

        def loss(w):
            z = X @ w
            return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * RIDGE * np.sum(w[1:] ** 2))

        def grad(w):
            p = 1.0 / (1.0 + np.exp(-(X @ w)))
            return X.T @ (p - y) + RIDGE * np.r_[0.0, w[1:]]

        self.coef_ = minimize(loss, np.zeros(X.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-8}).x
        self.n_ = len(y)
        return self

    def predict_proba(self, held, lam, train=None) -> np.ndarray:
        z = self.coef_[0] + self._x(held, lam, train) @ self.coef_[1:]
        return 1.0 / (1.0 + np.exp(-z))


class CalibratedHeld:
    """A HeldLogistic per optimizer, fitted on build runs with columns optimizer, lambda, held_max, composes (and
    train_acc, for the optimizers in `train_terms`)."""

    def __init__(self, train_terms=()):
        self.train_terms = tuple(train_terms)

    def fit(self, runs: pd.DataFrame) -> "CalibratedHeld":
        need = {"optimizer", "lambda", "held_max", "composes"} | ({"train_acc"} if self.train_terms else set())
        missing = need - set(runs.columns)
        if missing:
            raise ConfigError("build runs", ", ".join(sorted(missing)), "columns " + ", ".join(sorted(need)))
        self.models_ = {}
        for o, g in runs.groupby("optimizer"):
            train = o in self.train_terms
            self.models_[o] = HeldLogistic(train).fit(g["held_max"], g["lambda"], g["composes"],
                                                      g["train_acc"] if train else None)
        return self

    def predict_proba(self, optimizer: str, held, lam, train=None) -> np.ndarray:
        if optimizer not in self.models_:
            raise ConfigError("optimizer", optimizer, "one the build runs hold: " + ", ".join(sorted(self.models_)))
        return self.models_[optimizer].predict_proba(held, lam, train)

    @classmethod
    def from_coefficients(cls, coefficients: dict, train_terms=()) -> "CalibratedHeld":
        """The calibration a registration recorded (`coefficients()`), to predict with it again unrefitted."""
        self = cls(train_terms)
        self.models_ = {}
        for o, c in coefficients.items():
            m = HeldLogistic(o in self.train_terms)
            names = HeldLogistic.NAMES[:5 if m.train else 3]
            missing = [n for n in names if n not in c]
            if missing:
                raise ConfigError(f"coefficients[{o!r}]", ", ".join(missing), "keys " + ", ".join(names))
            m.coef_, m.n_ = np.array([c[n] for n in names], float), int(c.get("runs", 0))
            self.models_[o] = m
        return self

    def coefficients(self) -> dict:
        """{optimizer: {intercept, logit_held, log2_lambda[, train_acc, train_acc_x_log2_lambda], runs}} for the
        registration's record."""
        return {o: {**dict(zip(HeldLogistic.NAMES, map(float, m.coef_))), "runs": m.n_} for o, m in self.models_.items()}
