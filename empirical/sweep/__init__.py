"""Sweeps: grids of run configs, executors (local processes, Dask), resume, aggregation."""
from critwin.empirical.sweep.aggregate import summarize
from critwin.empirical.sweep.edge import find_edge
from critwin.empirical.sweep.executors import (
    EXECUTORS,
    DaskExecutor,
    LocalExecutor,
    Pause,
    make_executor,
    run_config,
)
from critwin.empirical.sweep.one_run import train_and_store
from critwin.empirical.sweep.runner import SweepResult, run_sweep
from critwin.empirical.sweep.spec import KEYS, SweepSpec, config_from_flat, parse_value

__all__ = ["EXECUTORS", "KEYS", "DaskExecutor", "LocalExecutor", "Pause", "SweepResult", "SweepSpec",
           "config_from_flat", "find_edge", "make_executor", "parse_value", "run_config",
           "run_sweep", "summarize", "train_and_store"]
