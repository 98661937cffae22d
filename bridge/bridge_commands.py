"""Handlers of `critwin bridge ...`: theory against the runs in a store."""
from __future__ import annotations

import numpy as np

from . import figures
from .compare import as_frame, compare
from .observed import QUANTITIES
from .table import format_table
from .theory_commands import attach_figure, figure_args


def reader(args):
    """The --store of a reading command: it must exist (an absent store is not an empty one)."""
    from ..empirical import RunStore
    RunStore(args.store).require()
    return args.store


def on_corrupt(args) -> str:
    return "skip" if getattr(args, "skip_corrupt", False) else "raise"


def add_store_args(p, default: str = "runs"):
    """--store and --skip-corrupt: the same for every command that reads a store."""
    p.add_argument("--store", default=default, help="run store folder")
    p.add_argument("--skip-corrupt", action="store_true",
                   help="warn about damaged run folders and leave them out (default: stop and name them)")


def cmd_compare(args):
    rows = compare(reader(args), args.threshold, args.metric, args.gamma, tuple(args.methods),
                   on_corrupt=on_corrupt(args), loss_norm=args.loss_norm, targets=args.targets)
    if not rows:
        return {"rows": []}, f"no onset sweeps (single-window runs) in {args.store}"
    frame = as_frame(rows)
    cols = ["reading", "gamma", "width", "wd", "seeds", "onsets", "observed_first", "first_bracket", "observed_last",
            "last_bracket"]
    for m in args.methods:
        cols += [f"{m}_t1", f"{m}_t2", f"{m}_first_error"]
    text = [format_table(frame.to_dict(orient="records"), cols),
            f"observed window: onsets whose mean final {args.metric} >= {args.threshold}; brackets: where the"
            " true edge lies between scanned onsets (its resolution);"
            " errors = observed - predicted, in steps; intervals: 90% seed bootstrap (JSON)."]
    payload = {"rows": frame.to_dict(orient="records"), "curves": [r["curve"] for r in rows]}
    attach_figure(args, "bridge_compare.png", lambda path: figures.plot_onset_comparison(rows, path, args.metric),
                  payload, text)
    return payload, "\n".join(text)


def cmd_timescales(args):
    from ..empirical import load_runs
    from .observed import timescales
    runs = load_runs(reader(args), on_corrupt(args))
    if runs.empty:
        return {"rows": []}, f"no runs in {args.store}"
    ts = timescales(runs, args.mem_level, args.ood_level)
    cfg = runs.drop_duplicates("run_id").set_index("run_id")[["gamma", "wd_windows", "seed"]]
    per_run = ts.join(cfg, on="run_id")
    grouped = per_run.groupby(["gamma", "wd_windows"]).agg(
        runs=("run_id", "size"), memorization_step=("memorization_step", "mean"),
        loss_half_step=("loss_half_step", "mean"), reasoning_step=("reasoning_step", "mean"),
        reasoned=("reasoning_step", lambda v: int(v.notna().sum()))).reset_index()
    rows = grouped.to_dict(orient="records")
    text = [format_table(rows), f"memorization: first eval with train acc >= {args.mem_level};"
            f" reasoning: first eval with OOD acc >= {args.ood_level} (mean over the runs that got there)"]
    return {"rows": rows, "per_run": per_run.to_dict(orient="records")}, "\n".join(text)


def cmd_mechanism(args):
    from ..empirical import load_runs
    from .mechanism import state_table
    runs = load_runs(reader(args), on_corrupt(args))
    if args.gamma is not None and not runs.empty:
        runs = runs[runs.gamma == args.gamma]
    table = state_table(runs, args.steps, args.match)
    if table.empty:
        return {"rows": []}, f"no runs{' matching ' + ' or '.join(map(repr, args.match)) if args.match else ''} in {args.store}"
    rows = table.to_dict(orient="records")
    text = [format_table(rows),
            "mean over runs at the evaluation nearest each step; effective_shrink: the decay's shrink per step"
            " through the optimizer (lr lambda / (sqrt(v_hat) + eps) for l2 under Adam); nan: not logged by"
            " that run"]
    if args.out_csv:
        table.to_csv(args.out_csv, index=False)
        text.append(f"table: {args.out_csv}")
    return {"rows": rows}, "\n".join(text)


def cmd_arrival(args):
    from ..empirical import load_runs
    from .mechanism import arrival_table, threshold_holdout
    runs = load_runs(reader(args), on_corrupt(args))
    if not runs.empty:
        runs = runs[(runs.optimizer == args.optimizer) & runs.amsgrad.eq(False) & runs.freeze_second_moment.isna()]
        if args.reading:
            runs = runs[runs.reading == args.reading]
    table = arrival_table(runs, args.mem_level)
    if args.wd is not None and not table.empty:
        table = table[np.isclose(table.wd_value, args.wd)]
    if table.empty:
        return {"rows": [], "holdout": []}, f"no runs with one decay window in {args.store}"
    cells = (table.groupby(["reading", "gamma", "wd_value", "width", "onset"])
             .agg(runs=("run_id", "size"), memorization_step=("memorization_step", "median"),
                  arrival_norm=("arrival_norm", "mean"), end_norm=("end_norm", "mean"),
                  norm_ratio=("norm_ratio", "mean"), final_ood=("final_ood", "mean")).reset_index())
    hold = threshold_holdout(table, args.fit_gamma, args.level)
    hold_cells = threshold_holdout(cells, args.fit_gamma, args.level)
    payload = {"rows": cells.to_dict(orient="records"), "holdout": hold.to_dict(orient="records"),
               "holdout_cells": hold_cells.to_dict(orient="records"), "per_run": table.to_dict(orient="records")}
    text = [format_table(payload["rows"]),
            f"arrival: the decayed weight norm at the first evaluation >= max(onset, memorization: train acc >="
            f" {args.mem_level}); end_norm: at the window's end; norm_ratio = arrival / end (means over runs)", "",
            f"'feature >= threshold' <=> final OOD >= {args.level}, threshold fitted on the runs at gamma"
            f" {args.fit_gamma:g}, accuracy per gamma (held_out: not used in the fit):",
            format_table(payload["holdout"]), "", "the same on the cell means (one point per gamma x onset):",
            format_table(payload["holdout_cells"])]
    if args.out_csv:
        table.to_csv(args.out_csv, index=False)
        text.append(f"per-run table: {args.out_csv}")
    attach_figure(args, "bridge_arrival.png", lambda path: figures.plot_arrival(table, hold, args.level, path),
                  payload, text)
    return payload, "\n".join(text)


