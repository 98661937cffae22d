"""`critwin bridge score`: a registered prediction scored against what was measured since."""
from __future__ import annotations

from critwin.bridge.baselines import BASELINES
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("score", help="score registered predictions against what was measured since, beside trivial "
                                     "baselines: edges (bisected cells) or, for a panel, every run; several at once")
    p.add_argument("paths", nargs="+", metavar="REGISTRATION [MEASURED]",
                   help="registration JSON files (bridge/registration.py, or a panel: bridge/panel.py), each followed "
                        "by its folder of measurements (default: measured/ beside it): `critwin sweep edge --json` "
                        "outputs, one <cell id>.json per cell; for a panel, one <cell id>.csv of finished runs per cell")
    p.add_argument("--build-cells", default=None,
                   help="CSV of measured build edges (optimizer, gamma, lambda, edge; e.g. theory3/build_cells.csv): an "
                        "edge registration's baselines are fitted on its own build cells found there")
    p.add_argument("--out-csv", default=None, help="also write the scored table as CSV (several: the skill table)")
    p.add_argument("--baselines", nargs="+", choices=BASELINES, default=None,
                   help="also score these older methods on the same measured cells (their window at each cell's run"
                        " config, read from the cell's measuring command); adamw takes minutes a cell")
    p.add_argument("--by", choices=("optimizer", "gamma", "lambda"), default=None,
                   help="a panel's per-run score also within each value of this cell setting (a reading chosen after"
                        " the registration, printed apart from its verdict)")
    p.add_argument("--course", action="store_true",
                   help="a panel's registered verdict after each complete cell in measuring order: each method's"
                        " per-run Brier and per-cell skill over each baseline on the cells complete so far")
    p.add_argument("--figure", default=None, metavar="PNG",
                   help="a panel's onset curves, one plot per measured cell: the fraction of runs that compose beside"
                        " each predictor's mean P (several panels: PNG gets each registration's version appended)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_score)


def registrations(paths) -> list[tuple]:
    """(registration, measured folder) pairs from REGISTRATION [MEASURED] ...: a JSON file starts a pair, a folder
    after it is its measurements (default: measured/ beside it)."""
    from pathlib import Path
    from critwin.errors import ConfigError
    pairs = []
    for text in paths:
        path = Path(text)
        if path.suffix == ".json" and path.is_file():
            pairs.append([path, path.parent / "measured"])
        elif path.is_dir() and pairs and pairs[-1][1] == pairs[-1][0].parent / "measured":
            pairs[-1][1] = path
        else:
            raise ConfigError("paths", text, "a registration JSON file, each optionally followed by its measured "
                                             "folder")
    return [tuple(p) for p in pairs]


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


def interval(skill: float, lo: float, hi: float) -> str:
    """A skill and its 90% interval as the panel tables print them: +0.034 [+0.001, +0.067]."""
    return f"{skill:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def cmd_score_panel(args, reg: dict):
    """A panel registration: every method beside every trivial baseline, per cell and per run, with skill."""
    from critwin.bridge.panel import load_panel, score_panel
    from critwin.bridge.provenance import AFTER, BEFORE, UNKNOWN, run_provenance
    _, predicted, measured = load_panel(args.registration, args.measured)
    measured = measured[measured["cell"].isin({c["id"] for c in reg["cells"]})]   # a later version scores fewer cells
    status = run_provenance(args.registration, measured)
    kept = measured[(status != BEFORE).to_numpy()]          # by position: the CSVs' row labels repeat
    out = score_panel(reg, predicted, kept)
    counts = {k: int((status == k).sum()) for k in (AFTER, BEFORE, UNKNOWN)}
    names = [*reg["methods"], *reg["baselines"]]
    text = [f"registration {args.registration} (registered {reg['registered']}, commit {reg['commit'][:7]}): "
            f"{out['measured_cells']} of {out['registered_cells']} cells, {out['measured_runs']} of "
            f"{out['registered_runs']} runs measured",
            f"  provenance: {counts[AFTER]} runs trained by a commit that holds this registration, "
            f"{counts[BEFORE]} by one that does not (left out), {counts[UNKNOWN]} not checkable in this checkout"]
    for n in names:
        text.append(f"  {n}: {reg['method_text'][n]}")
    if reg.get("verdict"):
        text.append(f"  verdict rule: {reg['verdict']}")
    if len(out["cells"]):
        text += ["per cell: predicted left edge (steps) and |log2((p+25)/(m+25))| error",
                 format_table(out["cells"].to_dict(orient="records"),
                              ["cell", "measured", *[c for n in names for c in (n, f"{n}_err")]])]
    if len(out["runs"]):
        text += ["per run: Brier score (lower is better) and AUC of 'composes' (final OOD >= 0.5)",
                 format_table(out["runs"].to_dict(orient="records"), ["name", "brier", "auc"])]
    if len(out["calibration"]):
        cal = out["calibration"]
        wide = [{"name": n, **{r["bin"]: ("-" if r["n"] == 0 else f"{r['predicted']:.2f}/{r['observed']:.2f} ({r['n']})")
                               for r in g.to_dict(orient="records")}} for n, g in cal.groupby("name", sort=False)]
        text += ["per run: calibration, runs binned by predicted P(composes): mean predicted / fraction composing (runs)",
                 format_table(wide)]
    if len(out["skill"]):
        text += ["skill = baseline's error - method's (AUC: method's - baseline's), paired bootstrap 90% interval "
                 "over cells (per cell) or (cell, task instance) clusters (per run)",
                 format_table(out["skill"].to_dict(orient="records"),
                              ["method", "baseline", "score", "skill", "lo", "hi", "clusters", "verdict"])]
    by = None
    if args.by:
        from critwin.bridge.panel import score_by
        by = score_by(reg, predicted, kept, args.by)
        import pandas as pd
        skill = lambda r, b: ("" if pd.isna(r.get(f"{b}_skill")) else          # baselines have no skill of their own
                              f"{interval(r[f'{b}_skill'], r[f'{b}_lo'], r[f'{b}_hi'])} ({int(r[f'{b}_clusters'])})")
        rows = [{**{k: r[k] for k in (args.by, "runs", "name", "brier", "auc")},
                 **{f"over {b}": skill(r, b) for b in reg["baselines"]}} for r in by.to_dict(orient="records")]
        text += [f"per run within each {args.by} (a reading, not the registered verdict): Brier, AUC, and Brier skill"
                 " over each baseline [90% interval] (clusters)", format_table(rows)]
    course = None
    if args.course:
        from critwin.bridge.panel import score_course
        course = score_course(reg, predicted, kept)
        wide = {}
        for r in course.to_dict(orient="records"):
            row = wide.setdefault((r["cells"], r["method"], r["baseline"]), {
                "cells": r["cells"], "runs": r["runs"], "method": r["method"], "over": r["baseline"]})
            row["run Brier skill" if r["score"] == "run Brier" else "cell edge skill"] = f"{interval(r['skill'], r['lo'], r['hi'])} {r['verdict']}"
        text += ["the registered verdict as the cells came in (complete cells in measuring order; skill [90% interval]"
                 " verdict)", format_table(list(wide.values()))]
    if args.out_csv:
        out["cells"].to_csv(args.out_csv, index=False)
        text.append(f"wrote {args.out_csv}")
    figure = panel_figure(args.figure, reg, predicted, kept) if args.figure else None
    if figure:
        text.append(f"figure: {figure}")
    payload = {"registration": str(args.registration), "provenance": counts, **({"figure": figure} if figure else {}),
               **({"by": by.to_dict(orient="records")} if by is not None else {}),
               **({"course": course.to_dict(orient="records")} if course is not None else {}),
               **{k: v for k, v in out.items() if not hasattr(v, "to_dict")},
               **{k: v.to_dict(orient="records") for k, v in out.items() if hasattr(v, "to_dict")}}
    return payload, "\n".join(text)


def panel_figure(path, reg: dict, predicted, measured) -> str:
    """The onset curves of a panel's measured cells (bridge.panel.onset_curves) drawn to `path`."""
    from critwin import figures
    from critwin.bridge.panel import curve_cells, onset_curves
    curves = onset_curves(reg, predicted, measured)
    version = f"version {reg['version']}" if "version" in reg else "registration"
    title = (f"{version} (registered {reg['registered']}, commit {reg['commit'][:7]}): a run composes when its final "
             "OOD accuracy is >= 0.5")
    return str(figures.plot_panel_curves(curves, curve_cells(reg, predicted, measured), reg["methods"],
                                         reg["baselines"], path, title))


def cmd_score_edges(args, reg: dict):
    """An edge registration: hits per cell, and with --build-cells the edge errors beside trivial baselines."""
    import pandas as pd
    from critwin.bridge.baselines import score_baselines
    from critwin.bridge.edge_skill import TEXT, build_edges, score_edges
    from critwin.bridge.registration import score, summary
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
    payload = {"registration": str(args.registration), **tally, "rows": frame.to_dict(orient="records")}
    build = build_edges(reg, pd.read_csv(args.build_cells)) if args.build_cells else []
    if build and (frame["kind"] == "left").any() and frame.loc[frame["kind"] == "left", "hit"].notna().any():
        out = score_edges(frame, build, "registered")
        text += [f"left edges beside trivial baselines fitted on this registration's {out['build_cells']} build "
                 "cells: " + "; ".join(f"{b}: {t}" for b, t in TEXT.items()),
                 format_table(out["cells"].to_dict(orient="records"),
                              ["cell", "measured", "registered", "registered_err", "constant", "constant_err",
                               "nearest", "nearest_err", "hit"]),
                 format_table(out["skill"].to_dict(orient="records"),
                              ["method", "baseline", "score", "skill", "lo", "hi", "clusters", "verdict"])]
        payload["skill"] = out["skill"].to_dict(orient="records")
        payload["edge_cells"] = out["cells"].to_dict(orient="records")
    if args.out_csv:
        frame.to_csv(args.out_csv, index=False)
        text.append(f"wrote {args.out_csv}")
    return payload, "\n".join(text)


def _versioned(path: str, registration) -> str:
    """PNG with the registration's folder name appended (score_v5.png), for several panels scored at once."""
    from pathlib import Path
    path = Path(path)
    return str(path.with_name(f"{path.stem}_{Path(registration).resolve().parent.name}{path.suffix or '.png'}"))


def cmd_score(args):
    """Each registration scored on its own, then (several) one skill table across them all."""
    import json
    from argparse import Namespace
    import pandas as pd
    pairs = registrations(args.paths)
    payloads, texts = [], []
    for path, measured in pairs:
        reg = json.loads(path.read_text())
        one = Namespace(**{**vars(args), "registration": path, "measured": measured,
                           "out_csv": args.out_csv if len(pairs) == 1 else None,
                           "figure": args.figure if len(pairs) == 1 or not args.figure else
                           _versioned(args.figure, path)})
        if reg.get("design") == "panel":
            payload, text = cmd_score_panel(one, reg)
        else:
            from critwin.bridge.registration import validate
            payload, text = cmd_score_edges(one, validate(reg))
        payloads.append(payload)
        texts.append(text)
    if len(pairs) == 1:
        return payloads[0], texts[0]
    rows = [{"registration": str(p["registration"]), **r} for p in payloads for r in p.get("skill", [])]
    cols = ["registration", "method", "baseline", "score", "skill", "lo", "hi", "clusters", "verdict"]
    texts.append("skill across all registrations (baseline's error - method's; paired bootstrap 90% interval; a "
                 "verdict needs at least 8 clusters)\n" + (format_table(rows, cols) if rows else "(none scored)"))
    if args.out_csv:
        pd.DataFrame(rows, columns=cols).to_csv(args.out_csv, index=False)
        texts.append(f"wrote {args.out_csv}")
    return {"registrations": payloads, "skill": rows}, "\n\n".join(texts)
