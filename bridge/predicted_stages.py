"""Predicted Alchemy stages: context features of each query, the linear readout's flow
(theory/readout_stages.py), and the event curves A, B, C its predictions trace (`critwin theory stages`).

The features are what one attention layer and a readout can gather from the context, each
block a normalised bag over the 108 stone classes (or the 6 potions):
    context  the stones that occur in the support
    query    the query stone (one-hot)
    potions  the query's potions
    links    the stones the support links the query stone to (ends of items starting at it)
A stage the readout can only reach with other features (composing hops, undoing paths) shows
as a curve that stops short; that is the model's answer to "which stages are linear".
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from critwin.theory.readout_stages import (
    LinearReadoutFlow,
    flow_times,
    half_rise_time,
    stage_order,
)

from critwin.errors import ConfigError

BLOCKS = ("context", "query", "potions", "links")
STAGE_CURVES = {"A": "event_a", "B": "event_b", "C": "event_c", "B|A": "p_b_given_a", "C|AB": "p_c_given_ab"}


def context_features(episodes, blocks=BLOCKS) -> np.ndarray:
    """One row per query (in the order of the task's splits), the chosen blocks side by side."""
    from critwin.empirical.tasks.alchemy import N_CLASSES, stone_class
    from critwin.empirical.tasks.alchemy_chemistry import POTIONS, corner
    unknown = sorted(set(blocks) - set(BLOCKS))
    if unknown or not blocks:
        raise ConfigError("features", ",".join(unknown) or "(none)", "some of " + ", ".join(BLOCKS))
    rows = []
    for ep in episodes:
        cls = {corner(i): stone_class(ep.chemistry, corner(i)) for i in range(8)}
        context = np.zeros(N_CLASSES)
        for s, _, e in ep.support:
            context[cls[tuple(s)]] += 1
            context[cls[tuple(e)]] += 1
        context /= context.sum()
        for q in ep.queries:
            block = {"context": context, "query": np.eye(N_CLASSES)[cls[tuple(q.start)]],
                     "potions": np.bincount([POTIONS.index(p) for p in q.potions], minlength=len(POTIONS))
                     / len(q.potions)}
            links = np.zeros(N_CLASSES)
            for s, _, e in ep.support:
                if tuple(s) == tuple(q.start):
                    links[cls[tuple(e)]] += 1
            block["links"] = links / max(1.0, links.sum())
            rows.append(np.concatenate([block[b] for b in blocks]))
    return np.array(rows)


def predict_stages(variant: str, hops: int | None = None, chemistries: int | None = 400, seed: int = 0,
                   blocks=BLOCKS, times=None, n: int = 3) -> dict:
    """Fit the readout's flow on the training chemistries; the held-out event curves over flow
    time; each stage's time, the order, final levels and the deepest dip of P(B|A).

    One timing rule: `stage_times` and `order` use the rule observed runs are timed by
    (`empirical.metrics.stages.stage_time`: the stage level, 0.95 for A and 0.90 otherwise, held for `n`
    evaluations in a row, here points of the flow-time grid). `half_rise_times` are a second,
    separate reading and never enter the order."""
    from critwin.empirical.metrics.evaluate import alchemy_events
    from critwin.empirical.tasks.alchemy import N_CLASSES, AlchemyTask
    task = AlchemyTask(variant, hops, seed, max_chemistries=chemistries)
    eps = task.episodes()
    data = task.generate(eps)
    X = {k: context_features(eps[k], blocks) for k in ("train", "test")}
    flow = LinearReadoutFlow().fit(X["train"], np.eye(N_CLASSES)[data.splits["train"].targets])
    times = flow_times() if times is None else np.asarray(times, dtype=float)
    curves = pd.DataFrame([{"t": t, **alchemy_events(flow.predict(X["test"], t), data.splits["test"])}
                           for t in times])
    from critwin.empirical.metrics.stages import stage_time
    stage_t = {k: stage_time(curves.t, curves[c].fillna(0.0), c, "threshold", n) for k, c in STAGE_CURVES.items()}
    cp_t = {k: stage_time(curves.t, curves[c].fillna(0.0), c, "changepoint") for k, c in STAGE_CURVES.items()}
    rise_t = {k: half_rise_time(curves.t, curves[c].fillna(0.0)) for k, c in STAGE_CURVES.items()}
    ba = curves["p_b_given_a"].to_numpy()
    dip = {"depth": float(ba[0] - np.nanmin(ba)), "t": float(curves.t[np.nanargmin(ba)])}
    return {"task": task.name, "variant": variant, "hops": hops, "chemistries": chemistries, "features": list(blocks),
            "stage_times": stage_t, "changepoint_times": cp_t, "half_rise_times": rise_t, "order": stage_order({k: stage_t[k] for k in ("A", "B", "C")}),
            "never": [k for k in ("A", "B", "C") if not np.isfinite(stage_t[k])],
            "final": {k: float(curves[c].iloc[-1]) for k, c in STAGE_CURVES.items()},
            "dip_b_given_a": dip if dip["depth"] >= 0.05 else None, "curves": curves}


STAGE_METRICS = {"A": "event_a", "B": "event_b", "C": "event_c"}


def compare_stages(predicted: list[dict], observed, method: str = "threshold") -> dict:
    """Predicted (predict_stages results) against observed stage times (the summary of
    bridge.stages.detect_store), both timed by the same `method` (threshold rule, or where the
    last change-point rise completes): per condition the two orders, and over every
    (condition, stage) both reach the rank correlation and the timescale factor (steps per unit
    of flow time, geometric mean) with the spread of log(observed / (factor * predicted)).
    A store with several conditions per task (other lr, gamma) is read at its first: keep one per store."""
    from critwin.empirical.metrics.stages import check_method
    from scipy.stats import spearmanr
    times = "stage_times" if check_method(method) == "threshold" else "changepoint_times"
    rows, pairs = [], []
    for r in predicted:
        obs = observed[(observed.task == f"alchemy_{r['variant']}")
                       & ((observed.hops.isna()) if r["hops"] is None else (observed.hops == r["hops"]))]
        if obs.empty:
            continue
        o_t = {k: float(obs[obs.metric == m]["median"].iloc[0]) if (obs.metric == m).any() else float("nan")
               for k, m in STAGE_METRICS.items()}
        p_t = {k: r[times][k] for k in STAGE_METRICS}
        row = {"task": r["task"], "predicted_order": stage_order(p_t), "observed_order": stage_order(o_t)}
        row["order_agrees"] = row["predicted_order"] == row["observed_order"]
        for k in STAGE_METRICS:
            row[f"pred_t_{k}"], row[f"obs_step_{k}"] = p_t[k], o_t[k]
            if np.isfinite(p_t[k]) and np.isfinite(o_t[k]):
                pairs.append((r["task"], k, p_t[k], o_t[k]))
        rows.append(row)
    if not rows:
        raise ConfigError("store", "no matching runs", "Alchemy runs (critwin train alchemy) of the predicted tasks")
    out = {"rows": rows, "pairs": [{"task": t, "stage": k, "predicted": p, "observed": o} for t, k, p, o in pairs],
           "orders_agree": int(sum(r["order_agrees"] for r in rows)), "conditions": len(rows)}
    if len(pairs) >= 2:
        p, o = np.array([x[2] for x in pairs]), np.array([x[3] for x in pairs])
        rho = spearmanr(p, o).statistic if np.ptp(p) > 0 and np.ptp(o) > 0 else float("nan")
        log_f = np.mean(np.log(o) - np.log(p))
        out.update({"spearman": float(rho), "steps_per_flow_time": float(np.exp(log_f)),
                    "log_residual_sd": float(np.std(np.log(o) - np.log(p) - log_f))})
    return out


