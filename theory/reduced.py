"""Reduced rate equations in explained-fraction units, integrated with `solve_ivp`.

State per system: x_a (memorization of the part the shared path can explain), x_b
(memorization of the rest), rho (shared path), Q (its weight mass, Q(0) = 1). The forms
are the ones `derive.py` obtains on the symmetric scalar instance:

    eps   = capacity - x_a - rho
    x_a'  = mu_m eps - lam x_a,            x_b' = mu_m (1 - capacity - x_b) - lam x_b
    bilinear (derived):  rho' = 2 mu_r Q eps - 2 lam rho,  Q' = 2 mu_r rho eps / rho0^2 - 2 lam Q
    linear (paper):      rho' = mu_r eps_r - lam rho      (W2 frozen)
    eps_r = reach (1 - x_a / capacity) - rho: with the couplings frozen at a random init the
    shared path can explain only `reach` (about 1/|P|, `rates.frozen_reach`), not the capacity

All start at x = rho = 0, Q = 1: a random init explains nothing in expectation.

Many systems (gammas x schedules) are stacked into one ODE, so a 50-point gamma grid is a
single integration.
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from critwin.errors import ConfigError
from critwin.schedules import Schedule

ESCAPE_LAWS = ("bilinear", "linear")


def check_law(law: str) -> None:
    if law not in ESCAPE_LAWS:
        raise ConfigError("law", law, "one of " + ", ".join(ESCAPE_LAWS))


def _rhs(mu_m, mu_r, rho0, cap, lam, law, memorize=True, reason=True, reach=None):
    n = len(mu_m)
    reach = cap if reach is None else reach

    def f(_t, y):
        xa, xb, rho, Q = y.reshape(4, n)
        eps = cap - xa - rho
        dxa = (mu_m * eps - lam * xa) * memorize
        dxb = (mu_m * (1 - cap - xb) - lam * xb) * memorize
        if law == "bilinear":
            drho = (2 * mu_r * Q * eps - 2 * lam * rho) * reason
            dQ = (2 * mu_r * rho * eps / rho0**2 - 2 * lam * Q) * reason
        else:
            eps_r = reach * (1 - xa / cap) - rho
            drho, dQ = (mu_r * eps_r - lam * rho) * reason, np.zeros(n)
        return np.concatenate([dxa, dxb, drho, dQ])
    return f


STARTS = ("random", "balanced")


def _initial(rho0, law, start="random"):
    """random: a random init explains nothing in expectation, x = rho = 0, Q = 1.
    balanced: the scalar instance's aligned balanced init, rho = rho0 (bilinear law only),
    on which the escape is exactly the Saxe logistic."""
    if start not in STARTS:
        raise ConfigError("start", start, "one of " + ", ".join(STARTS))
    n = len(rho0)
    rho = rho0 if (start == "balanced" and law == "bilinear") else np.zeros(n)
    return np.concatenate([np.zeros(2 * n), rho, np.ones(n)])


def _broadcast(n, *arrays):
    return [np.broadcast_to(np.asarray(a, dtype=float), (n,)).copy() for a in arrays]


def simulate_reduced(mu_m, mu_r, rho0, capacity, schedules, eta: float, eval_steps,
                     law: str = "bilinear", rtol: float = 1e-8, atol: float = 1e-11, reach=None):
    """Integrate N stacked systems, system n under schedules[n]; piecewise at every edge.
    reach: what the linear law's shared path can explain (default: the capacity).

    Returns (steps, traj) with traj[name] of shape (len(steps), N) for x, rho, Q and
    reasoning_fraction = rho / (x + rho).
    """
    check_law(law)
    if isinstance(schedules, Schedule):
        schedules = [schedules]
    n = max(len(schedules), np.size(mu_r), np.size(mu_m))
    if len(schedules) == 1:
        schedules = list(schedules) * n
    mu_m, mu_r, rho0, cap, reach = _broadcast(n, mu_m, mu_r, rho0, capacity,
                                              capacity if reach is None else reach)
    total = max(s.total for s in schedules)
    edges = sorted({e for s in schedules for e in s.breakpoints()})
    steps = np.unique(np.clip(np.asarray(eval_steps, dtype=float), 0, total))
    y = _initial(rho0, law)
    out = [y] if len(steps) and steps[0] == 0 else []
    for a, b in zip(edges, edges[1:]):
        lam = np.array([float(s.value(a)) if a < s.total else 0.0 for s in schedules])
        want = steps[(steps > a) & (steps <= b)]
        sol = solve_ivp(_rhs(mu_m, mu_r, rho0, cap, lam, law, reach=reach), (a * eta, b * eta), y,
                        t_eval=np.unique(np.append(want, b)) * eta, rtol=rtol, atol=atol,
                        method="RK45")
        if not sol.success:
            raise RuntimeError(f"reduced integration failed on [{a:g}, {b:g}): {sol.message}")
        out.extend(sol.y[:, i] for i in range(len(want)))
        y = sol.y[:, -1]
    Y = np.array(out).reshape(len(steps), 4, n)
    x, rho = Y[:, 0] + Y[:, 1], Y[:, 2]
    frac = np.maximum(rho, 0) / np.maximum(np.maximum(x, 0) + np.maximum(rho, 0), 1e-12)
    return steps, {"x": x, "rho": rho, "Q": Y[:, 3], "reasoning_fraction": frac}


def crossing_times(mu_m, mu_r, rho0, capacity, delta: float, law: str = "bilinear",
                   t_max: float | None = None, start: str = "random", reach=None):
    """delta-window edges in continuous time: each path integrated alone, no decay.

    t1: memorization alone reaches 1 - delta of its target; t2: the shared path alone
    reaches (1 - delta) * capacity. inf where not reached by t_max (the linear law saturates at
    `reach`, default the capacity: inf whenever reach < (1 - delta) * capacity).
    """
    check_law(law)
    n = max(np.size(mu_m), np.size(mu_r))
    mu_m, mu_r, rho0, cap, reach = _broadcast(n, mu_m, mu_r, rho0, capacity,
                                              capacity if reach is None else reach)
    zero = np.zeros(n)
    if t_max is None:
        # the bilinear path starts at twice the lazy drive and accelerates: lazy time bounds it
        t_max = 4 * float(np.max(np.log(1 / delta) / np.minimum(mu_m, mu_r)))
    res = []
    for memorize, reason, target, idx in ((1, 0, (1 - delta) * np.ones(n), "x"),
                                          (0, 1, (1 - delta) * cap, "rho")):
        y0 = _initial(rho0, law, start)
        sol = solve_ivp(_rhs(mu_m, mu_r, rho0, cap, zero, law, memorize, reason, reach), (0, t_max), y0,
                        dense_output=True, rtol=1e-9, atol=1e-12, method="LSODA")
        grid = np.concatenate([[0], np.geomspace(t_max * 1e-9, t_max, 4000)])
        Yg = sol.sol(grid).reshape(4, n, -1)
        val = (Yg[0] + Yg[1]) if idx == "x" else Yg[2]
        times = np.full(n, np.inf)
        for k in range(n):
            hit = np.nonzero(val[k] >= target[k])[0]
            if len(hit) == 0:
                continue
            j = hit[0]
            if j == 0:
                times[k] = 0.0
                continue

            def g(t, k=k):
                z = sol.sol(t).reshape(4, n)
                return ((z[0, k] + z[1, k]) if idx == "x" else z[2, k]) - target[k]
            times[k] = brentq(g, grid[j - 1], grid[j], xtol=1e-12 * max(grid[j], 1))
        res.append(times)
    return res[0], res[1]
