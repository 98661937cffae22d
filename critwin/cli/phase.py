"""Command `critwin phase`: final OOD over decay strength x window onset x gamma, with predicted windows."""
from __future__ import annotations

from critwin.errors import ConfigError
from critwin.paper_checks.phase import (
    PHASE_SIZES,
    PhaseGrid,
    measure,
    predictions,
    render,
)
from critwin.paper_checks.readings import Reading


def cmd_phase(args):
    from pathlib import Path

    from critwin.figures import plot_phase
    from critwin.cli.common import executor_from
    from critwin.empirical import RunStore
    grid = PhaseGrid(Reading.parse(args.reading), tuple(args.gamma), tuple(args.wd), tuple(args.onsets),
                     args.width, args.steps, args.task_seeds, args.seeds, args.size)
    grid.check_size(args.max_runs)      # counted before a config is built or anything trains
    if not args.train and not Path(args.store).is_dir():
        raise ConfigError("store", args.store, "an existing run store folder (or drop --no-train)")
    with executor_from(args, args.train) as ex:
        pm = measure(grid, RunStore(args.store), ex, args.train, not args.no_progress, args.threshold)
    if args.methods:
        pm.predicted = predictions(grid, tuple(args.methods), args.threshold)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"phase_{args.size}_{grid.reading.label.replace('/', '-').replace(' ', '')}"
    for name in ("per_run", "cells", "timing", "predicted"):
        getattr(pm, name).to_csv(out / f"{stem}_{name}.csv", index=False)
    fig = plot_phase(pm, out / f"{stem}.png")
    payload = {"reading": grid.reading.label, "cells": pm.cells.to_dict(orient="records"),
               "timing": pm.timing.to_dict(orient="records"), "predicted": pm.predicted.to_dict(orient="records"),
               "figure": str(fig), "missing_runs": int(pm.per_run.ood.isna().sum())}
    return payload, render(pm) + f"\n\nwrote {out}/{stem}_*.csv and {fig}"


def register(parser):
    from critwin.cli.common import add_executor_args, add_gamma, add_max_runs
    d = PhaseGrid()
    parser.add_argument("--size", choices=PHASE_SIZES, default="quick",
                        help="quick: times / 10, one task instance and seed (machinery only); paper: the map")
    parser.add_argument("--reading", default=d.reading.label, help="FORM/SET[ xSCALE][/bias] (see critwin readings)")
    add_gamma(parser, "+", list(d.gammas))
    parser.add_argument("--wd", type=float, nargs="+", default=list(d.lambdas),
                        help="decay values in the paper's units (the reading's scale multiplies them)")
    parser.add_argument("--onsets", type=int, nargs="+", default=list(d.onsets),
                        help="window onsets in paper steps (early / middle / late are always added)")
    parser.add_argument("--width", type=int, default=d.width)
    parser.add_argument("--steps", type=int, default=d.steps)
    parser.add_argument("--task-seeds", type=int, default=d.task_seeds)
    parser.add_argument("--seeds", type=int, default=d.seeds)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--methods", nargs="*", default=["recipe", "reduced"], choices=("recipe", "reduced", "full"),
                        help="theory windows drawn over the map (none: skip)")
    parser.add_argument("--store", default="runs")
    parser.add_argument("--no-train", dest="train", action="store_false", help="only read the store")
    add_max_runs(parser)
    add_executor_args(parser)
    parser.add_argument("--out", default="critwin-out")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=cmd_phase)
