"""Basin of attraction of the reasoning solution: Monte Carlo over init seeds."""
from __future__ import annotations

import numpy as np
from critwin.theory.flow import integrate_flow
from critwin.theory.rates import compute_rates
from critwin.theory.setting import StylisedSetting, build_problem, check_gamma
from critwin.theory.stylised import init_params

from critwin.errors import ConfigError
from critwin.schedules import Schedule


def paper_bound(s: StylisedSetting, gamma, steps: int, C: float = 1.0) -> np.ndarray:
    """P(reach reasoning) >= 1 - C exp(-c gamma^2 T) - 1[T < t_r], clipped to [0, 1].

    The paper leaves C and c unspecified; here C = 1, c gamma^2 = the recipe's mu_r and
    t_r = the recipe's t2 (both in continuous time, T = steps * eta).
    """
    r = compute_rates(s, gamma)
    T = steps * s.eta
    t_r = np.log(1 / s.delta) / r.paper_mu_r
    return np.clip(1 - C * np.exp(-r.paper_mu_r * T) - (T < t_r), 0, 1)


def basin(s: StylisedSetting, gammas, seeds: int = 8, steps: int = 20000,
          schedule: Schedule | None = None, threshold: float = 0.5, progress=None) -> list[dict]:
    """Per gamma: the fraction of `seeds` inits whose final reasoning fraction >= threshold.

    The task (embeddings, pairs, targets) is fixed by s.seed; only the init varies.
    Default schedule: the paper's window [5000, 10000) at 4e-3, clipped to `steps`.
    """
    g = np.atleast_1d(np.asarray(gammas, dtype=float))
    check_gamma(g)
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 1:
        raise ConfigError("seeds", seeds, "a positive number of seeds")
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ConfigError("steps", steps, "a positive number of steps")
    if schedule is None:
        schedule = Schedule(int(steps), ((min(5000, steps), min(10000, steps), 4e-3),))
    p = build_problem(s)
    bound = paper_bound(s, g, steps)
    rows = []
    for k, gv in enumerate(g):
        q = init_params(p, gv, np.arange(int(seeds)))
        _, traj, _ = integrate_flow(p, q, [schedule] * int(seeds), s.eta, [schedule.total])
        frac = traj["reasoning_fraction"][-1]
        rows.append({"gamma": float(gv), "seeds": int(seeds), "steps": int(steps),
                     "reached": int(np.sum(frac >= threshold)),
                     "fraction_reached": float(np.mean(frac >= threshold)),
                     "mean_reasoning_fraction": float(np.mean(frac)),
                     "paper_bound": float(bound[k]), "threshold": threshold,
                     "schedule": schedule.describe()})
        if progress is not None:
            progress(1)
    return rows
