"""Interventions the training loop consumes: decay schedules and freezing schedules."""
from ...schedules import PLACEMENTS, Schedule, parse_window
from .decay import apply_decay
from .freeze import Freeze, frozen_parameters

__all__ = ["PLACEMENTS", "Freeze", "Schedule", "apply_decay", "frozen_parameters", "parse_window"]
