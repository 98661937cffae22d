"""Models: know the vocabulary size and sequence length, nothing else of tasks."""
from critwin.empirical.models.transformer import (
    DECAY_SETS,
    INITS,
    ModelConfig,
    Transformer,
)

__all__ = ["DECAY_SETS", "INITS", "ModelConfig", "Transformer"]
