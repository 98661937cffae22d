"""What every command shares: store, figure and executor options, and turning results into JSON."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from critwin.vocabulary import (
    DECAY_FORMS,
    DECAY_SETS,
    DEFAULT_GAMMA,
    GAMMA_HELP,
    PAPER_READING,
    RUN_OPTIMIZERS,
)


def jsonable(o):
    """o with numpy arrays and numbers as plain Python, non-finite floats as None (JSON's null)."""
    import numpy as np
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return jsonable(o.tolist())
    if isinstance(o, (np.floating, float)):
        v = float(o)
        return v if np.isfinite(v) else None
    if isinstance(o, np.integer):
        return int(o)
    return o


def reader(args):
    """The --store of a reading command: it must exist (an absent store is not an empty one)."""
    from critwin.empirical import RunStore
    RunStore(args.store).require()
    return args.store


def on_corrupt(args) -> str:
    return "skip" if getattr(args, "skip_corrupt", False) else "raise"


def add_store_args(p, default: str = "runs"):
    """--store and --skip-corrupt: the same for every command that reads a store."""
    p.add_argument("--store", default=default, help="run store folder")
    p.add_argument("--skip-corrupt", action="store_true",
                   help="warn about damaged run folders and leave them out (default: stop and name them)")


def attach_figure(args, name: str, plot, payload: dict, text: list) -> None:
    """Unless --no-figure, call plot(path) and record the path in payload and text."""
    if args.no_figure:
        return
    path = Path(args.out) / name
    plot(path)
    payload["figure"] = str(path)
    text.append(f"figure: {path}")


def figure_args(p, default_name: str):
    p.add_argument("--out", default="critwin-out", help="folder for figures (PNG)")
    p.add_argument("--no-figure", action="store_true", help=f"do not write {default_name}")


def add_executor_args(p):
    """--executor, --workers, --scheduler, --pack: where runs are trained."""
    from critwin.empirical.sweep import EXECUTORS
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local process pool, a Dask scheduler (--scheduler), or a Dask LocalCluster")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU cores)")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://host:8786")
    p.add_argument("--pack", type=int, default=None,
                   help="train up to this many compatible runs as one stacked model per worker (default: 64 on"
                        " cuda, 8 on cpu: benchmarks/bench_engine.py); 1: each run alone, the plain loop")


def add_max_runs(p):
    """--max-runs: every command that builds a grid of runs counts it first and refuses one larger."""
    from critwin.empirical.sweep.spec import MAX_RUNS
    p.add_argument("--max-runs", type=int, default=MAX_RUNS,
                   help=f"refuse a grid of more runs than this, counted before it is built (default {MAX_RUNS:,})")


@contextmanager
def executor_from(args, enabled: bool = True):
    """The executor a command's --executor / --workers / --scheduler / --pack ask for (None when
    the command will not train), closed when the block ends, however it ends."""
    from critwin.empirical.sweep import make_executor
    ex = make_executor(args.executor, args.workers, args.scheduler, args.pack) if enabled else None
    try:
        yield ex
    finally:
        if ex is not None:
            ex.close()


# ----------------------------------------------------------------- the shared flags, declared once
def add_gamma(p, nargs=None, default=DEFAULT_GAMMA, help: str | None = None):
    """--gamma, the init scale (vocabulary: weight entries ~ N(0, gamma^2/d)): one value, several
    (nargs="+", `default` a sequence), or a filter over stored runs (default None, `help` says so)."""
    p.add_argument("--gamma", type=float, nargs=nargs, default=list(default) if isinstance(default, tuple) else default,
                   help=help or GAMMA_HELP)


def add_optimizer(p, nargs=None, default=RUN_OPTIMIZERS[0], choices=RUN_OPTIMIZERS, help: str | None = None):
    """--optimizer: a run's optimizer (vocabulary.RUN_OPTIMIZERS) or, given `choices`, a theory step."""
    p.add_argument("--optimizer", nargs=nargs, choices=choices, default=default, help=help)


def add_decay_form(p, choices=DECAY_FORMS, help: str | None = None):
    """--decay-form, the paper's Eq. 4 (an L2 penalty through the optimizer) by default."""
    p.add_argument("--decay-form", choices=choices, default=PAPER_READING["decay_form"], help=help)


def add_reading_args(parser):
    """--decay-form, --decay-set, --head-bias. Default: the paper's Eq. 4, an L2 penalty on every
    non-embedding parameter through the optimizer; the decoupled readings are variations."""
    add_decay_form(parser, help="l2 penalty through the optimizer (default: the paper's Eq. 4), decoupled shrink after"
                                " the step (a variation), or adam_scaled (an intervention: the penalty's gradient"
                                " normalised per coordinate as in Adam, outside Adam's moments)")
    parser.add_argument("--decay-set", choices=DECAY_SETS, default=PAPER_READING["decay_set"],
                        help="what decay touches: non_embedding (theta minus E; default), matrices, all")
    parser.add_argument("--head-bias", action="store_true", help="give the unembedding a bias")
