"""Predicted Alchemy stages: context features of each query, the linear readout's flow
(theory.stages), and the event curves A, B, C its predictions trace (`critwin theory stages`).

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

from ..errors import ConfigError
from ..theory.stages import LinearReadoutFlow, flow_times, half_rise_time, stage_order

BLOCKS = ("context", "query", "potions", "links")
CURVES = {"A": "event_a", "B": "event_b", "C": "event_c", "B|A": "p_b_given_a", "C|AB": "p_c_given_ab"}


def context_features(episodes, blocks=BLOCKS) -> np.ndarray:
    """One row per query (in the order of the task's splits), the chosen blocks side by side."""
    from ..empirical.tasks.alchemy import N_CLASSES, stone_class
    from ..empirical.tasks.alchemy_chemistry import POTIONS, corner
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
                   blocks=BLOCKS, times=None) -> dict:
    """Fit the readout's flow on the training chemistries; the held-out event curves over flow
    time; each stage's half-rise time, the order, final levels and the deepest dip of P(B|A)."""
    from ..empirical.metrics.evaluate import alchemy_events
    from ..empirical.tasks.alchemy import AlchemyTask, N_CLASSES
    task = AlchemyTask(variant, hops, seed, max_chemistries=chemistries)
    eps = task.episodes()
    data = task.generate(eps)
    X = {k: context_features(eps[k], blocks) for k in ("train", "test")}
    flow = LinearReadoutFlow().fit(X["train"], np.eye(N_CLASSES)[data.splits["train"].targets])
    times = flow_times() if times is None else np.asarray(times, dtype=float)
    curves = pd.DataFrame([{"t": t, **alchemy_events(flow.predict(X["test"], t), data.splits["test"])}
                           for t in times])
    from .stages import stage_time
    stage_t = {k: stage_time(curves.t, curves[c].fillna(0.0), c, "threshold", 1) for k, c in CURVES.items()}
    cp_t = {k: stage_time(curves.t, curves[c].fillna(0.0), c, "changepoint") for k, c in CURVES.items()}
    rise_t = {k: half_rise_time(curves.t, curves[c].fillna(0.0)) for k, c in CURVES.items()}
    ba = curves["p_b_given_a"].to_numpy()
    dip = {"depth": float(ba[0] - np.nanmin(ba)), "t": float(curves.t[np.nanargmin(ba)])}
    return {"task": task.name, "variant": variant, "hops": hops, "chemistries": chemistries, "features": list(blocks),
            "stage_times": stage_t, "changepoint_times": cp_t, "half_rise_times": rise_t, "order": stage_order({k: rise_t[k] for k in ("A", "B", "C") if np.isfinite(stage_t[k])}),
            "never": [k for k in ("A", "B", "C") if not np.isfinite(stage_t[k])],
            "final": {k: float(curves[c].iloc[-1]) for k, c in CURVES.items()},
            "dip_b_given_a": dip if dip["depth"] >= 0.05 else None, "curves": curves}


def cmd_theory_stages(args):
    from pathlib import Path

    from .table import format_table
    blocks = tuple(b.strip() for b in args.features.split(","))
    hops = args.hops or ([None] if args.task == "withheld" else [2, 3, 4, 5])
    if args.task == "withheld" and hops != [None]:
        raise ConfigError("hops", args.hops, "none for the withheld task (its queries are one-hop)")
    results = [predict_stages(args.task, h, args.chemistries or None, args.task_seed, blocks) for h in hops]
    rows = [{"task": r["task"], **{f"t_{k}": v for k, v in r["stage_times"].items()}, "order": r["order"], "never": ",".join(r["never"]),
             **{f"rise_{k}": r["half_rise_times"][k] for k in ("A", "B", "C")},
             **{f"final_{k}": v for k, v in r["final"].items()},
             "dip_B|A": r["dip_b_given_a"]["depth"] if r["dip_b_given_a"] else 0.0} for r in results]
    text = [format_table(rows),
            "t_X: flow time at which event X's held-out curve first reaches the stage level (0.95 for A, 0.90"
            " otherwise; nan: never); rise_X: when it has risen half-way (nan: no rise); order: the stages that"
            " reach their level, by rise_X (levels differ, so t_X can invert nested events). Only orders and"
            " ratios are predictions. final_X below the level: the stage needs more than a linear readout of the"
            f" features {','.join(blocks)}."]
    payload = {"rows": rows, "features": list(blocks)}
    if args.out_csv:
        out = Path(args.out_csv)
        out.parent.mkdir(parents=True, exist_ok=True)
        pd.concat([r["curves"].assign(task=r["task"]) for r in results]).to_csv(out, index=False)
        payload["curves_csv"] = str(out)
        text.append(f"wrote the predicted curves to {out}")
    from .figures import plot_predicted_stages
    from .theory_commands import attach_figure
    attach_figure(args, f"predicted_stages_{args.task}.png", lambda path: plot_predicted_stages(results, path),
                  payload, text)
    return payload, "\n".join(text)


