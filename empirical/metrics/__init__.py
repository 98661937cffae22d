"""Metrics logged during training."""
from .evaluate import evaluate_split, split_scores
from .optim import decay_mechanism, group_norms, squared_grad_norm
from .weights import (condensation_index, ov_qk_alignment, participation_ratio, stacked_weight_metrics, weight_metrics,
                      weight_norm)

__all__ = ["condensation_index", "decay_mechanism", "evaluate_split", "split_scores", "group_norms", "squared_grad_norm", "ov_qk_alignment", "participation_ratio",
           "stacked_weight_metrics", "weight_metrics", "weight_norm"]
