"""Where does the stylised model have a critical window at all? A map in dimensionless groups.

The reduced equations have, with the memorization rate mu_m as the unit of time, the groups
G / mu_m (the shared path's escape gain), drive / mu_m (its initial drive), the capacity,
lambda / mu_m and the window's decay budget lambda * width (both in flow time), width / T
and T * mu_m. The map holds all but two at a setting's values and scans G / mu_m and the
budget lambda * width: at each point an onset sweep gives the final reasoning fraction per
onset, and the point is classified

    none       decay at any onset changes the outcome by less than `tol`
    uniform    the outcome moves, but by less than `tol` between onsets (no timing)
    window     some onsets end above the threshold and others below: a critical window
    graded     onsets differ by >= tol but all end on the same side of the threshold
"""
from __future__ import annotations

import numpy as np
from critwin.theory.rates import compute_rates
from critwin.theory.reduced import simulate_reduced
from critwin.theory.setting import StylisedSetting

from critwin.errors import ConfigError
from critwin.schedules import Schedule

REGIMES = ("none", "uniform", "graded", "window")


def classify(baseline: float, fractions, threshold: float = 0.5, tol: float = 0.05) -> str:
    f = np.asarray(fractions, dtype=float)
    if np.max(np.abs(f - baseline)) < tol:
        return "none"
    if f.max() - f.min() < tol:
        return "uniform"
    above = f >= threshold
    return "window" if above.any() and not above.all() else "graded"


def regime_map(s: StylisedSetting, gain_ratios, budgets, width: float = 5000, total: int = 20000,
               n_onsets: int = 11, threshold: float = 0.5, tol: float = 0.05, gamma=None) -> dict:
    """The reduced model's regime over (G / mu_m) x (lambda * width, flow time), the other
    groups at `s` (gamma: s.gamma unless given). Returns the grids, the fraction range over
    onsets, the regime names and where the setting itself sits."""
    g = np.asarray(gain_ratios, dtype=float)
    b = np.asarray(budgets, dtype=float)
    if g.size == 0 or np.any(~np.isfinite(g)) or np.any(g <= 0):
        raise ConfigError("gain_ratios", g.tolist(), "values of G / mu_m > 0")
    if b.size == 0 or np.any(~np.isfinite(b)) or np.any(b <= 0):
        raise ConfigError("budgets", b.tolist(), "decay budgets lambda * width > 0 (flow time)")
    if not (0 < width < total):
        raise ConfigError("width", width, f"a window width in (0, {total}) steps")
    r = compute_rates(s, [s.gamma if gamma is None else gamma])
    mu_m, drive, cap = r.mu_m_drive, float(r.mu_r_drive[0]), r.capacity
    onsets = np.unique(np.round(np.linspace(0, total - width, n_onsets)))
    width_time = width * s.eta
    rng = np.zeros((len(g), len(b)))
    names = np.empty((len(g), len(b)), dtype=object)
    for j, budget in enumerate(b):
        lam_step = budget / width_time               # lambda in flow-time units, per the schedule's steps
        scheds = [Schedule.none(total)] + [Schedule.window(o, o + width, lam_step, total) for o in onsets]
        systems = [sc for _ in g for sc in scheds]
        gain = np.repeat(g * mu_m, len(scheds))
        rho0 = np.minimum(drive * cap / gain, cap)
        _, traj = simulate_reduced(mu_m, drive, rho0, cap, systems, s.eta, [total])
        frac = traj["reasoning_fraction"][-1].reshape(len(g), len(scheds))
        for i in range(len(g)):
            rng[i, j] = frac[i, 1:].max() - frac[i, 1:].min()
            names[i, j] = classify(frac[i, 0], frac[i, 1:], threshold, tol)
    return {"gain_ratios": g, "budgets": b, "onset_range": rng, "regime": names, "onsets": onsets,
            "setting": {"gain_ratio": r.gain / mu_m, "drive_ratio": drive / mu_m, "capacity": cap,
                        "mu_m": mu_m, "T_mu_m": total * s.eta * mu_m, "width_over_T": width / total}}
