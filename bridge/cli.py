"""The `critwin` command line: one entry point, sub-commands grouped by module."""
from __future__ import annotations

import argparse
import json
import shlex
import sys

import numpy as np

from ..errors import ConfigError, CorruptRunError
from . import bridge_commands, check_commands, demo, phase, readings, report, sweep_commands, theory_commands, train_commands


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return _jsonable(o.tolist())
    if isinstance(o, (np.floating, float)):
        v = float(o)
        return v if np.isfinite(v) else None
    if isinstance(o, np.integer):
        return int(o)
    return o


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="critwin", description="Predict and verify critical windows of training.")
    groups = parser.add_subparsers(dest="group", metavar="GROUP", required=True)
    theory = groups.add_parser("theory", help="rate equations and predicted windows (no training)",
                               description="Derive, integrate and predict with the stylised model.")
    theory_commands.register(theory.add_subparsers(dest="command", metavar="COMMAND", required=True))
    training = groups.add_parser("train", help="train Transformers with interventions",
                                 description="Train one run and store it (skipped if already stored).")
    train_commands.register(training.add_subparsers(dest="command", metavar="TASK", required=True))
    sweep = groups.add_parser("sweep", help="grids of runs on local processes or Dask",
                              description="Run, resume and bisect sweeps of training runs.")
    sweep_commands.register_sweep(sweep.add_subparsers(dest="command", metavar="COMMAND", required=True))
    runs = groups.add_parser("runs", help="inspect and aggregate the run store")
    sweep_commands.register_runs(runs.add_subparsers(dest="command", metavar="COMMAND", required=True))
    bridge = groups.add_parser("bridge", help="theory against trained runs",
                               description="Compare predicted and observed windows.")
    bridge_commands.register(bridge.add_subparsers(dest="command", metavar="COMMAND", required=True))
    demo.register(groups.add_parser(
        "demo", help="predict the window, then verify it on a few quick trained runs",
        description="The main job: theory's predicted window, quick runs before/inside/after it, a table and a figure."))
    report.register(groups.add_parser("report", help="Markdown report of the checks present in a store"))
    check_commands.register(groups.add_parser(
        "check", help="run a paper check (claim id or all)",
        description="Paper value, measured value, tolerance and verdict for a headline claim."))
    readings.register(groups.add_parser(
        "readings", help="which reading of the paper's decay reproduces its tables",
        description="Score decay readings (form, decayed set, scale, head bias) by their distance to the"
                    " paper's numbers over task instances and seeds, with and without the onset-0 hypothesis."))
    phase.register(groups.add_parser(
        "phase", help="final OOD over decay strength x window onset x gamma, with predicted windows",
        description="The (lambda, onset, gamma) map under one decay reading; resumable runs in the store."))
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.command_line = "critwin " + " ".join(shlex.quote(a) for a in argv)
    try:
        payload, text = args.handler(args)
    except ConfigError as err:
        if getattr(args, "json", False):
            print(json.dumps({"error": str(err), "field": err.field, "allowed": err.allowed}))
        print(f"critwin: error: {err}", file=sys.stderr)
        return 2
    except CorruptRunError as err:
        if getattr(args, "json", False):
            print(json.dumps({"error": str(err), "path": str(err.path)}))
        hint = " (--skip-corrupt leaves damaged folders out)" if "skip_corrupt" in vars(args) else ""
        print(f"critwin: error: {err}{hint}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(json.dumps(_jsonable(payload), indent=1))
    else:
        print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
