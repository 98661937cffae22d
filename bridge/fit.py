"""The fitted variant: fit a rate law's one free prefactor at some gammas, predict the others.

Each law fixes how a time scales with the init scale gamma; only its prefactor is fitted
(least squares in log time over the fit gammas), so the laws compete on shape alone:
  constant       t = a                 (memorization, mu_m = Theta(1))
  gamma^-2       t = a gamma^-2        (the paper's lazy rate mu_r = Theta(gamma^2))
  log(1/gamma)   t = a T_saxe(gamma)   (the bilinear path's escape, Saxe et al.; its shape is
                                        the theory's crossing time for the run's setting)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from critwin.theory.rates import compute_rates
from critwin.theory.reduced import crossing_times
from critwin.theory.setting import check_gamma

from critwin import theory as th
from critwin.errors import ConfigError

RATE_LAWS = ("constant", "gamma^-2", "log(1/gamma)")


def check_law(law: str) -> None:
    if law not in RATE_LAWS:
        raise ConfigError("law", law, ", ".join(RATE_LAWS))


def law_shape(law: str, gammas, setting: th.StylisedSetting) -> np.ndarray:
    """The law's time at each gamma up to its prefactor."""
    check_law(law)
    g = np.atleast_1d(np.asarray(gammas, dtype=float))
    check_gamma(g)
    if law == "constant":
        return np.ones_like(g)
    if law == "gamma^-2":
        return g ** -2.0
    r = compute_rates(setting, g)
    _, t2 = crossing_times(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, setting.delta, "bilinear")
    return t2 / setting.eta


@dataclass
class LawFit:
    """One law with its prefactor fitted to observed times (`fit`, then `predict`)."""

    law: str
    setting: th.StylisedSetting = field(default_factory=lambda: th.StylisedSetting(targets="permutation"))
    prefactor_: float = float("nan")

    def __post_init__(self):
        check_law(self.law)

    def fit(self, gammas, times) -> "LawFit":
        g, t = np.asarray(gammas, float), np.asarray(times, float)
        ok = np.isfinite(t) & (t > 0)
        if not ok.any():
            raise ConfigError("times", list(t), "at least one finite positive time to fit")
        self.prefactor_ = float(np.exp(np.mean(np.log(t[ok] / law_shape(self.law, g[ok], self.setting)))))
        return self

    def predict(self, gammas) -> np.ndarray:
        if not np.isfinite(self.prefactor_):
            raise RuntimeError("call fit() before predict()")
        return self.prefactor_ * law_shape(self.law, gammas, self.setting)


def held_out_test(table: pd.DataFrame, fit_gammas, laws=RATE_LAWS, setting: th.StylisedSetting | None = None) -> dict:
    """Fit each law on the rows at `fit_gammas`, predict every gamma, score the held-out ones.

    table: one row per run with columns gamma and value (a time in steps; nan = not reached).
    Score: mean |ln(predicted / observed mean)| over the held-out gammas (0 = exact; ln 2 = a
    factor of two off), and the mean absolute error in steps.
    """
    setting = setting or th.StylisedSetting(targets="permutation")
    fit_gammas = np.atleast_1d(np.asarray(fit_gammas, float))
    per = table.groupby("gamma")["value"].agg(
        observed="mean", sd=lambda v: v.std(ddof=1) if v.notna().sum() > 1 else 0.0,
        n="count", runs="size").reset_index()
    gam = per.gamma.to_numpy(float)
    is_fit = np.isclose(gam[:, None], fit_gammas[None, :]).any(axis=1)
    if not is_fit.any():
        raise ConfigError("fit_gamma", fit_gammas.tolist(), f"one of the observed gammas {gam.tolist()}")
    per["role"] = np.where(is_fit, "fit", "held-out")
    scores = {}
    grid = np.linspace(gam.min(), gam.max(), 40)
    curves = {"gamma": grid.tolist()}
    for law in laws:
        f = LawFit(law, setting).fit(gam[is_fit], per.observed.to_numpy()[is_fit])
        pred = f.predict(gam)
        curves[law] = f.predict(grid).tolist()
        per[f"pred {law}"] = pred
        per[f"error {law}"] = per.observed - pred
        test = ~is_fit & per.observed.notna().to_numpy()
        scores[law] = {"prefactor": f.prefactor_,
                       "mean_abs_log_error": float(np.mean(np.abs(np.log(pred[test] / per.observed[test]))))
                       if test.any() else float("nan"),
                       "mean_abs_error_steps": float(np.mean(np.abs(per.observed[test] - pred[test])))
                       if test.any() else float("nan")}
    finite = {k: v["mean_abs_log_error"] for k, v in scores.items() if np.isfinite(v["mean_abs_log_error"])}
    best = min(finite, key=finite.get) if finite else "n/a"
    slope = float(np.polyfit(np.log(gam[per.observed.notna()]), np.log(per.observed.dropna()), 1)[0]) \
        if per.observed.notna().sum() >= 2 else float("nan")
    return {"rows": per.to_dict(orient="records"), "scores": scores, "better_law": best, "curves": curves,
            "observed_log_slope": slope, "fit_gammas": fit_gammas.tolist(), "held_out": int((~is_fit).sum())}


def fit_columns(res: dict) -> list[str]:
    """Table columns of a held_out_test result: observed per gamma, then each law's prediction."""
    return ["gamma", "role", "n", "observed", "sd"] + [f"pred {law}" for law in res["scores"]]


def fit_summary(res: dict) -> str:
    """One line: each law's held-out error, the better law, the observed log-log slope."""
    return ("held-out mean |ln(pred/obs)|: " + ", ".join(
        f"{law} {v['mean_abs_log_error']:.3f}" for law, v in res["scores"].items())
        + f"; better: {res['better_law']}; observed d ln t / d ln gamma = {res['observed_log_slope']:.2f}")


def fit_store(store, quantity: str, fit_gamma: float = 0.8, **observed_options) -> tuple[list[dict], list[str]]:
    """held_out_test for every group of observed times in a store that has the fit gamma and
    another gamma; the theory's shapes use the runs' own d, eta and task sizes.

    Returns (results, reasons the other groups were skipped)."""
    from critwin.bridge.compare import setting_for
    from critwin.bridge.observed import observed_times
    from critwin.empirical import load_summaries
    tables = observed_times(store, quantity, **observed_options)
    summ = load_summaries(store, on_corrupt=observed_options.get("on_corrupt", "raise"))
    results, skipped = [], []
    for group, table in tables.items():
        name = " / ".join(group)
        if table.empty:
            skipped.append(f"{name}: no runs")
            continue
        if table.gamma.nunique() < 2:
            skipped.append(f"{name}: one gamma only ({table.gamma.iloc[0]:g}); nothing to hold out")
            continue
        if not table[np.isclose(table.gamma, fit_gamma)].value.mean() > 0:
            skipped.append(f"{name}: no observed time at the fit gamma {fit_gamma:g}")
            continue
        run = summ[np.isclose(summ.gamma, fit_gamma)].iloc[0].to_dict()
        res = {"group": list(group), **held_out_test(table, [fit_gamma], setting=setting_for(run, targets="permutation"))}
        if "censored" in table:
            res["censored_gammas"] = table.gamma[table.censored].tolist()
        results.append(res)
    return results, skipped
