"""`critwin theory stages`: the Alchemy stage order and times a linear readout's exact flow predicts (no training)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from critwin.bridge.predicted_stages import BLOCKS, predict_stages
from critwin.cli.common import attach_figure
from critwin.errors import ConfigError
from critwin.figures import plot_predicted_stages
from critwin.table import format_table


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


def cmd_theory_stages(args):
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
            "t_X: flow time from which event X's held-out curve stays at the stage level (0.95 for A, 0.90"
            " otherwise) for 3 grid points in a row, the rule observed runs are timed by (nan: never); order:"
            " the stages by t_X (levels differ, so t_X can invert nested events); rise_X: when it has risen"
            " half-way (nan: no rise), a separate reading that the order does not use. Only orders and"
            " ratios are predictions. final_X below the level: the stage needs more than a linear readout of the"
            f" features {','.join(blocks)}."]
    payload = {"rows": rows, "features": list(blocks)}
    if args.out_csv:
        out = Path(args.out_csv)
        out.parent.mkdir(parents=True, exist_ok=True)
        pd.concat([r["curves"].assign(task=r["task"]) for r in results]).to_csv(out, index=False)
        payload["curves_csv"] = str(out)
        text.append(f"wrote the predicted curves to {out}")
    attach_figure(args, f"predicted_stages_{args.task}.png", lambda path: plot_predicted_stages(results, path),
                  payload, text)
    return payload, "\n".join(text)
