"""Real training of the Transformers with interventions, and the run store.

Imports torch; never imports ``critwin.theory``.
"""
from .config import TrainConfig
from .store import CorruptRunError, Run, RunStore, load_runs, load_summaries
from .train import train

__all__ = ["CorruptRunError", "Run", "RunStore", "TrainConfig", "load_runs", "load_summaries", "train"]
