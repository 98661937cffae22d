"""Predicted critical windows: the paper's recipe, the reduced equations, the full flow.

Two kinds of window are reported and kept apart:
- the delta-window [t1, t2] (time memorization is 1 - delta done, time the shared path
  is 1 - delta done), from the recipe or from the reduced equations;
- the onset window: the onsets s for which a decay window [s, s + width) at `wd` ends
  training with reasoning fraction >= threshold, from an onset sweep (reduced or full).
Times are optimizer steps: continuous time divided by eta. All assume gradient flow
(plain GD); `optimizers.py` runs the discrete optimizers for comparison.
"""
from __future__ import annotations

import numpy as np
from critwin.theory.flow import integrate_flow
from critwin.theory.optimizers import optimizer_time_scale, run_discrete
from critwin.theory.rates import c_r, compute_rates, sigma_e
from critwin.theory.reduced import check_law, crossing_times, simulate_reduced
from critwin.theory.setting import StylisedSetting, build_problem, check_gamma
from critwin.theory.stylised import init_params

from critwin.errors import ConfigError
from critwin.schedules import Schedule
from critwin.vocabulary import STYLISED_DECAY_FORMS

METHODS = ("recipe", "recipe_adamw", "reduced", "full", "adamw")
ENGINES = ("reduced", "full", "gd", "momentum", "adamw")   # the last three: discrete steps (optimizers.py)


def check_method(method: str) -> None:
    if method not in METHODS:
        raise ConfigError("method", method, "one of " + ", ".join(METHODS))


def _gammas(s: StylisedSetting, gamma) -> np.ndarray:
    g = np.atleast_1d(np.asarray(s.gamma if gamma is None else gamma, dtype=float))
    check_gamma(g)
    return g


def _recipe(sig: float, cr: float, gamma: np.ndarray, eta: float, delta: float, sigma_def: str) -> dict:
    """Paper: mu_m = sigma_e, mu_r = c_r gamma^2 sigma_e, t = ln(1/delta)/mu/eta."""
    if sig <= 0:
        raise ConfigError("sigma_def", sigma_def,
                          "a definition with sigma_e > 0 ('literal' is 0 when keys < d: use gram or gram_mean)")
    k = np.log(1 / delta) / eta
    mu_r = cr * gamma**2 * sig
    return {"gamma": gamma, "mu_m": np.full_like(gamma, sig), "mu_r": mu_r,
            "t1_steps": np.full_like(gamma, k / sig), "t2_steps": k / mu_r}


def recipe_window(s: StylisedSetting, gamma=None) -> dict:
    """The paper's recipe for the stylised setting's own embeddings."""
    r = compute_rates(s, _gammas(s, gamma))
    return {**_recipe(r.sigma_e, r.c_r, r.gamma, s.eta, s.delta, s.sigma_def), "rates": r}


def recipe_from_embeddings(keys: np.ndarray, anchors: np.ndarray, pairs: np.ndarray, gamma, eta: float,
                           delta: float = 0.5, sigma_def: str = "gram") -> dict:
    """The paper's recipe with sigma_e and c_r read from given embeddings (d x K keys, d x M
    anchors, training pairs as index rows), e.g. a trained model's own initial embeddings."""
    g = np.atleast_1d(np.asarray(gamma, dtype=float))
    check_gamma(g)
    if not (np.isfinite(eta) and eta > 0):
        raise ConfigError("eta", eta, "a learning rate > 0")
    sig, cr = sigma_e(np.asarray(keys, float), sigma_def), c_r(np.asarray(anchors, float), np.asarray(pairs))
    return {**_recipe(sig, cr, g, eta, delta, sigma_def), "sigma_e": sig, "c_r": cr}


def recipe_adamw_window(s: StylisedSetting, gamma=None, horizon: int = 3000, seed: int = 0) -> dict:
    """The recipe's delta-window with each time divided by how much faster AdamW makes that path
    than GD on the stylised model (`optimizer_time_scale`, measured at each gamma): the
    gradient-flow rates reconciled with the optimizer the Transformers use. nan where either
    optimizer does not reach the level within `horizon` steps."""
    g = _gammas(s, gamma)
    w = recipe_window(s, g)
    p = build_problem(s)
    ts = optimizer_time_scale(p, g, s.eta, s.delta, compute_rates(s, g[:1], problem=p).capacity, "adamw",
                              horizon, seed)
    return {**w, "t1_steps": w["t1_steps"] / ts["t1_ratio"], "t2_steps": w["t2_steps"] / ts["t2_ratio"],
            "t1_ratio": ts["t1_ratio"], "t2_ratio": ts["t2_ratio"]}


