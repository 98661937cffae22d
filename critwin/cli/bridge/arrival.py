"""`critwin bridge arrival`: the weight norm at which a decay window meets the memorised model."""
from __future__ import annotations

import numpy as np

from critwin import figures
from critwin.cli.common import add_optimizer, add_store_args, attach_figure, figure_args, on_corrupt, reader
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("arrival", help="the weight norm at which a decay window meets the memorised model, and"
                                       " whether it predicts composition across gammas (fit at one, test the rest)")
    add_store_args(p)
    p.add_argument("--reading", default=None, help="only runs of this reading, e.g. l2/non_embedding")
    p.add_argument("--wd", type=float, default=None, help="only windows of this decay value")
    add_optimizer(p, help="only runs of this optimizer (AMSGrad and frozen-second-moment runs left out)")
    p.add_argument("--fit-gamma", type=float, default=0.8)
    p.add_argument("--level", type=float, default=0.5, help="final OOD accuracy that counts as composing")
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--out-csv", default=None, help="also write the per-run table as CSV")
    figure_args(p, "bridge_arrival.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_arrival)


def cmd_arrival(args):
    from critwin.bridge.mechanism import arrival_table, plain_runs, threshold_holdout
    from critwin.empirical import load_runs
    runs = load_runs(reader(args), on_corrupt(args))
    if not runs.empty:
        runs = plain_runs(runs, args.optimizer)
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
