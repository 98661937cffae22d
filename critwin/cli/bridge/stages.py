"""`critwin bridge stages`: predicted (linear readout) vs observed Alchemy stage order and times."""
from __future__ import annotations

import numpy as np

from critwin.bridge.predicted_stages import STAGE_METRICS, compare_stages, predict_stages
from critwin.cli.common import add_store_args, attach_figure
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("stages", help="predicted (linear readout) vs observed Alchemy stage order and times",
                       description="For every Alchemy task and hop count with runs in the store: the stage times"
                                   " the runs show (threshold rule, median over seeds) against the linear"
                                   " readout's predicted ones; orders, rank correlation, timescale factor.")
    add_store_args(p)
    p.add_argument("--n", type=int, default=3, help="consecutive evaluations at or above the level")
    from critwin.empirical.metrics.stages import STAGE_METHODS
    p.add_argument("--method", choices=STAGE_METHODS, default="threshold",
                   help="how both sides are timed: the threshold rule, or where a curve's last change-point rise"
                        " completes (for runs whose curves rise but stay below the levels, as at cpu size)")
    p.add_argument("--chemistries", type=int, default=400, help="chemistries per split for the prediction (0 = all)")
    p.add_argument("--out", default="critwin-out", help="folder for the figure")
    p.add_argument("--no-figure", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_bridge_stages)


def cmd_bridge_stages(args):
    from critwin.empirical.metrics.stages import detect_store
    from critwin.empirical import RunStore
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
        from critwin.figures import plot_stage_times
        attach_figure(args, "stage_times.png", lambda path: plot_stage_times(res, path), res, text)
    return res, "\n".join(text)