def register(sub):
    p = sub.add_parser("stages", help="predicted Alchemy stages: a linear readout's flow on the task's statistics",
                       description="Fits the exact gradient flow of a linear readout of context features on the"
                                   " training chemistries and traces the held-out events A, B, C over flow time:"
                                   " the predicted order of the stages, their relative times, and which stages"
                                   " a linear readout cannot reach. No training.")
    p.add_argument("--task", choices=("withheld", "composition", "decomposition"), default="withheld")
    p.add_argument("--hops", type=int, nargs="+", default=None, help="composition / decomposition (default 2 3 4 5)")
    p.add_argument("--chemistries", type=int, default=400, help="chemistries per split at most (0 = all)")
    p.add_argument("--task-seed", type=int, default=0)
    p.add_argument("--features", default=",".join(BLOCKS), help="feature blocks, some of " + ", ".join(BLOCKS))
    p.add_argument("--out-csv", default=None, help="write the predicted event curves (tidy CSV) here")
    p.add_argument("--out", default="critwin-out", help="folder for the figure")
    p.add_argument("--no-figure", action="store_true", help="do not write predicted_stages_TASK.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_theory_stages)


STAGE_METRICS = {"A": "event_a", "B": "event_b", "C": "event_c"}


def compare_stages(predicted: list[dict], observed, method: str = "threshold") -> dict:
    """Predicted (predict_stages results) against observed stage times (the summary of
    bridge.stages.detect_store), both timed by the same `method` (threshold rule, or where the
    last change-point rise completes): per condition the two orders, and over every
    (condition, stage) both reach the rank correlation and the timescale factor (steps per unit
    of flow time, geometric mean) with the spread of log(observed / (factor * predicted)).
    A store with several conditions per task (other lr, gamma) is read at its first: keep one per store."""
    from scipy.stats import spearmanr

    from .stages import check_method
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


def cmd_bridge_stages(args):
    from ..empirical import RunStore
    from .stages import detect_store
    from .table import format_table
    RunStore(args.store).require()
    _, observed = detect_store(args.store, tuple(STAGE_METRICS.values()), "test", args.method, args.n,
                               on_corrupt="skip" if args.skip_corrupt else "raise")
    if "hops" not in observed.columns:
        observed["hops"] = np.nan
    conds = observed[observed.task.astype(str).str.startswith("alchemy_")][["task", "hops"]].drop_duplicates()
    predicted = [predict_stages(t.removeprefix("alchemy_"), None if not np.isfinite(h) else int(h),
                                args.chemistries or None, 0)
                 for t, h in zip(conds.task, conds.hops.astype(float))]
    res = compare_stages(predicted, observed, args.method)
    how = "threshold rule" if args.method == "threshold" else "last change-point rise"
    text = [format_table(res["rows"]),
            f"orders agree in {res['orders_agree']} of {res['conditions']} conditions ({how} on both;"
            " a stage never reached is left out of the order)"]
    if "spearman" in res:
        text.append(f"rank correlation of stage times over {len(res['pairs'])} (condition, stage) pairs:"
                    f" {res['spearman']:.2f}; fitted {res['steps_per_flow_time']:.3g} steps per unit of flow"
                    f" time, log residual sd {res['log_residual_sd']:.2f}")
    if res["pairs"]:
        from .figures import plot_stage_times
        from .theory_commands import attach_figure
        attach_figure(args, "stage_times.png", lambda path: plot_stage_times(res, path), res, text)
    return res, "\n".join(text)


def register_bridge(sub):
    p = sub.add_parser("stages", help="predicted (linear readout) vs observed Alchemy stage order and times",
                       description="For every Alchemy task and hop count with runs in the store: the stage times"
                                   " the runs show (threshold rule, median over seeds) against the linear"
                                   " readout's predicted ones; orders, rank correlation, timescale factor.")
    from .bridge_commands import add_store_args
    add_store_args(p)
    p.add_argument("--n", type=int, default=3, help="consecutive evaluations at or above the level")
    from .stages import STAGE_METHODS
    p.add_argument("--method", choices=STAGE_METHODS, default="threshold",
                   help="how both sides are timed: the threshold rule, or where a curve's last change-point rise"
                        " completes (for runs whose curves rise but stay below the levels, as at cpu size)")
    p.add_argument("--chemistries", type=int, default=400, help="chemistries per split for the prediction (0 = all)")
    p.add_argument("--out", default="critwin-out", help="folder for the figure")
    p.add_argument("--no-figure", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_bridge_stages)
