"""Sweep specs: a base plus a grid over flat config keys, expanded to TrainConfigs.

Flat keys are those of `TrainConfig.from_flat` (config.py): TrainConfig fields, ModelConfig
fields and the decay and freeze helpers (wd, wd_window, wd_window_start, wd_width,
budget_placement, budget, width, freeze). A spec file is TOML with tables [base] and [grid]
(grid values are lists).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

from critwin.empirical.config import FLAT_KEYS, TrainConfig

from critwin.errors import ConfigError

KEYS = FLAT_KEYS
MAX_RUNS = 10_000       # the grid size a command refuses above, unless told otherwise (--max-runs)


# The flat keys' parsing lives with the config (TrainConfig.from_flat); the sweep's old name stays.
config_from_flat = TrainConfig.from_flat


def parse_value(text: str):
    """'3' -> 3, '3e-3' -> 0.003, 'true' -> True, anything else stays a string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


@dataclass
class SweepSpec:
    base: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)   # key -> list of values

    @classmethod
    def from_toml(cls, path) -> "SweepSpec":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError("spec", str(path), f"a readable TOML file ({e})") from None
        extra = set(data) - {"base", "grid"}
        if extra:
            raise ConfigError("spec", sorted(extra), "only the tables [base] and [grid]")
        grid = {k: (v if isinstance(v, list) else [v]) for k, v in data.get("grid", {}).items()}
        return cls(dict(data.get("base", {})), grid)

    def with_sets(self, sets) -> "SweepSpec":
        """Apply --set key=v1,v2,... (a single value sets the base)."""
        base, grid = dict(self.base), dict(self.grid)
        for s in sets or []:
            if "=" not in s:
                raise ConfigError("set", s, "KEY=V1,V2,... e.g. seed=0,1,2")
            k, v = s.split("=", 1)
            vals = [parse_value(x) for x in v.split(",")]
            if len(vals) == 1:
                base[k.strip()] = vals[0]
                grid.pop(k.strip(), None)
            else:
                grid[k.strip()] = vals
        return SweepSpec(base, grid)

    def size(self) -> int:
        """The grid's points, counted without building them (the product of its value counts)."""
        return math.prod(len(v) for v in self.grid.values())

    def check_size(self, max_runs: int | None) -> None:
        """Refuse a grid of more than `max_runs` points (None: any size), before a point is built."""
        check_runs(self.size(), max_runs, " x ".join(f"{len(v)} {k}" for k, v in self.grid.items()))

    def points(self) -> list[dict]:
        empty = [k for k, v in self.grid.items() if not v]
        if empty:
            raise ConfigError(f"grid.{empty[0]}", [], "a list of at least one value (an empty list would sweep"
                                                       " nothing)")
        keys = list(self.grid)
        return [{**self.base, **dict(zip(keys, combo))}
                for combo in itertools.product(*(self.grid[k] for k in keys))]

    def expand(self, max_runs: int | None = None) -> list[TrainConfig]:
        """Every grid point as a validated config; the first invalid point stops everything, and so
        does a grid of more than `max_runs` points (None: any size), before any is built."""
        self.check_size(max_runs)
        out, seen = [], set()
        for point in self.points():
            try:
                cfg = TrainConfig.from_flat(point)
            except ConfigError as e:
                raise ConfigError(e.field, e.value, f"{e.allowed} (at grid point {point})") from None
            if cfg.run_id() not in seen:
                seen.add(cfg.run_id())
                out.append(cfg)
        return out


def check_runs(count: int, max_runs: int | None, factors: str = "") -> None:
    """A ConfigError when a command would build `count` runs, over `max_runs` (None: no limit);
    `factors` says where the count comes from."""
    if max_runs is None:
        return
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1:
        raise ConfigError("max_runs", max_runs, "a positive number of runs")
    if count > max_runs:
        raise ConfigError("grid", f"{count:,} runs", f"at most --max-runs {max_runs:,} runs"
                          + (f" (this grid: {factors})" if factors else "") + "; give a larger --max-runs to run it")
