"""Command `critwin report`: a Markdown report of the checks present in a store."""
from __future__ import annotations

from critwin.paper_checks.report import build_report


def cmd_report(args):
    path = build_report(args.store, args.out, args.threshold, tuple(args.wd_scale), args.fit_gamma,
                        "skip" if args.skip_corrupt else "raise")
    return {"report": str(path)}, f"report: {path}"


def register(p):
    from critwin.cli.common import add_store_args
    add_store_args(p)
    p.add_argument("--out", default="report")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--wd-scale", type=float, nargs="+", default=[1.0],
                   help="decay scales whose check runs to report (as given to critwin check --wd-scale)")
    p.add_argument("--fit-gamma", type=float, default=0.8)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_report)
