"""`critwin bridge compare`: predicted vs observed windows for the onset sweeps in a store."""
from __future__ import annotations

from critwin import figures
from critwin.bridge.compare import as_frame, compare
from critwin.cli.common import add_gamma, add_store_args, attach_figure, figure_args, on_corrupt, reader
from critwin.errors import ConfigError
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("compare", help="predicted vs observed windows for the onset sweeps in a store")
    add_store_args(p)
    add_gamma(p, "+", None, "only these gammas")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--metric", default="ood_acc")
    p.add_argument("--methods", nargs="+", choices=("recipe", "recipe_adamw", "recipe_run", "reduced", "full", "adamw",
                                                "memorization", "survival", "plateau"),
                   default=["recipe", "recipe_run", "reduced"],
                   help="recipe_run: the recipe with sigma_e and c_r of the runs' own initial embeddings;"
                        " memorization: left edge at the stored runs' memorization step (no theory);"
                        " survival: the composition model's left edge from no-decay probes (L2 readings);"
                        " plateau: its right edge from one penalised probe per cell (--late-probes)")
    p.add_argument("--survival-curves", default=None,
                   help="held_curves.json of `bridge survival`/register.py (else the survival method probes)")
    p.add_argument("--late-probes", default=None,
                   help="late_probes.json of paper_checks/reports/theory2/register_right.py (the plateau method's probes)")
    p.add_argument("--loss-norm", choices=("sum", "pair", "mean"), default="sum")
    p.add_argument("--targets", choices=("teacher", "permutation"), default="permutation",
                   help="stylised targets for the theory (the Transformer's task is a permutation task)")
    figure_args(p, "bridge_compare.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_compare)


def cmd_compare(args):
    import json
    from pathlib import Path
    curves = json.loads(Path(args.survival_curves).read_text()) if args.survival_curves else None
    if "plateau" in args.methods and not args.late_probes:
        raise ConfigError("late_probes", None, "late_probes.json (register_right.py) with --methods plateau")
    probes = json.loads(Path(args.late_probes).read_text()) if args.late_probes else None
    rows = compare(reader(args), args.threshold, args.metric, args.gamma, tuple(args.methods),
                   on_corrupt=on_corrupt(args), survival_curves=curves, late_probes=probes, loss_norm=args.loss_norm,
                   targets=args.targets)
    if not rows:
        return {"rows": []}, f"no onset sweeps (single-window runs) in {args.store}"
    frame = as_frame(rows)
    cols = ["reading", "optimizer", "gamma", "width", "wd", "seeds", "onsets", "observed_first", "first_bracket", "observed_last",
            "last_bracket"]
    for m in args.methods:
        cols += [f"{m}_t1", f"{m}_t2", f"{m}_first_error"]
    text = [format_table(frame.to_dict(orient="records"), cols),
            f"observed window: onsets whose mean final {args.metric} >= {args.threshold}; brackets: where the"
            " true edge lies between scanned onsets (its resolution);"
            " errors = observed - predicted, in steps; intervals: 90% seed bootstrap (JSON)."]
    payload = {"rows": frame.to_dict(orient="records"), "curves": [r["curve"] for r in rows]}
    attach_figure(args, "bridge_compare.png", lambda path: figures.plot_onset_comparison(rows, path, args.metric),
                  payload, text)
    return payload, "\n".join(text)
