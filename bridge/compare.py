"""Predicted vs observed critical windows: theory constants from the runs' own settings."""
from __future__ import annotations

import numpy as np
import pandas as pd
from critwin.bridge.observed import observed_times, observed_window, onset_outcomes
from critwin.empirical import RunStore, load_summaries
from critwin.theory.setting import multiplier_from_exponent

from critwin import theory as th
from critwin.errors import ConfigError
from critwin.vocabulary import STORED_READING, is_l2

TASK_SIZES = {"anchor_permutation": {"keys": 16, "anchors": 8, "train_pairs": 45}}


def flow_eta(config_row: dict) -> float:
    """Flow time per step: lr, or lr / (1 - momentum) for SGD with heavy-ball momentum, whose steady velocity on a
    slow mode is 1 / (1 - momentum) gradients a step (checked against torch's SGD in tests/test_bridge_time.py)."""
    lr = float(config_row["lr"])
    if config_row.get("optimizer") == "sgd":
        return lr / (1.0 - float(config_row.get("momentum", 0.0)))
    return lr


def setting_for(config_row: dict, **theory_options) -> th.StylisedSetting:
    """The stylised setting matching a run: d, K, M, |P| of its task, eta = flow time a step, gamma."""
    sizes = TASK_SIZES.get(config_row.get("task", "anchor_permutation"), TASK_SIZES["anchor_permutation"])
    gamma = float(config_row["gamma"])
    if config_row.get("init") == "exponent":
        gamma = float(multiplier_from_exponent(gamma, config_row["d"]))
    return th.StylisedSetting(d=int(config_row["d"]), gamma=gamma, eta=flow_eta(config_row),
                              **sizes, **theory_options)


def config_setting(cfg, gamma=None, **theory_options) -> th.StylisedSetting:
    """The stylised setting of a TrainConfig (gamma: the config's unless given)."""
    return setting_for({"task": cfg.task, "gamma": cfg.model.gamma if gamma is None else gamma,
                        "init": cfg.model.init, "d": cfg.model.d, "lr": cfg.lr, "optimizer": cfg.optimizer,
                        "momentum": cfg.momentum}, **theory_options)


def recipe_t1(cfg, gamma: float) -> float:
    """The paper recipe's left edge t1 (steps) for a TrainConfig at this gamma (permutation targets)."""
    (row,) = th.predict(config_setting(cfg, gamma=gamma, targets="permutation"), gamma, "recipe")
    return float(row["t1_steps"])


def run_recipe(config: dict, delta: float = 0.5, sigma_def: str = "gram") -> dict:
    """The recipe window with sigma_e and c_r read from the run's own initial token embeddings
    (rebuilt from its config and seed) and its task's training pairs."""
    from critwin.empirical import TrainConfig
    from critwin.empirical.train import initial_model
    cfg = TrainConfig.from_dict(config) if isinstance(config, dict) else config
    if cfg.task != "anchor_permutation":
        raise ConfigError("task", cfg.task, "anchor_permutation (keys and anchors are tokens there)")
    model, data = initial_model(cfg)
    perms = np.asarray(data.info["permutations"])
    n_anchors, n_keys = perms.shape
    W = model.tok.weight.detach().double().numpy()          # vocab x d: keys first, then anchors
    s = config_setting(cfg)
    return th.windows.recipe_from_embeddings(W[:n_keys].T, W[n_keys:n_keys + n_anchors].T,
                                             np.asarray(data.info["train_pairs"]), s.gamma, s.eta, delta, sigma_def)


OBSERVED_METHODS = ("recipe_run", "memorization", "survival", "plateau")   # need runs, not only the setting


def survival_window(curves: dict, reading: str, optimizer: str, gamma: float, lam: float) -> dict:
    """The composition model's left edge read coordinate by coordinate (bridge.survival), from the mean
    held-share curves of no-decay probes keyed '<optimizer> gamma <g>' (held_curves.json, or probed here
    when absent); an L2 penalty only (the rule reads the penalty's pull on the loss), no right edge."""
    from critwin.bridge.survival import predict
    from critwin.theory.composition import survival_edge
    nan = {"t1_steps": float("nan"), "t2_steps": float("nan")}
    if not is_l2(reading):
        return nan
    key, col = f"{optimizer} gamma {gamma:g}", f"attn_{lam:g}"
    if col not in curves.get(key, {}):
        _, got = predict([optimizer], [gamma], [lam], range(3), range(2))
        curves.setdefault(key, {}).update(got[key])
    edge = survival_edge(curves[key]["step"], curves[key][col])
    return {"t1_steps": float("nan") if edge is None else edge, "t2_steps": float("nan")}


def plateau_window(probes: dict, reading: str, optimizer: str, gamma: float, lam: float, width: float, total: int,
                   onsets, threshold: float) -> dict:
    """The composition model's right edge on its memorised plateau (bridge.late_window), from the probe lag curves
    keyed by cell id (late_probes.json of register_right.py), over the sweep's onsets after the probe's; no left edge.
    nan where no probe matches the sweep, the probe does not cover its onsets, or the reading is not an L2 one."""
    from critwin.bridge.registration import cell_id
    from critwin.theory.composition import late_window_edge
    nan = {"t1_steps": float("nan"), "t2_steps": float("nan")}
    probe = probes.get(cell_id({"kind": "right", "optimizer": optimizer, "gamma": gamma, "lambda": lam, "width": width}))
    if probe is None or not is_l2(reading):
        return nan
    late = sorted(float(o) for o in onsets if o > probe["probe_onset"] and total - o >= probe["lag"][0])
    late = [o for o in late if total - o <= probe["lag"][-1]]
    if len(late) < 2:
        return nan
    edge = late_window_edge(probe["lag"], probe["mean"], total, late[0], late[-1], threshold)
    return {"t1_steps": float("nan"), "t2_steps": float("nan") if edge is None else edge}


