"""`critwin bridge mechanism`: the state each decay schedule and optimizer variant leaves over training."""
from __future__ import annotations

from critwin.cli.common import add_gamma, add_store_args, on_corrupt, reader
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("mechanism", help="the state each decay schedule and optimizer variant leaves, over"
                                         " training (norm, condensation, alignment, Adam's effective shrink)")
    add_store_args(p)
    p.add_argument("--steps", type=int, nargs="+", default=[400, 5000, 10000, 20000])
    add_gamma(p, default=None, help="only runs at this gamma")
    p.add_argument("--match", nargs="+", default=None,
                   help="only variants whose label contains one of these texts, e.g. 5000:10000 'no decay'")
    p.add_argument("--out-csv", default=None, help="also write the table as CSV")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_mechanism)


def cmd_mechanism(args):
    from critwin.bridge.mechanism import state_table
    from critwin.empirical import load_runs
    runs = load_runs(reader(args), on_corrupt(args))
    if args.gamma is not None and not runs.empty:
        runs = runs[runs.gamma == args.gamma]
    table = state_table(runs, args.steps, args.match)
    if table.empty:
        return {"rows": []}, f"no runs{' matching ' + ' or '.join(map(repr, args.match)) if args.match else ''} in {args.store}"
    rows = table.to_dict(orient="records")
    text = [format_table(rows),
            "mean over runs at the evaluation nearest each step; effective_shrink: the decay's shrink per step"
            " through the optimizer (lr lambda / (sqrt(v_hat) + eps) for l2 under Adam); nan: not logged by"
            " that run"]
    if args.out_csv:
        table.to_csv(args.out_csv, index=False)
        text.append(f"table: {args.out_csv}")
    return {"rows": rows}, "\n".join(text)
