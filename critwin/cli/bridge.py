"""Handlers of `critwin bridge ...`: theory against the runs in a store."""
from __future__ import annotations

import numpy as np

from critwin import figures
from critwin.bridge.baselines import BASELINES
from critwin.bridge.compare import as_frame, compare
from critwin.bridge.observed import QUANTITIES
from critwin.bridge.predicted_stages import (
    STAGE_METRICS,
    compare_stages,
    predict_stages,
)
from critwin.table import format_table
from critwin.cli.common import (
    add_store_args,
    attach_figure,
    figure_args,
    on_corrupt,
    reader,
)
from critwin.errors import ConfigError


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


def cmd_arrival(args):
    from critwin.bridge.mechanism import arrival_table, plain_runs, threshold_holdout
    from critwin.empirical import load_runs
    runs = load_runs(reader(args), on_corrupt(args))
    if not runs.empty:
        runs = plain_runs(runs, args.optimizer)
        if args.reading:
            runs = runs[runs.reading == args.reading]
    table = arrival_table(runs, args.mem_level)
    if args.wd is not None and not table.empty:
        table = table[np.isclose(table.wd_value, args.wd)]
    if table.empty:
        return {"rows": [], "holdout": []}, f"no runs with one decay window in {args.store}"
    cells = (table.groupby(["reading", "gamma", "wd_value", "width", "onset"])
             .agg(runs=("run_id", "size"), memorization_step=("memorization_step", "median"),
                  arrival_norm=("arrival_norm", "mean"), end_norm=("end_norm", "mean"),
                  norm_ratio=("norm_ratio", "mean"), final_ood=("final_ood", "mean")).reset_index())
    hold = threshold_holdout(table, args.fit_gamma, args.level)
    hold_cells = threshold_holdout(cells, args.fit_gamma, args.level)
    payload = {"rows": cells.to_dict(orient="records"), "holdout": hold.to_dict(orient="records"),
               "holdout_cells": hold_cells.to_dict(orient="records"), "per_run": table.to_dict(orient="records")}
    text = [format_table(payload["rows"]),
            f"arrival: the decayed weight norm at the first evaluation >= max(onset, memorization: train acc >="
            f" {args.mem_level}); end_norm: at the window's end; norm_ratio = arrival / end (means over runs)", "",
            f"'feature >= threshold' <=> final OOD >= {args.level}, threshold fitted on the runs at gamma"
            f" {args.fit_gamma:g}, accuracy per gamma (held_out: not used in the fit):",
            format_table(payload["holdout"]), "", "the same on the cell means (one point per gamma x onset):",
            format_table(payload["holdout_cells"])]
    if args.out_csv:
        table.to_csv(args.out_csv, index=False)
        text.append(f"per-run table: {args.out_csv}")
    attach_figure(args, "bridge_arrival.png", lambda path: figures.plot_arrival(table, hold, args.level, path),
                  payload, text)
    return payload, "\n".join(text)


