"""Weight-decay schedules lambda(step) as piecewise-constant segments.

Shared by both sides: the theory integrates them in continuous time (t = step * eta) and
reads `breakpoints()` so it never steps over an edge; the training loop reads `value(step)`.
A schedule is data: sorted, non-overlapping windows [start, end) with a value each, over
a training horizon of `total` steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from critwin.errors import ConfigError

PLACEMENTS = ("early", "middle", "late")


@dataclass(frozen=True)
class Schedule:
    """lambda(step) = value on each [start, end), 0 elsewhere, for step in [0, total)."""

    total: int
    windows: tuple = ()   # ((start, end, value), ...)

    def __post_init__(self):
        if isinstance(self.total, bool) or not float(self.total).is_integer() or self.total <= 0:
            raise ConfigError("total_steps", self.total, "a positive whole number of steps")
        wins = tuple(sorted((float(a), float(b), float(v)) for a, b, v in self.windows))
        for a, b, v in wins:
            if not (np.isfinite(a) and np.isfinite(b)) or b < a:
                raise ConfigError("wd_window", f"{a:g}:{b:g}", "START:END with START <= END")
            if a < 0 or b > self.total:
                raise ConfigError("wd_window", f"{a:g}:{b:g}",
                                  f"a window inside training, 0 <= START <= END <= {self.total}")
            if not (np.isfinite(v) and v >= 0):
                raise ConfigError("wd", v, "a weight decay >= 0")
        for (a0, b0, _), (a1, b1, _) in zip(wins, wins[1:]):
            if a1 < b0 and b1 > a1 and b0 > a0:
                raise ConfigError("wd_window", f"{a1:g}:{b1:g}",
                                  f"windows that do not overlap (it overlaps {a0:g}:{b0:g})")
        object.__setattr__(self, "windows", tuple(w for w in wins if w[1] > w[0] and w[2] > 0))

    # constructors -------------------------------------------------------
    @classmethod
    def none(cls, total: int) -> "Schedule":
        return cls(total)

    @classmethod
    def constant(cls, value: float, total: int) -> "Schedule":
        return cls(total, ((0, total, value),))

    @classmethod
    def window(cls, start: float, end: float, value: float, total: int) -> "Schedule":
        return cls(total, ((start, end, value),))

    @classmethod
    def budget_matched(cls, placement: str, budget: float, width: float, total: int) -> "Schedule":
        """One window of `width` steps holding integral lambda dt = `budget` (lambda_w = budget/width)."""
        if placement not in PLACEMENTS:
            raise ConfigError("budget_placement", placement, "one of " + ", ".join(PLACEMENTS))
        if not (np.isfinite(budget) and budget >= 0):
            raise ConfigError("budget", budget, "a decay budget lambda*steps >= 0")
        if not (0 < width <= total):
            raise ConfigError("width", width, f"a window width in (0, {total}] steps")
        start = {"early": 0.0, "middle": (total - width) / 2, "late": total - width}[placement]
        return cls(total, ((start, start + width, budget / width),))

    # queries ------------------------------------------------------------
    def value(self, step) -> np.ndarray:
        """lambda at `step` (array-friendly); windows are closed on the left."""
        step = np.asarray(step, dtype=float)
        out = np.zeros_like(step)
        for a, b, v in self.windows:
            out = np.where((step >= a) & (step < b), v, out)
        return out

    def integral(self) -> float:
        """Decay budget: sum of lambda * width, in lambda * steps."""
        return float(sum((b - a) * v for a, b, v in self.windows))

    def breakpoints(self) -> list[float]:
        """Sorted step edges including 0 and total: lambda is constant between them."""
        pts = {0.0, float(self.total)}
        for a, b, _ in self.windows:
            pts.update((a, b))
        return sorted(pts)

    def segments(self) -> list[tuple[float, float, float]]:
        """(start, end, lambda) pieces covering [0, total)."""
        pts = self.breakpoints()
        return [(a, b, float(self.value(a))) for a, b in zip(pts, pts[1:])]

    def describe(self) -> str:
        if not self.windows:
            return "no weight decay"
        return " + ".join(f"{v:g} on [{a:g}, {b:g})" for a, b, v in self.windows)

    def to_dict(self) -> dict:
        return {"total": self.total, "windows": [list(w) for w in self.windows]}


def parse_window(text: str) -> tuple[float, float]:
    """'START:END' -> (start, end), with a clear error for anything else."""
    try:
        a, b = text.split(":")
        return float(a), float(b)
    except (ValueError, AttributeError):
        raise ConfigError("wd_window", text, "START:END in steps, e.g. 5000:10000") from None
