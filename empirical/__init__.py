"""Real training of the Transformers with interventions, and the run store.

Imports torch; never imports ``critwin.theory``.
"""
from critwin.empirical.config import TrainConfig
from critwin.empirical.store import (
    CorruptRunError,
    Run,
    RunStore,
    load_runs,
    load_summaries,
)
from critwin.empirical.train import train

__all__ = ["CorruptRunError", "Run", "RunStore", "TrainConfig", "load_runs", "load_summaries", "train"]