def cmd_left_edge(args):
    from critwin.bridge.compare import recipe_t1
    from critwin.bridge.left_edge import (
        gain_curves,
        left_edge_table,
        observed_edges,
        probe_configs,
    )
    from critwin.cli.common import executor_from
    from critwin.empirical import RunStore, load_summaries
    from critwin.empirical.store import config_columns
    from critwin.empirical.sweep import run_sweep
    if args.task_seeds < 1 or args.seeds < 1:
        raise ConfigError("task_seeds" if args.task_seeds < 1 else "seeds", min(args.task_seeds, args.seeds),
                          "a positive number of probe runs per gamma")
    cfgs = probe_configs(args.gamma, args.task_seeds, args.seeds, args.probe_steps, args.probe_every)
    store = RunStore(args.store)
    if args.train:
        with executor_from(args) as ex:
            run_sweep(cfgs, store, ex, progress=not args.no_progress)
    else:
        reader(args)
    runs = [r for r in (store.complete(c.run_id()) for c in cfgs) if r is not None]
    if not runs:
        return {"rows": []}, f"no probe runs in {args.store} (drop --no-train to train them)"
    curves = gain_curves(runs)
    base = config_columns(cfgs[0].resolved())
    summaries = load_summaries(args.store, on_corrupt(args))
    observed = observed_edges(summaries, args.reading, args.width, args.threshold, base)
    s_star, table = left_edge_table(curves, observed, args.wd, args.fit_gamma, args.fit_wd, args.fit_edge)
    table["recipe_t1"] = [recipe_t1(cfgs[0], g) for g in table.gamma]
    held = table[~table.fitted & table.in_bracket.notna()]
    payload = {"s_star": s_star, "probe_runs": len(runs), "rows": table.to_dict(orient="records"),
               "held_out_in_bracket": int(held.in_bracket.sum()), "held_out_cells": int(len(held))}
    text = [f"penalty shrink lambda * adam_gain(t) of {len(runs)} no-decay probe runs ({args.probe_steps} steps,"
            f" logged every {args.probe_every}); s* = {s_star:.4g} per step, fitted at gamma {args.fit_gamma:g},"
            f" wd {args.fit_wd:g}",
            "predicted edge: first logged step after the early peak with lambda * gain <= s* (0: the peak stays below s*;"
            " recipe_t1: the paper's recipe, which does not depend on gamma or lambda);"
            f" observed: first onset with mean final OOD >= {args.threshold} ({args.reading}, width {args.width:g}),"
            " the true edge in (bracket_lo, bracket_hi]",
            format_table(payload["rows"]),
            f"held out: {payload['held_out_in_bracket']} of {payload['held_out_cells']} predicted edges inside the"
            " observed bracket"]
    attach_figure(args, "bridge_left_edge.png",
                  lambda path: figures.plot_left_edge(curves, table, s_star, path), payload, text)
    return payload, "\n".join(text)


def cmd_intervene(args):
    from critwin.bridge.mechanism import (
        intervention_config,
        intervention_table,
        plain_runs,
        variant_label,
    )
    from critwin.cli.common import executor_from
    from critwin.empirical import RunStore, TrainConfig, load_summaries
    from critwin.empirical.sweep import run_sweep
    summaries = load_summaries(reader(args), on_corrupt(args))
    if summaries.empty:
        return {"rows": []}, f"no runs in {args.store}"
    plain = plain_runs(summaries)
    plain = plain[(plain.status == "complete") & (plain.decay_form == "l2") & (plain.freeze == "none")]
    if args.gamma is not None:
        plain = plain[np.isclose(plain.gamma, args.gamma)]
    if args.task_seeds is not None:
        plain = plain[plain.task_seed.isin(args.task_seeds)]
    if args.seeds is not None:
        plain = plain[plain.seed.isin(args.seeds)]
    keep = [variant_label(row) in args.match or row.wd_windows in args.match for _, row in plain.iterrows()]
    chosen = plain[np.array(keep, bool)] if len(plain) else plain
    if chosen.empty:
        return {"rows": []}, (f"no complete AdamW l2 runs matching {' or '.join(map(repr, args.match))} in {args.store}"
                              " (match a schedule such as 'l2/non_embedding 5000:10000@0.004' or '5000:10000@0.004')")
    store = RunStore(args.store)
    sources, cfgs, unusable = [], [], []
    for rid in sorted(chosen.run_id):
        run = store.load(rid)
        try:
            cfgs.append(intervention_config(TrainConfig.from_dict(run.config), run.metrics, args.kind, args.from_step))
            sources.append(run)
        except ConfigError as e:
            if e.field != "metrics":
                raise
            unusable.append(rid)        # trained before the mechanism was logged: nothing to match
    if not sources:
        return {"rows": [], "unusable": unusable}, (f"none of the {len(unusable)} matching runs logged the effective"
                                                    " shrink (split 'optim'); retrain them to match it")
    if args.train:
        with executor_from(args) as ex:
            run_sweep(cfgs, store, ex, progress=not args.no_progress)
    table = intervention_table([(src, c.run_id(), store.complete(c.run_id())) for src, c in zip(sources, cfgs)])
    table = table.sort_values(["schedule", "task_seed", "seed"]).reset_index(drop=True)
    rows = table.to_dict(orient="records")
    done = table.intervention_ood.notna()
    mean = {k: float(table.loc[done, k].mean()) for k in ("source_ood", "intervention_ood")} if done.any() else {}
    text = [f"intervention {args.kind} on {len(sources)} stored l2 run(s) matching {' or '.join(map(repr, args.match))}",
            format_table(rows),
            "final OOD / train accuracy of the source (l2 through Adam) and of its intervention; min_train_in_window: the"
            " lowest train accuracy while the source's penalty is on (a fit that breaks)"]
    if mean:
        text.append(f"mean final OOD over the {int(done.sum())} pair(s) trained: source {mean['source_ood']:.3f},"
                    f" intervention {mean['intervention_ood']:.3f}")
    if done.sum() < len(table):
        text.append(f"{int((~done).sum())} intervention run(s) not in the store (drop --no-train to train them)")
    if unusable:
        text.append(f"left out: {len(unusable)} matching run(s) that did not log the effective shrink")
    return {"kind": args.kind, "rows": rows, "means": mean, "unusable": unusable}, "\n".join(text)