def reduced_window(s: StylisedSetting, gamma=None, law: str = "bilinear") -> dict:
    """delta-window of the derived reduced equations (each path integrated alone)."""
    r = compute_rates(s, _gammas(s, gamma))
    t1, t2 = crossing_times(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, s.delta, law, reach=r.reach)
    return {"gamma": r.gamma, "mu_m": np.full_like(r.gamma, r.mu_m_drive), "mu_r": r.mu_r,
            "t1_steps": t1 / s.eta, "t2_steps": t2 / s.eta, "rates": r}


def window_schedules(onsets, width: float, wd: float, total: int) -> list[Schedule]:
    return [Schedule.window(o, min(o + width, total), wd, total) for o in onsets]


def default_onsets(width: float, total: int, n: int = 11) -> np.ndarray:
    if not (0 < width <= total):
        raise ConfigError("width", width, f"a window width in (0, {total}] steps")
    return np.unique(np.round(np.linspace(0, total - width, n)))


def simulate(s: StylisedSetting, schedules, gamma=None, engine: str = "reduced",
             law: str = "bilinear", seed: int = 0, eval_steps=None,
             decay_form: str = "decoupled", progress=None) -> tuple[np.ndarray, dict]:
    """Outcome of each schedule (one system per schedule x gamma) on one engine.

    Engines: the reduced equations, the full gradient flow, or discrete GD / momentum /
    AdamW on the full model, where decay_form (decoupled or l2) says how lambda acts.
    Returns (steps, traj) with traj[name] of shape (len(steps), n_gamma * n_schedules),
    gamma-major.
    """
    if engine not in ENGINES:
        raise ConfigError("engine", engine, "one of " + ", ".join(ENGINES))
    schedules = [schedules] if isinstance(schedules, Schedule) else list(schedules)
    g = _gammas(s, gamma)
    total = max(sc.total for sc in schedules)
    if eval_steps is None:
        eval_steps = np.linspace(0, total, 201)
    systems = [sc for _ in g for sc in schedules]
    gam = np.repeat(g, len(schedules))
    if engine == "reduced":
        check_law(law)
        r = compute_rates(s, gam)
        return simulate_reduced(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, systems, s.eta, eval_steps, law,
                                reach=r.reach)
    # under gradient flow a penalty lambda/2 |theta|^2 in the loss and a decoupled shrink are one term,
    # -lambda theta: the two forms differ only through a discrete optimizer (gd, momentum, adamw)
    if decay_form not in STYLISED_DECAY_FORMS:
        raise ConfigError("decay_form", decay_form, "one of " + ", ".join(STYLISED_DECAY_FORMS))
    p = build_problem(s)
    q = init_params(p, gam, np.full(len(gam), seed))
    if engine == "full":
        steps, traj, _ = integrate_flow(p, q, systems, s.eta, eval_steps, progress=progress)
        return steps, traj
    want = np.unique(np.clip(np.asarray(eval_steps, dtype=float), 0, total))
    every = int(np.gcd.reduce(np.append(want[want > 0].astype(int), total)))
    steps, traj, _ = run_discrete(p, q, systems, s.eta, engine, eval_every=max(1, every), decay_form=decay_form,
                                  progress=progress)
    keep = np.isin(steps, want)
    return steps[keep], {k: np.asarray(v)[keep] for k, v in traj.items()}


def onset_sweep(s: StylisedSetting, gamma=None, onsets=None, width: float = 5000,
                wd: float = 4e-3, total: int = 20000, engine: str = "reduced",
                law: str = "bilinear", seed: int = 0, decay_form: str = "decoupled", progress=None) -> dict:
    """Final reasoning fraction for each onset (rows: gamma), plus the no-decay baseline."""
    g = _gammas(s, gamma)
    onsets = default_onsets(width, total) if onsets is None else np.asarray(onsets, dtype=float)
    scheds = [Schedule.none(total)] + window_schedules(onsets, width, wd, total)
    _, traj = simulate(s, scheds, g, engine, law, seed, eval_steps=[total], decay_form=decay_form, progress=progress)
    frac = traj["reasoning_fraction"][-1].reshape(len(g), len(scheds))
    return {"gamma": g, "onsets": onsets, "baseline": frac[:, 0], "fraction": frac[:, 1:]}


