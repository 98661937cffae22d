"""Handlers of `critwin check ID|all`: run paper checks and write their result tables."""
from __future__ import annotations

from critwin.figures import plot_check
from critwin.table import format_table
from critwin.cli.common import add_executor_args, add_max_runs, executor_from
from critwin.cli.common import add_reading_args
from critwin.empirical import RunStore
from critwin.empirical.sweep.spec import check_runs
from critwin.empirical.config import DEVICES, PRECISIONS
from critwin.empirical.tasks.alchemy import INPUT_FORMATS
from critwin.errors import ConfigError
from critwin.paper_checks import (
    CHECK_SIZES,
    CHECKS,
    CLAIM_IDS,
    train_checks,
    write_result,
)


def _fmt_row(r: dict) -> dict:
    out = {"value": r["value"], "paper": r["paper"], "measured": r["measured"]}
    if "sd" in r:
        out.update(sd=r["sd"], n=r["n"])
    return out


def cmd_paper_form(args):
    """S6 in the paper's form (paper_checks/s6_paper.py): the runs of a registered protocol, a dry run listing
    them, or (--no-train) the verdict from the store."""
    from critwin.paper_checks import s6_paper
    if [i.upper() for i in args.id] != ["S6"]:
        raise ConfigError("paper_form", args.paper_form, "with the one check id S6")
    protocol = s6_paper.protocol_named(args.paper_form)
    runs, factors = s6_paper.grid_size(protocol, args.seeds, args.device)
    check_runs(runs, args.max_runs, factors)        # counted before the plan reads the store or anything trains
    store = RunStore(args.store)
    if args.dry_run:
        text = s6_paper.dry_run(protocol, store, args.seeds, args.device, 75.0 if protocol.size == "authors" else 1.0)
        return {"dry_run": text}, text
    if args.train:
        with executor_from(args) as ex:
            s6_paper.train(protocol, store, ex, not args.no_progress, args.seeds, args.device)
    else:
        store.require()
    res = s6_paper.result(protocol, store, args.seeds, args.device)
    if args.results:
        from critwin.figures import plot_s6_paper
        path = write_result(res, args.results, args.command_line)
        res["result_file"] = str(path)
        res["figure"] = str(plot_s6_paper(s6_paper.curves(protocol, store, args.seeds, args.device), protocol.every,
                                          path.with_suffix(".png"), f"S6 in the paper's form: {res['verdict']}"))
    text = [f"{res['id']} | {res['claim']}", format_table([_fmt_row(r) for r in res["rows"]]) if res["rows"] else "",
            f"verdict: {res['verdict']}"]
    return res, "\n".join(text)


def cmd_check(args):
    if getattr(args, "paper_form", None):
        return cmd_paper_form(args)
    if getattr(args, "dry_run", False):
        raise ConfigError("dry_run", True, "with --paper-form (S6 in the paper's form)")
    named = [i.upper() for i in args.id]
    ids = [i for i in CHECKS if args.size in CHECKS[i].sizes] if named == ["ALL"] else list(dict.fromkeys(named))
    for i in ids:
        if i not in CHECKS:
            available = ", ".join(CHECKS)
            missing = ", ".join(c for c in CLAIM_IDS if c not in CHECKS)
            raise ConfigError("id", i, f"one or more of {available}, or all"
                                       + (f" (not yet implemented: {missing})" if missing else ""))
    for f in ("seeds", "task_seeds"):
        if getattr(args, f) is not None and getattr(args, f) < 1:
            raise ConfigError(f, getattr(args, f), "a count >= 1")
    if args.freeze_points is not None and any(not hasattr(CHECKS[i], "points") for i in ids):
        raise ConfigError("freeze_points", args.freeze_points, "only with S6 (the plasticity check)")
    if args.variants and (len(ids) != 1 or not any(hasattr(CHECKS[ids[0]], a) for a in ("variants", "conditions"))):
        raise ConfigError("variant", args.variants, "with one check id whose runs come in named variants (W1-W12)"
                                                    " or conditions (S1-S5)")
    store = RunStore(args.store)
    if not args.train and any(hasattr(CHECKS[i], "configs") for i in ids):
        store.require()
    results, text = [], []
    extra = {"points": args.freeze_points} if args.freeze_points is not None else {}
    if args.variants:
        extra["variants"] = tuple(args.variants)
    if args.input_format is not None:
        if any(not i.startswith("S") for i in ids):
            raise ConfigError("input_format", args.input_format, "only with the Alchemy stage checks S1-S6")
        extra["input_format"] = args.input_format
    if args.precision != "fp32":
        if any(not i.startswith("S") for i in ids):
            raise ConfigError("precision", args.precision, "fp32, or bf16 with the Alchemy checks (S1-S6) only")
        extra["precision"] = args.precision
    if args.in_progress:
        if args.train or any(not hasattr(CHECKS[i], "conditions") for i in ids):
            raise ConfigError("in_progress", True, "with --no-train and the stage checks (S1-S5) only")
        extra["in_progress"] = True
    sizes = {i: CHECKS[i].grid_size(args.size, **variation_args(args), **extra) for i in ids}
    check_runs(sum(n for n, _ in sizes.values()), args.max_runs,     # counted before a config is built
               "; ".join(f"{i}: {factors}" for i, (n, factors) in sizes.items() if n))
    with executor_from(args) as ex:
        if args.train and len(ids) > 1:      # one sweep for all: packs and workers shared between checks
            train_checks([CHECKS[i] for i in ids], args.size, store, ex, not args.no_progress, **variation_args(args))
        for i in ids:
            res = CHECKS[i].run(args.size, store, ex, not args.no_progress, train=args.train, **variation_args(args),
                                **extra)
            if args.results:
                path = write_result(res, args.results, args.command_line)
                res["result_file"] = str(path)
                res["figure"] = str(plot_check(res, path.with_suffix(".png")))
            results.append(res)
            text += [f"{res['id']} | {res['claim']}", format_table([_fmt_row(r) for r in res["rows"]]),
                     f"verdict: {res['verdict']}" + (f" (tolerance {res['tolerance']})" if "tolerance" in res else ""),
                     ""]
    summary = [{"id": r["id"], "verdict": r["verdict"]} for r in results]
    text.append(format_table(summary))
    if args.results:
        from pathlib import Path
        text.append(f"results written to {Path(args.results).resolve()} (JSON, CSV and PNG per check)")
    payload = {"results": results, "summary": summary}
    if len(results) == 1:
        payload.update(results[0])
    return payload, "\n".join(text)