def cmd_fit(args):
    from critwin.bridge.fit import fit_columns, fit_store, fit_summary
    results, skipped = fit_store(reader(args), args.quantity, args.fit_gamma, mem_level=args.mem_level,
                                 ood_level=args.ood_level, threshold=args.threshold, on_corrupt=on_corrupt(args))
    text = list(skipped)
    for res in results:
        text += [" / ".join(res["group"]), format_table(res["rows"], fit_columns(res)), fit_summary(res), ""]
    if not results:
        text.append(f"no group of {args.quantity} times with the fit gamma and another gamma in {args.store}")
    payload = {"quantity": args.quantity, "fit_gamma": args.fit_gamma, "results": results}
    if args.quantity == "reasoning":
        from critwin.bridge.observed import decay_budget_at_rise
        budget = decay_budget_at_rise(args.store, args.ood_level, on_corrupt(args)).to_dict(orient="records")
        payload["decay_budget"] = budget
        text += ["cumulative decay at the OOD rise (budget = lr * lambda * rise steps, mean over runs that rose):",
                 format_table(budget), ""]
    if results:
        attach_figure(args, f"bridge_fit_{args.quantity}.png",
                      lambda path: figures.plot_law_fits(results, path, args.quantity), payload, text)
    return payload, "\n".join(text)


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
    import pandas as pd
    from pathlib import Path
    from critwin.bridge.panel import score_panel
    here = Path(args.registration).parent
    predicted = pd.read_csv(here / "registration_runs.csv")
    files = sorted(Path(args.measured).glob("*.csv")) if Path(args.measured).is_dir() else []
    measured = (pd.concat([pd.read_csv(f) for f in files]) if files
                else pd.DataFrame(columns=["cell", "onset", "task_seed", "seed", "ood_acc"]))
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


def cmd_survival(args):
    import sys
    from critwin.bridge.survival import predict
    rows, curves = predict(args.optimizer, args.gamma, args.wd, range(args.task_seeds), range(args.seeds),
                           progress=None if args.no_progress else lambda m: print(m, file=sys.stderr, flush=True))
    text = [format_table(rows, ["optimizer", "gamma", "lambda", "predicted_left_edge", "probes", "probe_steps"]),
            "left edge: first onset at which an L2 penalty holds back less than half of the attention weights the"
            " loss grows (no-decay probes, full training set's gradient); None: never within the probe"]
    payload = {"rows": rows, "curves": curves}
    attach_figure(args, "bridge_survival.png", lambda path: figures.plot_held_share(curves, rows, path), payload, text)
    return payload, "\n".join(text)


