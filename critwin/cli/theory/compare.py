"""`critwin theory compare`: the reduced equations against the full gradient flow on one schedule."""
from __future__ import annotations

from critwin import figures
from critwin.cli.common import attach_figure, figure_args
from critwin.cli.theory.args import add_schedule_args, add_setting_args, schedule_from_args, setting_from_args
from critwin.table import format_table
from critwin.theory.reduced import ESCAPE_LAWS


def register(sub):
    p = sub.add_parser("compare", help="reduced equations vs the full flow on one schedule")
    add_setting_args(p, many_gammas=False)
    add_schedule_args(p)
    p.add_argument("--law", choices=ESCAPE_LAWS, default="bilinear")
    figure_args(p, "compare.png")
    p.set_defaults(handler=cmd_compare)


def cmd_compare(args):
    from critwin.theory.agreement import reduced_vs_full
    s = setting_from_args(args)
    sched = schedule_from_args(args)
    out = reduced_vs_full(s, sched, args.law, seed=args.seed)
    keys = [k for k in out if "maxdiff" in k]
    final = {f"final_{k}_{e}": float(out[f"{k}_{e}"][-1]) for k in ("x", "rho", "reasoning_fraction")
             for e in ("reduced", "full")}
    rows = [{"quantity": k, "before_split": out[f"{k}_maxdiff_early"], "after_split": out[f"{k}_maxdiff_late"],
             "final_reduced": final[f"final_{k}_reduced"], "final_full": final[f"final_{k}_full"]}
            for k in ("x", "rho", "reasoning_fraction")]
    text = [f"reduced ({args.law} law) vs full flow, {sched.describe()}, gamma={s.gamma:g};"
            f" max |difference| before / after step {out['split_step']:g}:", format_table(rows)]
    payload = {"setting": s.to_dict(), "schedule": sched.to_dict(), "law": args.law,
               "split_step": out["split_step"], **{k: out[k] for k in keys}, **final}
    attach_figure(args, "compare.png", lambda path: figures.plot_compare(
        out["steps"], out, sched.windows, path,
        f"reduced ({args.law}) dashed vs full flow solid, gamma={s.gamma:g}"), payload, text)
    return payload, "\n".join(text)
