"""`critwin bridge left-edge`: the L2 window's left edge from Adam's gain in the first steps."""
from __future__ import annotations

from critwin import figures
from critwin.cli.common import add_gamma, add_store_args, attach_figure, figure_args, on_corrupt, reader
from critwin.errors import ConfigError
from critwin.table import format_table
from critwin.vocabulary import PAPER_GAMMAS


def register(sub):
    p = sub.add_parser("left-edge", help="the L2 window's left edge from Adam's gain in the first steps: fit the"
                                         " threshold at one gamma, predict the others")
    add_store_args(p)
    add_gamma(p, "+", PAPER_GAMMAS)
    p.add_argument("--wd", type=float, nargs="+", default=[1e-3, 4e-3, 1.6e-2],
                   help="penalty strengths to predict (cells with onset sweeps in the store are added)")
    p.add_argument("--reading", default="l2/non_embedding", help="decay reading of the onset sweeps compared with")
    p.add_argument("--width", type=float, default=5000, help="window width of the onset sweeps compared with")
    p.add_argument("--threshold", type=float, default=0.5, help="final OOD that makes an onset part of the window")
    p.add_argument("--fit-gamma", type=float, default=0.5)
    p.add_argument("--fit-wd", type=float, default=4e-3)
    p.add_argument("--fit-edge", type=float, default=None,
                   help="the observed edge to fit s* to (default: midpoint of that cell's bracket in the store)")
    p.add_argument("--task-seeds", type=int, default=3, help="probe runs: task instances per gamma")
    p.add_argument("--seeds", type=int, default=1, help="probe runs: init seeds per task instance")
    p.add_argument("--probe-steps", type=int, default=600)
    p.add_argument("--probe-every", type=int, default=10)
    p.add_argument("--no-train", dest="train", action="store_false", help="only read the store (no probe runs trained)")
    from critwin.cli.common import add_executor_args, add_max_runs
    add_max_runs(p)
    add_executor_args(p)
    p.add_argument("--no-progress", action="store_true")
    figure_args(p, "bridge_left_edge.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_left_edge)


def cmd_left_edge(args):
    from critwin.bridge.compare import recipe_t1
    from critwin.bridge.left_edge import (
        gain_curves,
        left_edge_table,
        observed_edges,
        probe_configs,
    )
    from critwin.cli.common import executor_from
    from critwin.empirical import RunStore, load_summaries
    from critwin.empirical.store import config_columns
    from critwin.empirical.sweep import run_sweep
    if args.task_seeds < 1 or args.seeds < 1:
        raise ConfigError("task_seeds" if args.task_seeds < 1 else "seeds", min(args.task_seeds, args.seeds),
                          "a positive number of probe runs per gamma")
    cfgs = probe_configs(args.gamma, args.task_seeds, args.seeds, args.probe_steps, args.probe_every, args.max_runs)
    store = RunStore(args.store)
    if args.train:
        with executor_from(args) as ex:
            run_sweep(cfgs, store, ex, progress=not args.no_progress)
    else:
        reader(args)
    runs = [r for r in (store.complete(c.run_id()) for c in cfgs) if r is not None]
    if not runs:
        return {"rows": []}, f"no probe runs in {args.store} (drop --no-train to train them)"
    curves = gain_curves(runs)
    base = config_columns(cfgs[0].resolved())
    summaries = load_summaries(args.store, on_corrupt(args))
    observed = observed_edges(summaries, args.reading, args.width, args.threshold, base)
    s_star, table = left_edge_table(curves, observed, args.wd, args.fit_gamma, args.fit_wd, args.fit_edge)
    table["recipe_t1"] = [recipe_t1(cfgs[0], g) for g in table.gamma]
    held = table[~table.fitted & table.in_bracket.notna()]
    payload = {"s_star": s_star, "probe_runs": len(runs), "rows": table.to_dict(orient="records"),
               "held_out_in_bracket": int(held.in_bracket.sum()), "held_out_cells": int(len(held))}
    text = [f"penalty shrink lambda * adam_gain(t) of {len(runs)} no-decay probe runs ({args.probe_steps} steps,"
            f" logged every {args.probe_every}); s* = {s_star:.4g} per step, fitted at gamma {args.fit_gamma:g},"
            f" wd {args.fit_wd:g}",
            "predicted edge: first logged step after the early peak with lambda * gain <= s* (0: the peak stays below s*;"
            " recipe_t1: the paper's recipe, which does not depend on gamma or lambda);"
            f" observed: first onset with mean final OOD >= {args.threshold} ({args.reading}, width {args.width:g}),"
            " the true edge in (bracket_lo, bracket_hi]",
            format_table(payload["rows"]),
            f"held out: {payload['held_out_in_bracket']} of {payload['held_out_cells']} predicted edges inside the"
            " observed bracket"]
    attach_figure(args, "bridge_left_edge.png",
                  lambda path: figures.plot_left_edge(curves, table, s_star, path), payload, text)
    return payload, "\n".join(text)
