"""Commands `critwin stages`, `critwin plasticity` (and its other name `freeze-sweep`): stage times and freeze windows."""
from __future__ import annotations

import numpy as np

from critwin.bridge.plasticity import _freeze_grid, frozen_configs, plasticity_configs, plasticity_window
from critwin.empirical.metrics.stages import STAGE_METHODS, check_curves, detect, stage_curve
from critwin.errors import ConfigError


def cmd_stages(args):
    from pathlib import Path

    from critwin.table import format_table
    from critwin.empirical import RunStore, load_runs
    RunStore(args.store).require()
    metrics = tuple(m.strip() for m in args.metric.split(","))
    runs = load_runs(args.store, "skip" if args.skip_corrupt else "raise")
    per_run, summary = detect(runs, metrics, args.split, args.method, args.n, args.task, args.store)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    per_run.to_csv(out / "stages_per_run.csv", index=False)
    summary.to_csv(out / "stages.csv", index=False)
    text = [format_table(summary.to_dict(orient="records")),
            f"stage: {'first evaluation held >= tau (0.95 for event_a, 0.90 otherwise) for ' + str(args.n) + ' evaluations' if args.method == 'threshold' else 'completion of the last rise found by change points in log-time'};"
            " median over seeds with censored seeds kept (never = inf), 90% bootstrap interval, fraction reached",
            f"wrote {out}/stages.csv and stages_per_run.csv"]
    payload = {"summary": summary.to_dict(orient="records"), "per_run": per_run.to_dict(orient="records")}
    if not args.no_figure:
        from critwin.figures import plot_stage_curves
        sel = runs[(runs.split == args.split) & runs.metric.isin(metrics)]
        payload["figure"] = str(plot_stage_curves(sel, per_run, out / "stages.png"))
        text.append(f"figure: {payload['figure']} (curves per condition, mean over seeds; dashed: median stage time)")
    return payload, "\n".join(text)


def register(p):
    from critwin.cli.common import add_store_args
    add_store_args(p)
    p.add_argument("--task", default=None, help="only runs of this task (e.g. alchemy_withheld)")
    p.add_argument("--metric", default="event_a,event_b,event_c,p_b_given_a", help="comma-separated curves")
    p.add_argument("--split", default="test", help="split the curves are read from")
    p.add_argument("--method", choices=STAGE_METHODS, default="threshold")
    p.add_argument("--n", type=int, default=3, help="consecutive evaluations at or above tau")
    p.add_argument("--out", default="critwin-out")
    p.add_argument("--no-figure", action="store_true", help="do not write stages.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stages)


def plasticity_plan(args, store):
    """(component -> configs, freeze steps) of a `critwin plasticity` call: from --set (a fresh
    baseline per seed, checkpointed at every freeze step) or from a stored --baseline run (its
    seed and the next ones, frozen at its own checkpoints unless --every says otherwise)."""
    from dataclasses import replace

    from critwin.empirical import TrainConfig
    from critwin.empirical.sweep import SweepSpec
    from critwin.empirical.sweep.spec import check_runs
    components = [c.strip() for c in args.component.split(",") if c.strip()]
    start = args.start or 0

    def check_size(stop, every, seeds):     # counted before the freeze steps are built
        if every is not None and every >= 1 and stop > start:
            n = len(range(start, stop + 1, every))
            check_runs(len(components) * (n + 1) * seeds, args.max_runs,
                       f"{len(components)} components x ({n} freeze steps + the baseline) x {seeds} seeds")
    if args.baseline is None:
        if args.freeze_optimizer is not None:
            raise ConfigError("freeze_optimizer", args.freeze_optimizer,
                              "nothing without --baseline (use --set freeze_optimizer=...)")
        check_size(3000 if args.stop is None else args.stop, 500 if args.every is None else args.every,
                   2 if args.seeds is None else args.seeds)
        steps = _freeze_grid(start, 3000 if args.stop is None else args.stop, 500 if args.every is None else args.every)
        base = SweepSpec().with_sets(args.set).base
        seeds = range(2 if args.seeds is None else args.seeds)
        return {c: plasticity_configs(base, c, steps, seeds, args.branch) for c in components}, steps
    if args.set:
        raise ConfigError("set", args.set, "nothing with --baseline (the stored run's config is the base)")
    run = store.complete(args.baseline)
    if run is None:
        raise ConfigError("baseline", args.baseline, f"the id of a complete run in {store.root}")
    b = TrainConfig.from_dict(run.config)
    stop = b.steps - 1 if args.stop is None else args.stop
    if args.every is not None:
        check_size(stop, args.every, 1 if args.seeds is None else args.seeds)
        steps = _freeze_grid(start, stop, args.every)
    else:
        steps = [c for c in b.checkpoints if start <= c <= stop]
        if not steps:
            raise ConfigError("baseline", args.baseline, "a run with checkpoints inside training (or give --every)")
    baselines = {b.seed + k: replace(b, seed=b.seed + k) for k in range(1 if args.seeds is None else args.seeds)}
    plans = {c: frozen_configs(baselines, c, steps, args.branch) for c in components}
    if args.freeze_optimizer is not None:       # the frozen runs only: the baselines never freeze
        plans = {c: {k: v if k[0] is None else replace(v, freeze_optimizer=args.freeze_optimizer) for k, v in p.items()}
                 for c, p in plans.items()}
    return plans, steps


def cmd_plasticity(args):
    from pathlib import Path

    from critwin.table import format_table
    from critwin.cli.common import executor_from
    from critwin.empirical import RunStore
    store = RunStore(args.store)
    plans, steps = plasticity_plan(args, store)
    components = list(plans)
    first = next(iter(next(iter(plans.values())).values()))
    args.split, metrics = stage_curve(first.task, args.split, args.metric)
    if args.train:          # before any training (--no-train reads what the stored runs hold)
        check_curves(first, args.split, metrics)
    tables = []
    with executor_from(args, args.train) as ex:
        for comp, cfgs in plans.items():
            for k, metric in enumerate(metrics):    # the runs train once, for the first metric
                per_run, table = plasticity_window(cfgs, store, metric, args.split, args.delay, args.n, ex,
                                                   args.train and k == 0, not args.no_progress, args.method)
                if len(table):
                    base = per_run[per_run.freeze_step.isna()]
                    tables.append(table.assign(component=comp, metric=metric,
                                               baseline_stage=float(np.nanmedian(base.stage_step))
                                               if base.stage_step.notna().any() else float("nan"),
                                               baseline_final=float(base.final.mean())))
    import pandas as pd
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "plasticity.csv", index=False)
    windows = {f"{c} {m}": table[(table.component == c) & (table.metric == m) & table.in_window].freeze_step.tolist()
               for c in components for m in metrics} if len(table) else {}
    text = [format_table(table.to_dict(orient="records"))]
    text += [f"plasticity window of {k}: freeze steps {w or 'none'}" for k, w in windows.items()]
    never = sorted(set(table[table.baseline_stage.isna()].metric)) if len(table) else []
    text += [f"warning: no baseline completes the {m} stage, so its delays are not evidence of a window"
             for m in never]
    if not len(table):
        text.append("no frozen run and its baseline are both stored yet" + (" (run without --no-train)" if not args.train
                                                                           else ""))
    seeds = int(table.seeds.max()) if len(table) else 0
    text.append(f"window: mean delay of the stage ({args.method}) above {args.delay:g} steps (over {seeds} seeds;"
                f" never reached = end of training); wrote {out / 'plasticity.csv'}")
    payload = {"table": table.to_dict(orient="records"), "windows": windows, "baseline_never_completes": never}
    if len(table) and not args.no_figure:
        from critwin.figures import plot_plasticity
        payload["figure"] = str(plot_plasticity(table, args.delay, out / "plasticity.png"))
        text.append(f"figure: {payload['figure']}")
    return payload, "\n".join(text)


