"""Models: know the vocabulary size and sequence length, nothing else of tasks."""
from .transformer import INITS, ModelConfig, Transformer

__all__ = ["INITS", "ModelConfig", "Transformer"]