def register(sub):
    p = sub.add_parser("survival", help="predicted L2 left edges from no-decay probes: the composition model"
                                        " read coordinate by coordinate (nothing fitted)")
    p.add_argument("--optimizer", nargs="+", choices=("adamw", "sgd"), default=["adamw", "sgd"])
    p.add_argument("--gamma", type=float, nargs="+", default=[0.5, 0.8, 1.1])
    p.add_argument("--wd", type=float, nargs="+", default=[4e-3, 1.6e-2], help="penalty strengths lambda")
    p.add_argument("--task-seeds", type=int, default=3, help="task instances 0..N-1 per gamma")
    p.add_argument("--seeds", type=int, default=2, help="init seeds 0..N-1 per task instance")
    p.add_argument("--no-progress", action="store_true")
    figure_args(p, "bridge_survival.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_survival)

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

    p = sub.add_parser("compare", help="predicted vs observed windows for the onset sweeps in a store")
    add_store_args(p)
    p.add_argument("--gamma", type=float, nargs="+", default=None, help="only these gammas")
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

    p = sub.add_parser("fit", help="fit each rate law at one gamma, predict the held-out gammas")
    add_store_args(p)
    p.add_argument("--quantity", choices=QUANTITIES,
                   default="reasoning", help="observed time to fit (see critwin.bridge.observed.observed_times)")
    p.add_argument("--fit-gamma", type=float, default=0.8, help="the gamma whose runs fix each law's prefactor")
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--ood-level", type=float, default=0.5)
    p.add_argument("--threshold", type=float, default=0.5, help="final OOD level defining observed windows")
    figure_args(p, "bridge_fit_QUANTITY.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("mechanism", help="the state each decay schedule and optimizer variant leaves, over"
                                         " training (norm, condensation, alignment, Adam's effective shrink)")
    add_store_args(p)
    p.add_argument("--steps", type=int, nargs="+", default=[400, 5000, 10000, 20000])
    p.add_argument("--gamma", type=float, default=None, help="only runs at this gamma")
    p.add_argument("--match", nargs="+", default=None,
                   help="only variants whose label contains one of these texts, e.g. 5000:10000 'no decay'")
    p.add_argument("--out-csv", default=None, help="also write the table as CSV")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_mechanism)

    p = sub.add_parser("arrival", help="the weight norm at which a decay window meets the memorised model, and"
                                       " whether it predicts composition across gammas (fit at one, test the rest)")
    add_store_args(p)
    p.add_argument("--reading", default=None, help="only runs of this reading, e.g. l2/non_embedding")
    p.add_argument("--wd", type=float, default=None, help="only windows of this decay value")
    p.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw",
                   help="only runs of this optimizer (AMSGrad and frozen-second-moment runs left out)")
    p.add_argument("--fit-gamma", type=float, default=0.8)
    p.add_argument("--level", type=float, default=0.5, help="final OOD accuracy that counts as composing")
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--out-csv", default=None, help="also write the per-run table as CSV")
    figure_args(p, "bridge_arrival.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_arrival)

    p = sub.add_parser("left-edge", help="the L2 window's left edge from Adam's gain in the first steps: fit the"
                                         " threshold at one gamma, predict the others")
    add_store_args(p)
    p.add_argument("--gamma", type=float, nargs="+", default=[0.5, 0.8, 1.1])
    p.add_argument("--wd", type=float, nargs="+", default=[1e-3, 4e-3, 1.6e-2],
                   help="penalty strengths to predict (cells with onset sweeps in the store are added)")
    p.add_argument("--reading", default="l2/non_embedding", help="decay reading of the onset sweeps compared with")
    p.add_argument("--width", type=float, default=5000, help="window width of the onset sweeps compared with")
    p.add_argument("--threshold", type=float, default=0.5, help="final OOD that makes an onset part of the window")
    p.add_argument("--fit-gamma", type=float, default=0.5)
    p.add_argument("--fit-wd", type=float, default=4e-3)
    p.add_argument("--fit-edge", type=float, default=None,
                   help="the observed edge to fit s* to (default: midpoint of that cell's bracket in the store)")
    p.add_argument("--task-seeds", type=int, default=3, help="probe runs: task instances per gamma")
    p.add_argument("--seeds", type=int, default=1, help="probe runs: init seeds per task instance")
    p.add_argument("--probe-steps", type=int, default=600)
    p.add_argument("--probe-every", type=int, default=10)
    p.add_argument("--no-train", dest="train", action="store_false", help="only read the store (no probe runs trained)")
    from critwin.cli.common import add_executor_args
    add_executor_args(p)
    p.add_argument("--no-progress", action="store_true")
    figure_args(p, "bridge_left_edge.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_left_edge)

    from critwin.bridge.mechanism import INTERVENTIONS
    p = sub.add_parser("intervene", help="test how an L2 penalty acts through Adam: rerun stored l2 runs with"
                                         " a matched decoupled shrink, AMSGrad, or a held second moment")
    add_store_args(p)
    p.add_argument("--kind", choices=INTERVENTIONS, default="matched-shrink",
                   help="matched-shrink: decoupled decay whose shrink per step is the source run's logged effective"
                        " shrink, interval by interval; adam-scaled: the same lambda, its gradient normalised per"
                        " coordinate as in Adam (bounded by lr) but outside Adam's moments; amsgrad: Adam's divisor the running"
                        " max of v; frozen-v: v held from --from-step")
    p.add_argument("--match", nargs="+", required=True,
                   help="source schedules, e.g. '5000:10000@0.004' or 'l2/non_embedding 0:5000@0.004'")
    p.add_argument("--gamma", type=float, default=None, help="only source runs at this gamma")
    p.add_argument("--task-seeds", type=int, nargs="+", default=None, help="only these task instances")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="only these init seeds")
    p.add_argument("--from-step", type=int, default=None, help="frozen-v: the step v is held from")
    p.add_argument("--no-train", dest="train", action="store_false", help="only read the store")
    from critwin.cli.common import add_executor_args
    add_executor_args(p)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_intervene)

    p = sub.add_parser("timescales", help="observed memorization and reasoning times per gamma and schedule")
    add_store_args(p)
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--ood-level", type=float, default=0.5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_timescales)

    register_stages(sub)