def variation_args(args) -> dict:
    """The protocol variation chosen on the command line, as EmpiricalCheck.run's keywords."""
    return {"wd_scale": args.wd_scale, "seeds": args.seeds, "task_seeds": args.task_seeds,
            "reading": reading_from_args(args), "device": args.device}


def reading_from_args(args) -> dict:
    return {"decay_form": args.decay_form, "decay_set": args.decay_set, "head_bias": args.head_bias}


def register(parser):
    parser.add_argument("id", nargs="+", help="claim ids (" + ", ".join(CHECKS) + "), or all")
    parser.add_argument("--size", choices=CHECK_SIZES, default="quick",
                        help="quick: times / 10, one seed (machinery only); paper: the paper's protocol; cpu: the"
                             " Alchemy checks (S) at the size of empirical/presets.py (orders and ratios only);"
                             " authors: the Alchemy checks at the authors' recipe (150 epochs)")
    parser.add_argument("--store", default="runs", help="run store (runs are shared between checks)")
    parser.add_argument("--results", default="critwin-out/checks",
                        help="folder for result JSON/CSV/PNG ('' to skip); the committed results are"
                             " written with --results paper_checks/results")
    add_max_runs(parser)
    add_executor_args(parser)
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="where the runs train (cuda: packs of 64 runs per worker by default)")
    parser.add_argument("--wd-scale", type=float, default=1.0,
                        help="multiply every decay value (a variation of the protocol, labelled as such)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="paper (or cpu) size with this many seeds instead of the protocol's (labelled as such)")
    parser.add_argument("--task-seeds", type=int, default=None,
                        help="W checks at paper size: this many task instances instead of the protocol's 3;"
                             " S1-S5 (cpu, paper, authors size): task instances 0..n-1 instead of instance 0 only"
                             " (labelled)")
    parser.add_argument("--freeze-points", type=int, default=None,
                        help="S6 only: this many freeze steps, evenly spaced, instead of the protocol's 9 (labelled)")
    parser.add_argument("--paper-form", choices=("stone_cpu", "authors", "quick"), default=None,
                        help="S6 only: the paper's form (freeze from A's completion, every 10 epochs; time B given A and"
                             " C given A,B): stone_cpu (registered: stone tokens, cpu size, 100 epochs, 3 seeds) or"
                             " authors (the authors' recipe, 1000 epochs, 25 freeze points); quick: a test size (9 epochs, 1 seed),"
                             " never a result; resumable")
    parser.add_argument("--dry-run", action="store_true",
                        help="with --paper-form: list the runs (and what the store has) without training")
    parser.add_argument("--variant", action="append", dest="variants", metavar="NAME",
                        help="train only this variant's runs (repeatable; e.g. 'constant 0.01' of W11, or a"
                             " condition of S1-S5 such as 'decomposition h2' of S4); the verdict reads every"
                             " variant's runs in the store, labelled incomplete if any is missing")
    add_reading_args(parser)
    parser.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                        help="Alchemy checks: stone_states, one token per stone with its reward bound in (a variation"
                             " the authors' code supports; labelled 'variation: stone tokens')")
    parser.add_argument("--no-train", dest="train", action="store_false",
                        help="only read the store: missing runs are left out (n counts what is there)")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="Alchemy checks: bf16 trains (and reads) the runs under bf16 autocast, a speed option kept"
                             " by a registered comparison with fp32 (paper_checks/reports/alchemy_authors); labelled")
    parser.add_argument("--in-progress", action="store_true",
                        help="with --no-train, S1-S5: read runs still training (or killed midway) as far as their"
                             " resume states go; the verdict names each such run's step")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=cmd_check)
