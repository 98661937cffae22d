"""The `critwin` command line: one entry point, sub-commands grouped by module."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import warnings

from critwin.cli.common import jsonable
from critwin.errors import ConfigError, CorruptRunError, RunNotStoredError, one_line_warning

# group -> (help, description, command module, register function and its subcommand metavar).
# A group's module is imported only when that group is used, so `critwin --help` and the
# theory commands start without importing torch.
GROUPS = {
    "theory": ("rate equations and predicted windows (no training)",
               "Derive, integrate and predict with the stylised model.", "critwin.cli.theory", "register", "COMMAND"),
    "train": ("train Transformers with interventions",
              "Train one run and store it (skipped if already stored).", "critwin.cli.train", "register", "TASK"),
    "sweep": ("grids of runs on local processes or Dask", "Run, resume and bisect sweeps of training runs.",
              "critwin.cli.sweep", "register_sweep", "COMMAND"),
    "runs": ("inspect and aggregate the run store", None, "critwin.cli.sweep", "register_runs", "COMMAND"),
    "bridge": ("theory against trained runs", "Compare predicted and observed windows.", "critwin.cli.bridge",
               "register", "COMMAND"),
    "demo": ("predict the window, then verify it on a few quick trained runs",
             "The main job: theory's predicted window, quick runs before/inside/after it, a table and a figure.",
             "critwin.cli.demo", "register", None),
    "report": ("Markdown report of the checks present in a store", None, "critwin.cli.report", "register", None),
    "check": ("run a paper check (claim id or all)",
              "Paper value, measured value, tolerance and verdict for a headline claim.", "critwin.cli.check",
              "register", None),
    "readings": ("which reading of the paper's decay reproduces its tables",
                 "Score decay readings (form, decayed set, scale, head bias) by their distance to the paper's"
                 " numbers over task instances and seeds, with and without the onset-0 hypothesis.",
                 "critwin.cli.readings", "register", None),
    "alchemy": ("the Alchemy symbolic chemistry: export and show", None, "critwin.cli.alchemy", "register", "COMMAND"),
    "scan": ("SCAN generated from its grammar: export the standard splits", None, "critwin.cli.scan", "register",
             "COMMAND"),
    "stages": ("stage times of learning curves (threshold rule or change points), over seeds", None, "critwin.cli.stages",
               "register", None),
    "plasticity": ("freeze a component from each step t_f: how much later a stage comes (the window)", None,
                   "critwin.cli.stages", "register_plasticity", None),
    "freeze-sweep": ("the same command as plasticity, under another name: freeze branches of a"
                     " baseline and their delays", None, "critwin.cli.stages", "register_plasticity", None),
    "tasks": ("property-test task generators (the testing kit)", None, "critwin.cli.tasks", "register", "COMMAND"),
    "phase": ("final OOD over decay strength x window onset x gamma, with predicted windows",
              "The (lambda, onset, gamma) map under one decay reading; resumable runs in the store.",
              "critwin.cli.phase", "register", None),
}


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes (a bad type, a choice not offered) are one line and a hint of
    --help, not the usage block first; its sub-command parsers are of this class too."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The whole parser, or (given argv) only the group argv names, fully built."""
    import importlib
    parser = Parser(prog="critwin", description="Predict and verify critical windows of training.")
    groups = parser.add_subparsers(dest="group", metavar="GROUP", required=True)
    wanted = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, (help_, desc, module, fn, metavar) in GROUPS.items():
        p = groups.add_parser(name, help=help_, description=desc or help_)
        if wanted is not None and name != wanted:
            continue
        register = getattr(importlib.import_module(module), fn)
        register(p.add_subparsers(dest="command", metavar=metavar, required=True) if metavar else p)
    return parser


def main(argv=None) -> int:
    """Run a command; its exit code. Output into a pipe closed early (`critwin ... --json | head`,
    `critwin --help | head -c1`) ends quietly with 141, as a shell command killed by SIGPIPE does."""
    try:
        try:
            code = run_command(argv)
        except SystemExit:      # argparse's --help (and its usage errors) exit from inside parse_args:
            sys.stdout.flush()  # flush their text here, where a closed pipe is caught, not at interpreter exit
            raise
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)      # so the flush at exit does not fail again
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13


def run_command(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    args.command_line = "critwin " + " ".join(shlex.quote(a) for a in argv)
    shown = warnings.formatwarning
    warnings.formatwarning = one_line_warning       # a user reads the message, not our source line
    try:
        payload, text, *code = args.handler(args)      # a handler may add an exit code (e.g. a failed check)
    except KeyboardInterrupt as stop:      # Ctrl-C, or SIGTERM during training (loop.Stopped names the signal)
        print("critwin: interrupted: runs already stored stay stored; the others keep their resume states"
              " (run the same command again to continue)", file=sys.stderr)
        return 128 + (getattr(stop, "signum", None) or 2)
    except RunNotStoredError as err:        # trained, but the store could not take it: what failed, what is left
        if getattr(args, "json", False):
            print(json.dumps({"error": str(err), "run_id": err.run_id}))
        print(f"critwin: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:      # a full disk, a store that vanished: what could not be written, in one line
        where = f" ({err.filename})" if err.filename else ""
        if getattr(args, "json", False):
            print(json.dumps({"error": f"{err.strerror or err}{where}", "errno": err.errno}))
        print(f"critwin: error: {err.strerror or err}{where}", file=sys.stderr)
        return 1
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
    finally:
        warnings.formatwarning = shown
    if getattr(args, "json", False):
        print(json.dumps(jsonable(payload), indent=1))
    else:
        print(text)
    return code[0] if code else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
