"""`critwin theory basin`: the fraction of init seeds that reach reasoning, per gamma, against the paper's bound."""
from __future__ import annotations

from tqdm.auto import tqdm

from critwin import theory as th
from critwin.cli.theory.args import (add_schedule_args, add_setting_args, gammas_from_args, schedule_from_args,
                                     setting_from_args)
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("basin", help="fraction of init seeds reaching reasoning, per gamma")
    add_setting_args(p)
    add_schedule_args(p)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--threshold", type=float, default=0.5)
    p.set_defaults(handler=cmd_basin)


def cmd_basin(args):
    gammas = gammas_from_args(args)
    s = setting_from_args(args)
    sched = schedule_from_args(args) if (args.wd_window or args.wd_const or args.budget_placement) else None
    with tqdm(total=len(gammas), desc=f"basin ({args.seeds} seeds per gamma)", unit="gamma",
              leave=False) as bar:
        rows = th.basin(s, gammas, args.seeds, args.steps, sched, args.threshold, bar.update)
    text = [format_table(rows, ["gamma", "seeds", "reached", "fraction_reached",
                                "mean_reasoning_fraction", "paper_bound"]),
            f"schedule: {rows[0]['schedule']}; reached = final reasoning fraction >= {args.threshold:g};"
            " bound: 1 - exp(-mu_r T) - 1[T < t2] with the recipe's mu_r and t2 (C = 1)."]
    return {"setting": s.to_dict(), "rows": rows}, "\n".join(text)
