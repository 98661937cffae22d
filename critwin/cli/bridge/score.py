"""`critwin bridge score`: a registered prediction scored against what was measured since."""
from __future__ import annotations

from critwin.bridge.baselines import BASELINES
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("score", help="score a registered prediction file against what was measured since: edges "
                                     "(bisected cells) or, for a panel, every run beside trivial baselines")
    p.add_argument("registration", help="registration JSON (bridge/registration.py, or a panel: bridge/panel.py)")
    p.add_argument("measured", help="folder of `critwin sweep edge --json` outputs, one <cell id>.json per cell; "
                                    "for a panel, one <cell id>.csv of finished runs per cell")
    p.add_argument("--out-csv", default=None, help="also write the scored table as CSV")
    p.add_argument("--baselines", nargs="+", choices=BASELINES, default=None,
                   help="also score these older methods on the same measured cells (their window at each cell's run"
                        " config, read from the cell's measuring command); adamw takes minutes a cell")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_score)


def measure_configs(reg: dict, measured) -> dict:
    """cell id -> the run config, window and threshold of each measured cell's own `critwin sweep edge` command
    (parsed by this CLI's parser), for scoring older methods on it."""
    import shlex
    from pathlib import Path
    from critwin.bridge.registration import cell_id
    from critwin.cli.main import build_parser
    from critwin.cli.sweep import edge_base
    from critwin.empirical import TrainConfig
    out = {}
    for cell in reg["cells"]:
        cid = cell_id(cell)
        if cell.get("build") or "measure" not in cell or not (Path(measured) / f"{cid}.json").is_file():
            continue
        argv = shlex.split(cell["measure"])[1:]
        args = build_parser(argv).parse_args(argv)
        base = {**edge_base(args), "wd_window_start": 0.0}
        out[cid] = {"cfg": TrainConfig.from_flat(base), "width": float(args.width), "wd": float(args.wd),
                    "threshold": float(args.threshold)}
    return out


def cmd_score_panel(args, reg: dict):
    """A panel registration: every method beside every trivial baseline, per cell and per run, with skill."""
    from critwin.bridge.panel import load_panel, score_panel
    _, predicted, measured = load_panel(args.registration, args.measured)
    out = score_panel(reg, predicted, measured)
    names = [*reg["methods"], *reg["baselines"]]
    text = [f"registration {args.registration} (registered {reg['registered']}, commit {reg['commit'][:7]}): "
            f"{out['measured_cells']} of {out['registered_cells']} cells, {out['measured_runs']} of "
            f"{out['registered_runs']} runs measured"]
    for n in names:
        text.append(f"  {n}: {reg['method_text'][n]}")
    if len(out["cells"]):
        text += ["per cell: predicted left edge (steps) and |log2((p+25)/(m+25))| error",
                 format_table(out["cells"].to_dict(orient="records"),
                              ["cell", "measured", *[c for n in names for c in (n, f"{n}_err")]])]
    if len(out["runs"]):
        text += ["per run: Brier score (lower is better) and AUC of 'composes' (final OOD >= 0.5)",
                 format_table(out["runs"].to_dict(orient="records"), ["name", "brier", "auc"])]
    if len(out["skill"]):
        text += ["skill = baseline's error - method's (AUC: method's - baseline's), paired bootstrap 90% interval "
                 "over cells (per cell) or (cell, task instance) clusters (per run)",
                 format_table(out["skill"].to_dict(orient="records"),
                              ["method", "baseline", "score", "skill", "lo", "hi", "clusters", "verdict"])]
    if args.out_csv:
        out["cells"].to_csv(args.out_csv, index=False)
        text.append(f"wrote {args.out_csv}")
    payload = {"registration": str(args.registration), **{k: v for k, v in out.items() if not hasattr(v, "to_dict")},
               **{k: v.to_dict(orient="records") for k, v in out.items() if hasattr(v, "to_dict")}}
    return payload, "\n".join(text)


def cmd_score(args):
    import json
    from pathlib import Path
    from critwin.bridge.baselines import score_baselines
    from critwin.bridge.registration import load_registration, score, summary
    path = Path(args.registration)
    if path.is_file() and json.loads(path.read_text()).get("design") == "panel":
        return cmd_score_panel(args, json.loads(path.read_text()))
    reg = load_registration(args.registration)
    frame = score(reg, args.measured)
    cols = ["cell", "predicted", "measured", "interval", "runs", "verdict"]
    if args.baselines:
        frame = score_baselines(frame, reg, args.measured, measure_configs(reg, args.measured), args.baselines)
        cols += [c for m in args.baselines for c in (m, f"{m}_verdict")]
    tally = summary(frame)
    text = [f"registration {args.registration} (registered {reg['registered']}; model: {reg['model']})",
            format_table(frame.to_dict(orient="records"), cols),
            f"score: {tally['hits']} / {tally['scored']} measured cells hit ({tally['not_measured']} of "
            f"{tally['cells']} not measured yet); a hit is a prediction inside the edge's 90% bootstrap interval,"
            " or 'no window' where no onset crossed"]
    for m in args.baselines or ():
        text.append(f"  {m} (the stylised model, at each cell's run config): {tally[m + '_hits']} / {tally['scored']}")
    if args.out_csv:
        frame.to_csv(args.out_csv, index=False)
        text.append(f"wrote {args.out_csv}")
    return {"registration": str(args.registration), **tally, "rows": frame.to_dict(orient="records")}, "\n".join(text)
