"""The shape of a training step, for the one driver `loop.drive`.

As scipy's `OdeSolver` subclasses own only their step and `solve_ivp` owns the rest, a stepper owns
only its representation of the weights and how one step changes them; the driver owns batches,
schedules, evaluation rhythm, divergence, checkpoints, resume and progress. A subclass sets
`identity` (what its resume state is checked against: one config, or the list of a pack's) and
`label` (the progress bar's text), writes the five methods below, and says in `accepts` which configs
it trains (the registry, `steppers.STEPPERS`, asks it).
"""
from __future__ import annotations

from abc import ABC, abstractmethod


class Stepper(ABC):
    """One training step of one or more members (`loop.Member`), driven by `loop.drive`."""

    identity: object
    label: str

    @classmethod
    def accepts(cls, cfg, pack: int | None) -> bool:
        """Whether this stepper trains `cfg` in a sweep whose pack size is `pack` (`steppers.choose_stepper`)."""
        return True

    @abstractmethod
    def forward(self, batches: list) -> list[bool]:
        """The losses of each member's batch (`batches[e]`: its indices), kept for `update`; per
        member whether its loss is finite."""

    @abstractmethod
    def update(self, step: int, lrs: list, lams: list, evaluate: bool) -> None:
        """Backward, freezes, clipping, the optimizer step at each member's lr, decay lambda in its
        reading; `evaluate`: the step is followed by an evaluation (keep what it logs)."""

    @abstractmethod
    def evaluate(self, step: int) -> None:
        """Log every live member's splits and weights at `step` into its rows."""

    @abstractmethod
    def state(self, step: int, wall: float = 0.0, checkpoints: dict | None = None) -> bytes:
        """What a killed training continues from (serialised), after `step` steps."""

    @abstractmethod
    def restore(self, state: dict, resumed: bool) -> None:
        """Continue from `state`: this training's own resume state (`resumed`) or a branch's source checkpoint."""


__all__ = ["Stepper"]
