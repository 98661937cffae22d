"""The one registry of steppers (as `solve_ivp` names its `OdeSolver` classes): which stepper trains a
config is asked here, never decided in sweep code. Each stepper says what it `accepts`; a config
goes to the first that does, in the registry's order (a pack where it can be packed, else alone).
Each stepper is a module of its own: `pack.PackStepper`, `model.ModelStepper`."""
from __future__ import annotations

from critwin.empirical.config import TrainConfig
from critwin.empirical.steppers.model import ModelStepper
from critwin.empirical.steppers.pack import PackStepper

STEPPERS = {"pack": PackStepper, "model": ModelStepper}


def choose_stepper(cfg: TrainConfig, pack: int | None) -> str:
    """The name (in `STEPPERS`) of the stepper a sweep trains `cfg` with, under its pack size (None:
    the device's default; 1: every run alone)."""
    return next(name for name, cls in STEPPERS.items() if cls.accepts(cfg, pack))


__all__ = ["STEPPERS", "choose_stepper"]
