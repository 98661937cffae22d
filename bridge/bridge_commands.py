"""Handlers of `critwin bridge ...`: theory against the runs in a store."""
from __future__ import annotations

from pathlib import Path

from . import figures
from .compare import as_frame, compare
from .table import format_table


def cmd_compare(args):
    rows = compare(args.store, args.threshold, args.metric, args.gamma, tuple(args.methods),
                   loss_norm=args.loss_norm, targets=args.targets)
    if not rows:
        return {"rows": []}, f"no onset sweeps (single-window runs) in {args.store}"
    frame = as_frame(rows)
    cols = ["gamma", "width", "wd", "seeds", "onsets", "observed_first", "observed_last"]
    for m in args.methods:
        cols += [f"{m}_t1", f"{m}_t2", f"{m}_first_error"]
    text = [format_table(frame.to_dict(orient="records"), cols),
            f"observed window: onsets whose mean final {args.metric} >= {args.threshold};"
            " errors = observed - predicted, in steps; intervals: 90% seed bootstrap (JSON)."]
    payload = {"rows": frame.to_dict(orient="records"), "curves": [r["curve"] for r in rows]}
    if not args.no_figure:
        path = Path(args.out) / "bridge_compare.png"
        figures.plot_onset_comparison(rows, path, args.metric)
        payload["figure"] = str(path)
        text.append(f"figure: {path}")
    return payload, "\n".join(text)


def register(sub):
    p = sub.add_parser("compare", help="predicted vs observed windows for the onset sweeps in a store")
    p.add_argument("--store", default="runs")
    p.add_argument("--gamma", type=float, nargs="+", default=None, help="only these gammas")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--metric", default="ood_acc")
    p.add_argument("--methods", nargs="+", choices=("recipe", "reduced", "full"), default=["recipe", "reduced"])
    p.add_argument("--loss-norm", choices=("sum", "pair", "mean"), default="sum")
    p.add_argument("--targets", choices=("teacher", "permutation"), default="permutation",
                   help="stylised targets for the theory (the Transformer's task is a permutation task)")
    p.add_argument("--out", default="critwin-out")
    p.add_argument("--no-figure", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_compare)