def memorization_edge(memo: pd.DataFrame, reading: str, gamma: float) -> dict:
    """The hypothesis that a window opens once the training set is fitted: t1 = the mean
    memorization step of the stored runs of this reading and gamma (nan when none), no t2."""
    vals = memo.value[(memo.reading == reading) & np.isclose(memo.gamma, gamma)].dropna()
    return {"t1_steps": float(vals.mean()) if len(vals) else float("nan"), "t2_steps": float("nan")}


def predicted_windows(s: th.StylisedSetting, methods=("recipe", "reduced"), **kw) -> dict:
    out = {}
    for m in methods:
        (row,) = th.predict(s, s.gamma, m, **kw)
        out[m] = row
    return out


def compare(store, threshold: float = 0.5, metric: str = "ood_acc", gammas=None,
            methods=("recipe", "recipe_run", "reduced"), n_boot: int = 1000, on_corrupt: str = "raise",
            survival_curves: dict | None = None, late_probes: dict | None = None, **theory_options) -> list[dict]:
    """One row per (gamma, width, lambda) onset sweep in the store: observed window with
    its bootstrap interval next to each method's predicted window, errors in steps.

    Methods: recipe (orthonormal keys, sigma_e = 1), recipe_adamw (the recipe's times divided by
    AdamW's speed-up over GD on the stylised model; with recipe_run also recipe_run_adamw, the
    run's own recipe divided by the same speed-up), recipe_run (sigma_e and c_r of the run's
    own initial embeddings), reduced and full (derived equations / stylised flow), adamw
    (AdamW steps on the stylised model with the runs' decay form: l2 runs get the penalty
    through Adam), memorization (no theory: the left edge put at the memorization step of the
    stored runs of the same reading and gamma, train acc >= 0.9, no right edge), survival (the
    composition model's left edge from no-decay probes, `survival_curves` when given), plateau (its right
    edge from one penalised probe per cell, `late_probes`: late_probes.json). on_corrupt:
    'raise' on a damaged run folder, or 'skip' it with a warning."""
    theory_options.setdefault("targets", "permutation")   # the Transformer's task
    summ = load_summaries(store, on_corrupt)
    table = onset_outcomes(summ, metric)
    if "memorization" in methods:     # one table, or none for an empty store
        memo = next(iter(observed_times(store, "memorization", on_corrupt=on_corrupt).values()),
                    pd.DataFrame(columns=["gamma", "value", "reading"]))
    rows = []
    for (reading, optimizer, gamma, width, lam), grp in table.groupby(["reading", "optimizer", "gamma", "wd_width",
                                                                       "wd_value"]):
        if (gammas is not None and not np.any(np.isclose(gamma, gammas))) or grp.onset.nunique() < 2:
            continue
        obs = observed_window(grp, threshold, n_boot)
        cfg = summ[(summ.reading == reading) & (summ.optimizer == optimizer) & (summ.gamma == gamma)
                   & (summ.wd_width == width) & (summ.wd_value == lam)].iloc[0].to_dict()
        s = setting_for(cfg, **theory_options)
        total = int(cfg["steps"])
        pred = predicted_windows(s, [m for m in methods if m not in OBSERVED_METHODS], width=width, wd=lam, total=total,
                                 threshold=threshold, decay_form=cfg.get("decay_form", STORED_READING["decay_form"]))
        if "memorization" in methods:
            pred["memorization"] = memorization_edge(memo, reading, gamma)
        if "survival" in methods:
            if survival_curves is None:
                survival_curves = {}
            pred["survival"] = survival_window(survival_curves, reading, optimizer, gamma, lam)
        if "plateau" in methods:
            pred["plateau"] = plateau_window(late_probes or {}, reading, optimizer, gamma, lam, width, total,
                                             grp.onset.unique(), threshold)
        if "recipe_run" in methods:
            run = run_recipe(RunStore(store).load(cfg["run_id"]).config, s.delta)
            pred["recipe_run"] = {"t1_steps": float(run["t1_steps"][0]), "t2_steps": float(run["t2_steps"][0])}
            if "recipe_adamw" in pred:     # the run's own recipe, with the same AdamW speed-up
                a = pred["recipe_adamw"]
                pred["recipe_run_adamw"] = {"t1_steps": pred["recipe_run"]["t1_steps"] / a["adamw_speedup_t1"],
                                            "t2_steps": pred["recipe_run"]["t2_steps"] / a["adamw_speedup_t2"]}
        row = {"reading": reading, "optimizer": optimizer, "gamma": gamma, "width": width, "wd": lam, "steps": total, "seeds": obs["seeds"],
               "onsets": len(obs["onsets"]), "observed_first": obs["first"], "observed_last": obs["last"],
               "observed_first_ci": obs["first_ci"], "observed_last_ci": obs["last_ci"],
               "first_bracket": obs["first_bracket"], "last_bracket": obs["last_bracket"],
               "p_window_exists": obs["p_window_exists"], "curve": obs}
        for m, p in pred.items():
            row[f"{m}_t1"], row[f"{m}_t2"] = p["t1_steps"], p["t2_steps"]
            row[f"{m}_first_error"] = obs["first"] - p["t1_steps"]
            row[f"{m}_last_error"] = obs["last"] - min(p["t2_steps"], total - width)
        rows.append(row)
    return rows


def as_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{k: v for k, v in r.items() if k != "curve"} for r in rows])
