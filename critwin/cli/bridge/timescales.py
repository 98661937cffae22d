"""`critwin bridge timescales`: observed memorization and reasoning times per gamma and schedule."""
from __future__ import annotations

from critwin.cli.common import add_store_args, on_corrupt, reader
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("timescales", help="observed memorization and reasoning times per gamma and schedule")
    add_store_args(p)
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--ood-level", type=float, default=0.5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_timescales)


def cmd_timescales(args):
    from critwin.bridge.observed import timescales
    from critwin.empirical import load_runs
    runs = load_runs(reader(args), on_corrupt(args))
    if runs.empty:
        return {"rows": []}, f"no runs in {args.store}"
    ts = timescales(runs, args.mem_level, args.ood_level)
    cfg = runs.drop_duplicates("run_id").set_index("run_id")[["gamma", "wd_windows", "seed"]]
    per_run = ts.join(cfg, on="run_id")
    grouped = per_run.groupby(["gamma", "wd_windows"]).agg(
        runs=("run_id", "size"), memorization_step=("memorization_step", "mean"),
        loss_half_step=("loss_half_step", "mean"), reasoning_step=("reasoning_step", "mean"),
        reasoned=("reasoning_step", lambda v: int(v.notna().sum()))).reset_index()
    rows = grouped.to_dict(orient="records")
    text = [format_table(rows), f"memorization: first eval with train acc >= {args.mem_level};"
            f" reasoning: first eval with OOD acc >= {args.ood_level} (mean over the runs that got there)"]
    return {"rows": rows, "per_run": per_run.to_dict(orient="records")}, "\n".join(text)
