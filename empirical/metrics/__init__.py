"""Metrics logged during training."""
from critwin.empirical.metrics.evaluate import evaluate_split, split_metrics, split_scores
from critwin.empirical.metrics.optim import (
    decay_mechanism,
    group_norms,
    squared_grad_norm,
)
from critwin.empirical.metrics.weights import (
    condensation_index,
    ov_qk_alignment,
    participation_ratio,
    stacked_weight_metrics,
    weight_metrics,
    weight_norm,
)

__all__ = ["condensation_index", "decay_mechanism", "evaluate_split", "split_metrics", "split_scores", "group_norms", "squared_grad_norm", "ov_qk_alignment", "participation_ratio",
           "stacked_weight_metrics", "weight_metrics", "weight_norm"]
