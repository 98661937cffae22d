"""Interventions the training loop consumes: decay schedules and freezing schedules."""
from critwin.empirical.interventions.decay import (
    DECAY_FORMS,
    add_l2_grad,
    apply_adam_scaled_decay,
    apply_decay,
    decay_after_step,
    decay_before_step,
)
from critwin.empirical.interventions.freeze import Freeze, frozen_parameters

from critwin.schedules import PLACEMENTS, Schedule, parse_window

__all__ = ["DECAY_FORMS", "PLACEMENTS", "Freeze", "Schedule", "add_l2_grad", "apply_adam_scaled_decay", "apply_decay", "decay_after_step",
           "decay_before_step", "frozen_parameters", "parse_window"]