def cmd_fit(args):
    from .fit import fit_columns, fit_store, fit_summary
    results, skipped = fit_store(reader(args), args.quantity, args.fit_gamma, mem_level=args.mem_level,
                                 ood_level=args.ood_level, threshold=args.threshold, on_corrupt=on_corrupt(args))
    text = list(skipped)
    for res in results:
        text += [" / ".join(res["group"]), format_table(res["rows"], fit_columns(res)), fit_summary(res), ""]
    if not results:
        text.append(f"no group of {args.quantity} times with the fit gamma and another gamma in {args.store}")
    payload = {"quantity": args.quantity, "fit_gamma": args.fit_gamma, "results": results}
    if args.quantity == "reasoning":
        from .observed import decay_budget_at_rise
        budget = decay_budget_at_rise(args.store, args.ood_level, on_corrupt(args)).to_dict(orient="records")
        payload["decay_budget"] = budget
        text += ["cumulative decay at the OOD rise (budget = lr * lambda * rise steps, mean over runs that rose):",
                 format_table(budget), ""]
    if results:
        attach_figure(args, f"bridge_fit_{args.quantity}.png",
                      lambda path: figures.plot_law_fits(results, path, args.quantity), payload, text)
    return payload, "\n".join(text)


def register(sub):
    p = sub.add_parser("compare", help="predicted vs observed windows for the onset sweeps in a store")
    add_store_args(p)
    p.add_argument("--gamma", type=float, nargs="+", default=None, help="only these gammas")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--metric", default="ood_acc")
    p.add_argument("--methods", nargs="+", choices=("recipe", "recipe_adamw", "recipe_run", "reduced", "full", "adamw",
                                                "memorization"),
                   default=["recipe", "recipe_run", "reduced"],
                   help="recipe_run: the recipe with sigma_e and c_r of the runs' own initial embeddings;"
                        " memorization: left edge at the stored runs' memorization step (no theory)")
    p.add_argument("--loss-norm", choices=("sum", "pair", "mean"), default="sum")
    p.add_argument("--targets", choices=("teacher", "permutation"), default="permutation",
                   help="stylised targets for the theory (the Transformer's task is a permutation task)")
    figure_args(p, "bridge_compare.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_compare)

    p = sub.add_parser("fit", help="fit each rate law at one gamma, predict the held-out gammas")
    add_store_args(p)
    p.add_argument("--quantity", choices=QUANTITIES,
                   default="reasoning", help="observed time to fit (see critwin.bridge.observed.observed_times)")
    p.add_argument("--fit-gamma", type=float, default=0.8, help="the gamma whose runs fix each law's prefactor")
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--ood-level", type=float, default=0.5)
    p.add_argument("--threshold", type=float, default=0.5, help="final OOD level defining observed windows")
    figure_args(p, "bridge_fit_QUANTITY.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("mechanism", help="the state each decay schedule and optimizer variant leaves, over"
                                         " training (norm, condensation, alignment, Adam's effective shrink)")
    add_store_args(p)
    p.add_argument("--steps", type=int, nargs="+", default=[400, 5000, 10000, 20000])
    p.add_argument("--gamma", type=float, default=None, help="only runs at this gamma")
    p.add_argument("--match", nargs="+", default=None,
                   help="only variants whose label contains one of these texts, e.g. 5000:10000 'no decay'")
    p.add_argument("--out-csv", default=None, help="also write the table as CSV")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_mechanism)

    p = sub.add_parser("arrival", help="the weight norm at which a decay window meets the memorised model, and"
                                       " whether it predicts composition across gammas (fit at one, test the rest)")
    add_store_args(p)
    p.add_argument("--reading", default=None, help="only runs of this reading, e.g. l2/non_embedding")
    p.add_argument("--wd", type=float, default=None, help="only windows of this decay value")
    p.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw",
                   help="only runs of this optimizer (AMSGrad and frozen-second-moment runs left out)")
    p.add_argument("--fit-gamma", type=float, default=0.8)
    p.add_argument("--level", type=float, default=0.5, help="final OOD accuracy that counts as composing")
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--out-csv", default=None, help="also write the per-run table as CSV")
    figure_args(p, "bridge_arrival.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_arrival)

    p = sub.add_parser("timescales", help="observed memorization and reasoning times per gamma and schedule")
    add_store_args(p)
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--ood-level", type=float, default=0.5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_timescales)

    from .stage_theory import register_bridge as register_stages
    register_stages(sub)