def window_verdict(t1: float, t2: float) -> dict:
    """{'window': 'delta' or 'none', 'reason'}: a delta-window exists only when memorization
    finishes (t1) before reasoning does (t2) and both are reached."""
    if not np.isfinite(t1):
        return {"window": "none", "reason": "memorization never reaches 1 - delta"}
    if not np.isfinite(t2):
        return {"window": "none", "reason": "the reasoning path never reaches (1 - delta) of its capacity"}
    if t2 <= t1:
        return {"window": "none", "reason": f"inverted: reasoning (t2 = {t2:,.0f}) finishes before"
                                            f" memorization (t1 = {t1:,.0f})"}
    return {"window": "delta", "reason": ""}


def _verdict_with_reach(t1: float, t2: float, law: str, r) -> dict:
    v = window_verdict(t1, t2)
    if law == "linear" and not np.isfinite(t2):
        v["reason"] += (f" (the linear law freezes W2 at a random init: the shared path explains at most"
                        f" {r.reach:.3g} of the targets, capacity {r.capacity:.3g})")
    return v


def onset_window(onsets: np.ndarray, fraction: np.ndarray, threshold: float) -> tuple[float, float]:
    """(first, last) onset whose fraction >= threshold; (nan, nan) when none."""
    hit = np.asarray(onsets)[np.asarray(fraction) >= threshold]
    return (float(hit.min()), float(hit.max())) if len(hit) else (float("nan"), float("nan"))