def cmd_bridge_stages(args):
    from critwin.empirical.metrics.stages import detect_store
    from critwin.table import format_table
    from critwin.empirical import RunStore
    RunStore(args.store).require()
    _, observed = detect_store(args.store, tuple(STAGE_METRICS.values()), "test", args.method, args.n,
                               on_corrupt="skip" if args.skip_corrupt else "raise")
    if "hops" not in observed.columns:
        observed["hops"] = np.nan
    conds = observed[observed.task.astype(str).str.startswith("alchemy_")][["task", "hops"]].drop_duplicates()
    predicted = [predict_stages(t.removeprefix("alchemy_"), None if not np.isfinite(h) else int(h),
                                args.chemistries or None, 0)
                 for t, h in zip(conds.task, conds.hops.astype(float))]
    res = compare_stages(predicted, observed, args.method)
    how = "threshold rule" if args.method == "threshold" else "last change-point rise"
    text = [format_table(res["rows"]),
            f"orders agree in {res['orders_agree']} of {res['conditions']} conditions ({how} on both;"
            " a stage never reached is left out of the order)"]
    if "spearman" in res:
        text.append(f"rank correlation of stage times over {len(res['pairs'])} (condition, stage) pairs:"
                    f" {res['spearman']:.2f}; fitted {res['steps_per_flow_time']:.3g} steps per unit of flow"
                    f" time, log residual sd {res['log_residual_sd']:.2f}")
    if res["pairs"]:
        from critwin.figures import plot_stage_times
        from critwin.cli.common import attach_figure
        attach_figure(args, "stage_times.png", lambda path: plot_stage_times(res, path), res, text)
    return res, "\n".join(text)


