"""`critwin bridge survival`: predicted L2 left edges from no-decay probes (the composition model)."""
from __future__ import annotations

from critwin import figures
from critwin.cli.common import add_gamma, add_max_runs, add_optimizer, attach_figure, figure_args
from critwin.table import format_table
from critwin.vocabulary import PAPER_GAMMAS, RUN_OPTIMIZERS


def register(sub):
    p = sub.add_parser("survival", help="predicted L2 left edges from no-decay probes: the composition model"
                                        " read coordinate by coordinate (nothing fitted)")
    add_optimizer(p, "+", list(RUN_OPTIMIZERS))
    add_gamma(p, "+", PAPER_GAMMAS)
    p.add_argument("--wd", type=float, nargs="+", default=[4e-3, 1.6e-2], help="penalty strengths lambda")
    p.add_argument("--task-seeds", type=int, default=3, help="task instances 0..N-1 per gamma")
    p.add_argument("--seeds", type=int, default=2, help="init seeds 0..N-1 per task instance")
    add_max_runs(p)
    p.add_argument("--no-progress", action="store_true")
    figure_args(p, "bridge_survival.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_survival)


def cmd_survival(args):
    import sys
    from critwin.bridge.survival import predict
    from critwin.empirical.sweep.spec import check_runs
    check_runs(len(args.optimizer) * len(args.gamma) * args.task_seeds * args.seeds, args.max_runs,   # the probes
               f"{len(args.optimizer)} optimizers x {len(args.gamma)} gammas x {args.task_seeds:,} task instances"
               f" x {args.seeds:,} seeds")
    rows, curves = predict(args.optimizer, args.gamma, args.wd, range(args.task_seeds), range(args.seeds),
                           progress=None if args.no_progress else lambda m: print(m, file=sys.stderr, flush=True))
    text = [format_table(rows, ["optimizer", "gamma", "lambda", "predicted_left_edge", "probes", "probe_steps"]),
            "left edge: first onset at which an L2 penalty holds back less than half of the attention weights the"
            " loss grows (no-decay probes, full training set's gradient); None: never within the probe"]
    payload = {"rows": rows, "curves": curves}
    attach_figure(args, "bridge_survival.png", lambda path: figures.plot_held_share(curves, rows, path), payload, text)
    return payload, "\n".join(text)