def register_plasticity(p):
    from critwin.cli.common import add_executor_args
    p.add_argument("--set", action="append", metavar="KEY=V", help="base config (e.g. task=alchemy_withheld)")
    p.add_argument("--component", "--components", dest="component", default="layer0",
                   help="comma-separated: embedding, layerI, layerI.attn, layerI.mlp, unembed (e.g. embedding,layer0,layer1)")
    p.add_argument("--baseline", default=None, metavar="RUN_ID",
                   help="a stored run to freeze from (instead of --set): its config is the base, the frozen runs"
                        " branch from its checkpoints (the freeze steps, unless --every is given)")
    p.add_argument("--freeze-optimizer", choices=("keep", "rebuild"), default=None,
                   help="--baseline: what the frozen runs do to the optimizer at the freeze (default: the baseline's"
                        " setting; rebuild is the paper's protocol)")
    p.add_argument("--start", type=int, default=None, help="first freeze step (default 0)")
    p.add_argument("--stop", type=int, default=None, help="last freeze step (default 3000; --baseline: its end)")
    p.add_argument("--every", type=int, default=None,
                   help="freeze steps start, start+every, ..., stop (default 500; --baseline: its checkpoints)")
    p.add_argument("--seeds", type=int, default=None,
                   help="seeds per freeze step (default 2; --baseline: 1, the baseline's; more add the next seeds)")
    p.add_argument("--metric", default=None,
                   help="comma-separated stage curves, e.g. event_a,event_b,event_c (default: the task's own: acc on"
                        " ood for anchor, event_c on test for Alchemy, acc on test for modarith, seq_acc for SCAN)")
    p.add_argument("--split", default=None, help="split the curves are read from (default: the task's, see --metric)")
    p.add_argument("--delay", type=float, default=0.0, help="the window: mean delay above this many steps")
    p.add_argument("--n", type=int, default=3)
    p.add_argument("--method", choices=STAGE_METHODS, default="threshold",
                   help="stage time: the threshold rule (tau, n), or where the curve's last change-point rise"
                        " completes (for curves that rise but never reach tau, as at cpu size)")
    p.add_argument("--store", default="runs")
    from critwin.cli.common import add_max_runs
    add_max_runs(p)
    p.add_argument("--no-train", dest="train", action="store_false")
    p.add_argument("--no-branch", dest="branch", action="store_false",
                   help="train every frozen run from step 0 (default: start it from the baseline's checkpoint)")
    add_executor_args(p)
    p.add_argument("--out", default="critwin-out")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-figure", action="store_true", help="do not write plasticity.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_plasticity)
