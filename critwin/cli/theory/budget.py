"""`critwin theory budget`: one decay budget placed early, in the middle or late, compared per gamma."""
from __future__ import annotations

from critwin import theory as th
from critwin.cli.theory.args import add_setting_args, gammas_from_args, setting_from_args
from critwin.table import format_table
from critwin.theory.reduced import ESCAPE_LAWS


def register(sub):
    p = sub.add_parser("budget", help="budget-matched early / middle / late windows")
    add_setting_args(p)
    p.add_argument("--budget", type=float, default=20.0)
    p.add_argument("--width", type=float, default=5000)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--engine", choices=("reduced", "full"), default="reduced")
    p.add_argument("--law", choices=ESCAPE_LAWS, default="bilinear")
    p.set_defaults(handler=cmd_budget)


def cmd_budget(args):
    s = setting_from_args(args)
    rows = th.budget_comparison(s, args.budget, args.width, args.steps, args.engine, args.law,
                                gammas_from_args(args))
    text = format_table(rows, ["gamma", "placement", "schedule", "budget", "x", "rho", "reasoning_fraction"])
    return {"setting": s.to_dict(), "rows": rows}, text