def predict(s: StylisedSetting, gamma=None, method: str = "recipe", law: str = "bilinear",
            width: float = 5000, wd: float = 4e-3, total: int = 20000, onsets=None,
            threshold: float = 0.5, seed: int = 0, decay_form: str = "decoupled",
            init_seeds: int = 1, progress=None) -> list[dict]:
    """One row per gamma: the method's rates and its window in steps.

    recipe and reduced give the delta-window (t1, t2) (recipe_adamw: the recipe's times divided
    by AdamW's measured speed-up over GD on the stylised model); full gives the onset window of the
    full flow and adamw that of discrete AdamW on the full model, with the decay acting as
    `decay_form` says (l2: the penalty through Adam). reduced also reports its own onset
    window, so both kinds can be compared. For full and adamw the outcome depends on the
    init (one Gaussian projection drives the escape): with init_seeds = n the sweep runs from
    n inits (seed, seed + 1, ...) and the row gives the median fraction per onset with its
    10-90% range, the window of the median, and the share of inits that have a window.
    """
    check_method(method)
    if not (0 <= threshold <= 1):
        raise ConfigError("threshold", threshold, "a reasoning fraction in [0, 1]")
    g = _gammas(s, gamma)
    rows = []
    if method in ("recipe", "recipe_adamw", "reduced"):
        w = {"recipe": lambda: recipe_window(s, g), "recipe_adamw": lambda: recipe_adamw_window(s, g, seed=seed),
             "reduced": lambda: reduced_window(s, g, law)}[method]()
        r = w["rates"]
        for k in range(len(g)):
            rows.append({"gamma": float(g[k]), "method": method, "window_kind": "delta",
                         "sigma_e": r.sigma_e, "sigma_def": r.sigma_def, "c_r": r.c_r,
                         "mu_m": float(w["mu_m"][k]), "mu_r": float(w["mu_r"][k]),
                         "mu_r_drive": float(r.mu_r_drive[k]), "mu_m_drive": r.mu_m_drive,
                         "t1_steps": float(w["t1_steps"][k]), "t2_steps": float(w["t2_steps"][k]),
                         **_verdict_with_reach(float(w["t1_steps"][k]), float(w["t2_steps"][k]),
                                               law if method == "reduced" else "", r),
                         "reach_w2_frozen": r.reach, "capacity": r.capacity, "delta": s.delta, "eta": s.eta,
                         **({"adamw_speedup_t1": float(w["t1_ratio"][k]), "adamw_speedup_t2": float(w["t2_ratio"][k])}
                            if method == "recipe_adamw" else {}),
                         "assumes": "paper formulas" if method == "recipe" else
                         f"gradient flow, {law} law, loss_norm={s.loss_norm}" if method == "reduced" else
                         "paper formulas, times divided by AdamW's speed-up over GD on the stylised model"
                         f" (t1 x{1 / w['t1_ratio'][k]:.3g}, t2 x{1 / w['t2_ratio'][k]:.3g})"})
    if isinstance(init_seeds, bool) or not isinstance(init_seeds, (int, np.integer)) or init_seeds < 1:
        raise ConfigError("init_seeds", init_seeds, "a number of init seeds >= 1")
    if method in ("reduced", "full", "adamw"):
        n_init = 1 if method == "reduced" else int(init_seeds)
        sweeps = [onset_sweep(s, g, onsets, width, wd, total, method, law, seed + i, decay_form,
                              progress if method != "reduced" else None) for i in range(n_init)]
        sweep = sweeps[0]
        fr = np.stack([sw["fraction"] for sw in sweeps])           # (inits, gammas, onsets)
        r = compute_rates(s, g)
        for k in range(len(g)):
            med = np.median(fr[:, k], axis=0)
            lo, hi = onset_window(sweep["onsets"], med, threshold)
            spread = {} if n_init == 1 else {
                "init_seeds": n_init, "fractions_q10": np.quantile(fr[:, k], 0.1, axis=0).tolist(),
                "fractions_q90": np.quantile(fr[:, k], 0.9, axis=0).tolist(),
                "share_of_inits_with_window": float(np.mean([np.isfinite(onset_window(sweep["onsets"], f, threshold)[0])
                                                             for f in fr[:, k]]))}
            extra = {"onset_first": lo, "onset_last": hi, "baseline_fraction": float(sweep["baseline"][k]),
                     "onsets": sweep["onsets"].tolist(), "fractions": med.tolist(), **spread,
                     "threshold": threshold, "width": width, "wd": wd, "total_steps": total,
                     "onset_window": "onset" if np.isfinite(lo) else "none",
                     "onset_reason": "" if np.isfinite(lo) else
                     f"no onset ends with reasoning fraction >= {threshold:g}"}
            if method == "reduced":
                rows[k].update(extra)
            else:
                rows.append({"gamma": float(g[k]), "method": method, "window_kind": "onset",
                             "sigma_e": r.sigma_e, "sigma_def": r.sigma_def, "c_r": r.c_r,
                             "mu_m": r.mu_m, "mu_r": float(r.mu_r[k]), "mu_r_drive": float(r.mu_r_drive[k]),
                             "t1_steps": lo, "t2_steps": hi, "delta": s.delta, "eta": s.eta,
                             "window": "onset" if np.isfinite(lo) else "none",
                             "reason": "" if np.isfinite(lo) else extra["onset_reason"],
                             "assumes": (f"gradient flow of the full model, loss_norm={s.loss_norm}"
                                         if method == "full" else f"AdamW steps on the full model, decay {decay_form},"
                                         f" loss_norm={s.loss_norm}") + (f", init seed {seed}" if n_init == 1 else
                                                                         f", median over init seeds {seed}-{seed + n_init - 1}"),
                             **extra})
    return rows


def budget_comparison(s: StylisedSetting, budget: float = 20.0, width: float = 5000,
                      total: int = 20000, engine: str = "reduced", law: str = "bilinear",
                      gamma=None, seed: int = 0) -> list[dict]:
    """Early / middle / late windows holding the same decay budget, plus constant and none."""
    scheds = {pl: Schedule.budget_matched(pl, budget, width, total) for pl in ("early", "middle", "late")}
    scheds["constant"] = Schedule.constant(budget / total, total)
    scheds["none"] = Schedule.none(total)
    g = _gammas(s, gamma)
    _, traj = simulate(s, list(scheds.values()), g, engine, law, seed, eval_steps=[total])
    rows = []
    for gi, gv in enumerate(g):
        for si, (name, sc) in enumerate(scheds.items()):
            col = gi * len(scheds) + si
            rows.append({"gamma": float(gv), "placement": name, "schedule": sc.describe(),
                         "budget": sc.integral(), "engine": engine,
                         **{k: float(traj[k][-1, col]) for k in ("x", "rho", "reasoning_fraction")}})
    return rows
