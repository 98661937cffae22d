"""Metrics logged during training."""
from .evaluate import evaluate_split
from .weights import condensation_index, ov_qk_alignment, participation_ratio, weight_norm

__all__ = ["condensation_index", "evaluate_split", "ov_qk_alignment", "participation_ratio",
           "weight_norm"]
