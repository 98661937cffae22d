"""`critwin bridge intervene`: stored L2 runs rerun with a matched shrink, AMSGrad or a held second moment."""
from __future__ import annotations

import numpy as np

from critwin.cli.common import add_gamma, add_store_args, on_corrupt, reader
from critwin.errors import ConfigError
from critwin.table import format_table


def register(sub):
    from critwin.bridge.mechanism import INTERVENTIONS
    p = sub.add_parser("intervene", help="test how an L2 penalty acts through Adam: rerun stored l2 runs with"
                                         " a matched decoupled shrink, AMSGrad, or a held second moment")
    add_store_args(p)
    p.add_argument("--kind", choices=INTERVENTIONS, default="matched-shrink",
                   help="matched-shrink: decoupled decay whose shrink per step is the source run's logged effective"
                        " shrink, interval by interval; adam-scaled: the same lambda, its gradient normalised per"
                        " coordinate as in Adam (bounded by lr) but outside Adam's moments; amsgrad: Adam's divisor the running"
                        " max of v; frozen-v: v held from --from-step")
    p.add_argument("--match", nargs="+", required=True,
                   help="source schedules, e.g. '5000:10000@0.004' or 'l2/non_embedding 0:5000@0.004'")
    add_gamma(p, default=None, help="only source runs at this gamma")
    p.add_argument("--task-seeds", type=int, nargs="+", default=None, help="only these task instances")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="only these init seeds")
    p.add_argument("--from-step", type=int, default=None, help="frozen-v: the step v is held from")
    p.add_argument("--no-train", dest="train", action="store_false", help="only read the store")
    from critwin.cli.common import add_executor_args
    add_executor_args(p)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_intervene)


def cmd_intervene(args):
    from critwin.bridge.mechanism import (
        intervention_config,
        intervention_table,
        plain_runs,
        variant_label,
    )
    from critwin.cli.common import executor_from
    from critwin.empirical import RunStore, TrainConfig, load_summaries
    from critwin.empirical.sweep import run_sweep
    summaries = load_summaries(reader(args), on_corrupt(args))
    if summaries.empty:
        return {"rows": []}, f"no runs in {args.store}"
    plain = plain_runs(summaries)
    plain = plain[(plain.status == "complete") & (plain.decay_form == "l2") & (plain.freeze == "none")]
    if args.gamma is not None:
        plain = plain[np.isclose(plain.gamma, args.gamma)]
    if args.task_seeds is not None:
        plain = plain[plain.task_seed.isin(args.task_seeds)]
    if args.seeds is not None:
        plain = plain[plain.seed.isin(args.seeds)]
    keep = [variant_label(row) in args.match or row.wd_windows in args.match for _, row in plain.iterrows()]
    chosen = plain[np.array(keep, bool)] if len(plain) else plain
    if chosen.empty:
        return {"rows": []}, (f"no complete AdamW l2 runs matching {' or '.join(map(repr, args.match))} in {args.store}"
                              " (match a schedule such as 'l2/non_embedding 5000:10000@0.004' or '5000:10000@0.004')")
    store = RunStore(args.store)
    sources, cfgs, unusable = [], [], []
    for rid in sorted(chosen.run_id):
        run = store.load(rid)
        try:
            cfgs.append(intervention_config(TrainConfig.from_dict(run.config), run.metrics, args.kind, args.from_step))
            sources.append(run)
        except ConfigError as e:
            if e.field != "metrics":
                raise
            unusable.append(rid)        # trained before the mechanism was logged: nothing to match
    if not sources:
        return {"rows": [], "unusable": unusable}, (f"none of the {len(unusable)} matching runs logged the effective"
                                                    " shrink (split 'optim'); retrain them to match it")
    if args.train:
        with executor_from(args) as ex:
            run_sweep(cfgs, store, ex, progress=not args.no_progress)
    table = intervention_table([(src, c.run_id(), store.complete(c.run_id())) for src, c in zip(sources, cfgs)])
    table = table.sort_values(["schedule", "task_seed", "seed"]).reset_index(drop=True)
    rows = table.to_dict(orient="records")
    done = table.intervention_ood.notna()
    mean = {k: float(table.loc[done, k].mean()) for k in ("source_ood", "intervention_ood")} if done.any() else {}
    text = [f"intervention {args.kind} on {len(sources)} stored l2 run(s) matching {' or '.join(map(repr, args.match))}",
            format_table(rows),
            "final OOD / train accuracy of the source (l2 through Adam) and of its intervention; min_train_in_window: the"
            " lowest train accuracy while the source's penalty is on (a fit that breaks)"]
    if mean:
        text.append(f"mean final OOD over the {int(done.sum())} pair(s) trained: source {mean['source_ood']:.3f},"
                    f" intervention {mean['intervention_ood']:.3f}")
    if done.sum() < len(table):
        text.append(f"{int((~done).sum())} intervention run(s) not in the store (drop --no-train to train them)")
    if unusable:
        text.append(f"left out: {len(unusable)} matching run(s) that did not log the effective shrink")
    return {"kind": args.kind, "rows": rows, "means": mean, "unusable": unusable}, "\n".join(text)
