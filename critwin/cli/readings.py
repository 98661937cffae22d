"""Command `critwin readings`: which reading of the paper's decay reproduces its tables."""
from __future__ import annotations

from pathlib import Path

from critwin.errors import ConfigError
from critwin.paper_checks import CHECKS
from critwin.paper_checks.readings import (
    DEFAULT_READINGS,
    RANK_ROWS,
    RANKED_CLAIMS,
    Reading,
    measure,
    plan_size,
    render,
    select_rows,
)


def cmd_readings(args):
    from critwin.figures import plot_readings
    from critwin.cli.common import executor_from
    from critwin.empirical import RunStore
    from critwin.empirical.sweep.spec import check_runs
    readings = [Reading.parse(t) for t in args.reading] if args.reading else list(DEFAULT_READINGS)
    claims = tuple(c.strip().upper() for c in args.claims.split(",")) if args.claims else RANKED_CLAIMS
    rows = select_rows(args.rows, claims)
    for f in ("task_seeds", "seeds"):
        if getattr(args, f) < 1:
            raise ConfigError(f, getattr(args, f), "a count >= 1")
    runs, factors = plan_size(readings, rows, args.task_seeds, args.seeds)
    check_runs(runs, args.max_runs, factors)        # counted before a config is built or anything trains
    if not args.train and not Path(args.store).is_dir():
        raise ConfigError("store", args.store, "an existing run store folder (or --train to create one)")
    store = RunStore(args.store)
    with executor_from(args, args.train) as ex:
        res = measure(readings, rows, store, args.task_seeds, args.seeds, ex, args.train, not args.no_progress)
    missing = int(res.per_run.measured.isna().sum())
    if missing:
        res.notes.append(f"\n{missing} of {len(res.per_run)} planned runs are not (completely) in {args.store}:"
                         " their rows average what is there (see measured_rows); --train runs them.")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("per_run", "rows", "ranking"):
        getattr(res, name).to_csv(out / f"readings_{name}.csv", index=False)
    fig = plot_readings(res, out / "readings.png", {k: CHECKS[k[0]].paper[k[1]] for k in
                                                       dict.fromkeys(zip(res.per_run.claim, res.per_run.variant))})
    res.notes.append(f"\nwrote {out}/readings_{{per_run,rows,ranking}}.csv and {fig}")
    payload = {"ranking": res.ranking.to_dict(orient="records"), "rows": res.rows.to_dict(orient="records"),
               "per_run": res.per_run.to_dict(orient="records"), "figure": str(fig), "missing_runs": missing}
    return payload, render(res)


def register(parser):
    from critwin.cli.common import add_executor_args, add_max_runs
    parser.add_argument("--reading", action="append", default=None, metavar="FORM/SET[ xSCALE][/bias]",
                        help="a reading to score (repeatable); default: " + "; ".join(r.label for r in DEFAULT_READINGS))
    parser.add_argument("--rows", choices=("rank", "all"), default="rank",
                        help="rank: a few discriminating rows (" + ", ".join(f"{c} {v}" for c, v in RANK_ROWS)
                             + "); all: every variant of --claims")
    parser.add_argument("--claims", default=None, help="with --rows all: checks to include (default W1,W2,W3,W4,W5,W10)")
    parser.add_argument("--task-seeds", type=int, default=3, help="task instances (task_seed 0..n-1)")
    parser.add_argument("--seeds", type=int, default=1, help="init seeds per task instance")
    parser.add_argument("--store", default="runs", help="run store")
    parser.add_argument("--train", action="store_true", help="train the missing runs (paper size: long)")
    add_max_runs(parser)
    add_executor_args(parser)
    parser.add_argument("--out", default="critwin-out", help="folder for the CSVs and the figure")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=cmd_readings)
