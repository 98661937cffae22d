"""Handlers of `critwin sweep ...` and `critwin runs ...`."""
from __future__ import annotations

import time
from pathlib import Path

from critwin.table import format_table
from critwin.cli.common import add_executor_args, add_max_runs, executor_from
from critwin.empirical import RunStore
from critwin.empirical.sweep import (
    SweepSpec,
    find_edge,
    run_sweep,
    summarize,
)
from critwin.errors import ConfigError

LOST_RUNS = 3       # exit code of a sweep that trained runs it could not store (a dead worker, a full disk)


def _executor_args(p):
    add_executor_args(p)
    p.add_argument("--store", default="runs", help="run store folder")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _spec(args) -> SweepSpec:
    if args.spec is None and not args.set:
        raise ConfigError("spec", None, "a TOML spec file and/or --set KEY=V1,V2,...")
    spec = SweepSpec.from_toml(args.spec) if args.spec else SweepSpec()
    return spec.with_sets(args.set)


def cmd_run(args):
    configs = _spec(args).expand(args.max_runs)    # counted, then every point validated, before anything runs
    t0 = time.perf_counter()
    with executor_from(args) as ex:
        res = run_sweep(configs, RunStore(args.store), ex, args.retry_failed, not args.no_progress)
    payload = {**res.to_dict(), "store": str(Path(args.store)), "executor": args.executor,
               "wall_seconds": time.perf_counter() - t0, "run_ids": [c.run_id() for c in configs]}
    text = [f"{res.describe()} ({payload['wall_seconds']:.1f} s, executor {args.executor})"]
    text += [f"  failed {r}: {e}" for r, e in res.failed]
    text += [f"  not stored {r}: {e}" for r, e in res.unstored]
    return payload, "\n".join(text), (LOST_RUNS if res.lost_any else 0)


def edge_base(args) -> dict:
    """The base config (flat keys) of a `sweep edge` command line's parsed args."""
    base = SweepSpec.from_toml(args.spec).base if args.spec else {}
    base = {**base, **SweepSpec().with_sets(args.set).base}
    if args.param == "wd_window_start":       # an onset search: one window of --width at --wd
        base.update(wd=args.wd, wd_width=args.width)
    return base


def cmd_edge(args):
    base = edge_base(args)
    with executor_from(args) as ex:
        out = find_edge(base, args.param, args.lo, args.hi, args.resolution, args.threshold,
                        range(args.seeds), args.metric, RunStore(args.store), ex, not args.no_progress,
                        None if args.task_seeds is None else range(args.task_seeds), args.max_runs)
    text = [format_table(out["evaluations"]),
            f"edge of mean {out['metric']} >= {out['threshold']}: {out['edge'] or out.get('message')}"
            + (f" (90% seed-bootstrap interval {out['edge_ci']})" if out.get("edge_ci") else ""),
            f"runs: {out['runs']} (a grid at this resolution: {out['grid_runs']})"]
    return out, "\n".join(text)


def cmd_summary(args):
    RunStore(args.store).require()
    df = summarize(args.store, [g.strip() for g in args.group_by.split(",")],
                   None if args.metric is None else [m.strip() for m in args.metric.split(",")],
                   "skip" if args.skip_corrupt else "raise")
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(args.csv, index=False)
    rows = df.to_dict(orient="records")
    return {"rows": rows, "csv": args.csv}, format_table(rows)


def cmd_progress(args):
    store = RunStore(args.store).require()
    removed = [str(p) for p in store.remove_litter()] if args.clean else []
    rows = store.in_progress()
    table = []
    for r in rows:
        keys = [k for k in r["last"] if k.endswith(("_acc", "test_event_a")) and not k.startswith("test_ablate")][:4]
        idle = (f"no: {r['claim']}" if "claim" in r else
                "no: unreadable litter (--clean removes it)" if "error" in r else
                "no (paused: stored where its stop rule held)" if r.get("paused") else
                "no (killed: the next sweep resumes it)")
        table.append({"run_id": r["run_id"], "training": r["training"] or idle,
                      "step": r["step"], "of": r["steps"],
                      "saved_min_ago": None if r["saved_seconds_ago"] is None else round(r["saved_seconds_ago"] / 60, 1),
                      **{k: round(r["last"][k], 3) for k in keys},
                      **{k: r[k] for k in ("pack", "error") if k in r}})
    text = format_table(table) if table else f"no run in progress in {args.store}"
    if args.clean:
        text += f"\nremoved {len(removed)} unusable files (unreadable resume states, empty claim files, half-written" \
                " files)"
    return {"rows": rows, "removed": removed}, text


def register_sweep(sub):
    p = sub.add_parser("run", help="run a grid of configs (resumes: stored runs are skipped)")
    p.add_argument("spec", nargs="?", default=None, help="TOML file with [base] and [grid]")
    p.add_argument("--set", action="append", metavar="KEY=V1,V2,...", help="grid (or base) values")
    p.add_argument("--retry-failed", action="store_true", help="re-run failed runs (only those)")
    add_max_runs(p)
    _executor_args(p)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("edge", help="find a window edge by bisection on a numeric key")
    p.add_argument("spec", nargs="?", default=None, help="TOML file whose [base] is used")
    p.add_argument("--set", action="append", metavar="KEY=V", help="base values")
    p.add_argument("--param", default="wd_window_start", help="key to bisect (default: window onset)")
    p.add_argument("--lo", type=float, default=0.0)
    p.add_argument("--hi", type=float, default=5000.0)
    p.add_argument("--resolution", type=float, default=100.0)
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--metric", default="ood_acc")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--task-seeds", type=int, default=None,
                   help="also over task instances 0..N-1 (every instance x seed pair); default: the base's instance")
    p.add_argument("--wd", type=float, default=4e-3, help="decay inside the window (onset searches)")
    p.add_argument("--width", type=float, default=5000.0, help="window width in steps (onset searches)")
    add_max_runs(p)
    _executor_args(p)
    p.set_defaults(handler=cmd_edge)


def register_runs(sub):
    p = sub.add_parser("progress", help="runs in progress: who trains them and how far their last saved state got")
    p.add_argument("--store", default="runs")
    p.add_argument("--clean", action="store_true",
                   help="first remove what no run can use: unreadable resume states, claim files left empty,"
                        " half-written files")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_progress)

    p = sub.add_parser("summary", help="mean, sd and count of final metrics (and reach steps) per group")
    p.add_argument("--store", default="runs")
    p.add_argument("--group-by", default="wd_windows", help="comma-separated config columns")
    p.add_argument("--metric", default=None,
                   help="comma-separated final metrics or reach steps (test_reach_step: the grokking step; a run "
                        "that never reached 0.95 counts as its last step). Default: the held-out accuracy "
                        "(ood_acc or test_acc), train_acc and the held-out reach step where the store has them")
    p.add_argument("--csv", default=None, help="also write the table as CSV")
    p.add_argument("--skip-corrupt", action="store_true", help="warn about and skip damaged run folders")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_summary)
