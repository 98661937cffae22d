"""Sweeps: grids of run configs, executors (local processes, Dask), resume, aggregation."""
from .aggregate import summarize
from .edge import find_edge
from .executors import EXECUTORS, DaskExecutor, LocalExecutor, make_executor, run_config
from .runner import SweepResult, run_sweep
from .spec import KEYS, SweepSpec, config_from_flat, parse_value

__all__ = ["EXECUTORS", "KEYS", "DaskExecutor", "LocalExecutor", "SweepResult", "SweepSpec",
           "config_from_flat", "find_edge", "make_executor", "parse_value", "run_config",
           "run_sweep", "summarize"]
