"""Which escape law does the full flow follow: gamma^-2 (lazy) or log(1/gamma) (Saxe)?"""
from __future__ import annotations

import numpy as np
from critwin.theory.flow import integrate_flow
from critwin.theory.optimizers import run_discrete
from critwin.theory.rates import compute_rates
from critwin.theory.reduced import crossing_times
from critwin.theory.setting import StylisedSetting, build_problem, check_gamma
from critwin.theory.stylised import init_params

from critwin.errors import ConfigError
from critwin.schedules import Schedule


def _fit(t, z):
    """Least squares t = a z + b; returns (a, b, R^2)."""
    A = np.column_stack([z, np.ones_like(z)])
    coef, *_ = np.linalg.lstsq(A, t, rcond=None)
    pred = A @ coef
    ss = np.sum((t - t.mean()) ** 2)
    return coef[0], coef[1], 1 - np.sum((t - pred) ** 2) / ss if ss > 0 else 1.0


def _check_horizon(horizon) -> None:
    if isinstance(horizon, bool) or not float(horizon).is_integer() or horizon < 1:
        raise ConfigError("horizon", horizon, "a positive whole number of steps to wait for the escape")


def escape_times(s: StylisedSetting, gammas, horizon: int = 5000, seed: int = 0,
                 n_eval: int = 400, optimizer: str = "flow") -> np.ndarray:
    """Steps for the shared path alone (M held at 0, no decay) to explain half its capacity.

    optimizer: "flow" (gradient flow, exact) or a discrete one of `optimizers.OPTIMIZERS`.
    """
    _check_horizon(horizon)
    g = np.atleast_1d(np.asarray(gammas, dtype=float))
    check_gamma(g)
    p = build_problem(s)
    cap = compute_rates(s, g[:1], problem=p).capacity
    q = init_params(p, g, np.full(len(g), seed))
    q.M[:] = 0.0
    if optimizer == "flow":
        grid = np.unique(np.concatenate([[0], np.geomspace(1, horizon, n_eval)]))
        steps, traj, _ = integrate_flow(p, q, [Schedule.none(horizon)] * len(g), s.eta, grid,
                                        train_memorization=False)
    else:
        steps, traj, _ = run_discrete(p, q, Schedule.none(horizon), s.eta, optimizer,
                                      eval_every=max(1, horizon // n_eval), train_memorization=False)
    rho = traj["rho"]
    out = np.full(len(g), np.inf)
    for k in range(len(g)):
        hit = np.nonzero(rho[:, k] >= cap / 2)[0]
        if len(hit):
            j = hit[0]
            if j == 0:
                out[k] = 0.0
            else:
                a, b = rho[j - 1, k], rho[j, k]
                out[k] = steps[j - 1] + (cap / 2 - a) / (b - a) * (steps[j] - steps[j - 1])
    return out


def compare_laws(s: StylisedSetting, gammas, horizon: int = 5000, seed: int = 0,
                 optimizer: str = "flow") -> dict:
    """Measured escape times vs the two laws, fitted (a z + b) and predicted (no fit).

    better_law: the unfitted prediction closer in mean |log(pred / measured)|;
    log_slope: d ln t / d ln gamma, measured and predicted (gamma^-2 law: -2).

    The predictions assume gradient flow; with optimizer="adamw" they are tested outside
    their assumptions on purpose (Adam's step does not scale with the gradient).
    """
    g = np.atleast_1d(np.asarray(gammas, dtype=float))
    t = escape_times(s, g, horizon, seed, optimizer=optimizer)
    ok = np.isfinite(t)
    r = compute_rates(s, g)
    _, lazy = crossing_times(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, 0.5, "linear")
    _, saxe = crossing_times(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, 0.5, "bilinear")
    regs = {"gamma^-2": g**-2.0, "log(1/gamma)": np.log(1 / g)}
    fits, rows = {}, []
    for name, z in regs.items():
        if ok.sum() >= 3:
            a, b, r2 = _fit(t[ok], z[ok])
            fits[name] = {"slope": float(a), "intercept": float(b), "r2": float(r2),
                          "rms_rel_err": float(np.sqrt(np.mean(((a * z[ok] + b) / t[ok] - 1) ** 2)))}
    for k in range(len(g)):
        row = {"gamma": float(g[k]), "escape_steps": float(t[k]),
               "lazy_pred_steps": float(lazy[k] / s.eta), "saxe_pred_steps": float(saxe[k] / s.eta)}
        errs = {}
        for name, z in regs.items():
            if name in fits:
                pred = fits[name]["slope"] * z[k] + fits[name]["intercept"]
                row[f"fit_{name}"] = float(pred)
                errs[name] = abs(pred / t[k] - 1) if np.isfinite(t[k]) else np.inf
        row["closer_law"] = min(errs, key=errs.get) if errs and np.isfinite(t[k]) else "n/a"
        unfitted = {"gamma^-2": row["lazy_pred_steps"], "log(1/gamma)": row["saxe_pred_steps"]}
        row["closer_prediction"] = min(unfitted, key=lambda n: abs(np.log(unfitted[n] / t[k]))) \
            if np.isfinite(t[k]) and t[k] > 0 else "n/a"
        rows.append(row)
    best_fit = max(fits, key=lambda n: fits[n]["r2"]) if fits else "n/a"
    preds = {"gamma^-2": lazy / s.eta, "log(1/gamma)": saxe / s.eta}
    off = {n: float(np.mean(np.abs(np.log(v[ok] / t[ok])))) for n, v in preds.items()} if ok.any() else {}
    slope = lambda v: float(np.polyfit(np.log(g[ok]), np.log(v[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")  # noqa: E731
    return {"rows": rows, "fits": fits, "better_fit": best_fit,
            "mean_abs_log_error": off, "better_law": min(off, key=off.get) if off else "n/a",
            "log_slope": {"measured": slope(t), "gamma^-2": slope(preds["gamma^-2"]),
                          "log(1/gamma)": slope(preds["log(1/gamma)"])},
            "optimizer": optimizer}