def cmd_stage_skill(args):
    from pathlib import Path

    from critwin.bridge.stage_skill import stage_skill
    from critwin.paper_checks.run_export import read_export
    from critwin.table import format_table
    index, metrics, _ = read_export(args.export)
    res = stage_skill(index, metrics, chemistries=args.chemistries or None, resamples=args.resamples, seed=args.seed)
    payload = {"table": res["table"].to_dict(orient="records"), "predicted": res["predicted"]}
    text = [format_table(res["table"].to_dict(orient="records")),
            "one timing rule for model and runs: the stage level (0.95 for A, 0.90 for P(B|A), P(C|A,B)) held for 3"
            " evaluations in a row (flow-time grid points for the model); observed times as intervals (the evaluation"
            " before, the completing one], censored ones as (step reached, inf); a comparison counts only where no"
            " time inside them could flip it. Skill: baseline's error minus the model's, 90% bootstrap over task"
            " instances."]
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        res["table"].to_csv(out / "skill.csv", index=False, float_format="%.6g")
        cols = [c for c in res["runs"].columns if not c.startswith("epoch_reached_")]
        res["runs"][cols].sort_values(["instance", "run_id"]).to_csv(out / "runs.csv", index=False, float_format="%.6g")
        import pandas as pd
        pd.DataFrame([{"instance": k, **{f"t_{s}": v["stage_times"][s] for s in ("A", "B|A", "C|AB")},
                       "event_order": v["order"], "dip_B|A": v["dip_b_given_a"]["depth"], "dip_t": v["dip_b_given_a"]["t"],
                       **{f"final_{s}": v["final"][s] for s in ("A", "B|A", "C|AB")}}
                      for k, v in res["predicted"].items()]).to_csv(out / "predicted.csv", index=False,
                                                                    float_format="%.6g")
        text.append(f"wrote {out}/skill.csv, runs.csv and predicted.csv")
    return payload, "\n".join(text)


def register_stages(sub):
    p = sub.add_parser("stage-skill", help="predicted Alchemy stages scored run by run against a base-rate baseline",
                       description="Reads an export of Alchemy runs (run_index.csv, run_metrics.parquet,"
                                   " run_records.json), times every unfrozen run's stages A, P(B|A), P(C|A,B) with"
                                   " censoring, predicts them per task instance with the linear readout's flow, and"
                                   " scores the predicted orders and time ratios against a baseline that knows only"
                                   " the observed base rates. No training.")
    p.add_argument("--export", required=True, help="folder of an export (paper_checks/run_export.py)")
    p.add_argument("--chemistries", type=int, default=0, help="chemistries per split for the prediction (0 = all)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--out", default=None, help="write skill.csv, runs.csv, predicted.csv here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stage_skill)

    p = sub.add_parser("stages", help="predicted (linear readout) vs observed Alchemy stage order and times",
                       description="For every Alchemy task and hop count with runs in the store: the stage times"
                                   " the runs show (threshold rule, median over seeds) against the linear"
                                   " readout's predicted ones; orders, rank correlation, timescale factor.")
    from critwin.cli.common import add_store_args
    add_store_args(p)
    p.add_argument("--n", type=int, default=3, help="consecutive evaluations at or above the level")
    from critwin.empirical.metrics.stages import STAGE_METHODS
    p.add_argument("--method", choices=STAGE_METHODS, default="threshold",
                   help="how both sides are timed: the threshold rule, or where a curve's last change-point rise"
                        " completes (for runs whose curves rise but stay below the levels, as at cpu size)")
    p.add_argument("--chemistries", type=int, default=400, help="chemistries per split for the prediction (0 = all)")
    p.add_argument("--out", default="critwin-out", help="folder for the figure")
    p.add_argument("--no-figure", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_bridge_stages)
