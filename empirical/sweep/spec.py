"""Sweep specs: a base plus a grid over flat config keys, expanded to TrainConfigs.

Flat keys are TrainConfig fields, ModelConfig fields (d, heads, layers, mlp_ratio, init,
gamma) and decay/freeze helpers:
  wd                     decay value (constant, or inside the window(s) below)
  wd_window              "START:END" or a list of them
  wd_window_start, wd_width   one window [start, start + width) (onset sweeps)
  budget_placement, budget, width   one budget-matched window (lambda = budget / width)
  freeze                 "COMPONENT@STEP" or a list of them
A spec file is TOML with tables [base] and [grid] (grid values are lists).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields
from pathlib import Path

from critwin.empirical.config import TrainConfig
from critwin.empirical.interventions.freeze import Freeze
from critwin.empirical.models.transformer import ModelConfig

from critwin.errors import ConfigError
from critwin.schedules import Schedule, parse_window

TRAIN_KEYS = tuple(f.name for f in fields(TrainConfig) if f.name not in ("model", "wd_windows", "freeze"))
MODEL_KEYS = tuple(f.name for f in fields(ModelConfig))
DECAY_KEYS = ("wd", "wd_window", "wd_window_start", "wd_width", "budget_placement", "budget", "width")
KEYS = TRAIN_KEYS + MODEL_KEYS + DECAY_KEYS + ("freeze",)


def _number(flat: dict, key: str, default=None):
    """flat[key] as a float (or `default` when absent), naming the key when it is not a number."""
    v = flat.get(key)
    if v is None:
        return default
    if isinstance(v, bool):
        raise ConfigError(key, v, "a number")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ConfigError(key, v, "a number") from None


def _windows(flat: dict, steps: int) -> tuple:
    wd = _number(flat, "wd")
    if wd is not None and not (wd >= 0 and wd != float("inf")):
        raise ConfigError("wd", wd, "a weight decay >= 0")
    has_window = bool(flat.get("wd_window")) or flat.get("wd_window_start") is not None
    if has_window and wd is None:
        raise ConfigError("wd", None, "a decay value for the window (a window without wd would silently"
                                      " be no decay; give wd=0 for that on purpose)")
    wd = wd or 0.0
    if flat.get("budget_placement") is not None:
        if flat.get("budget") is None or flat.get("width") is None:
            raise ConfigError("budget", flat.get("budget"), "budget and width with budget_placement")
        return Schedule.budget_matched(flat["budget_placement"], _number(flat, "budget"),
                                       _number(flat, "width"), steps).windows
    if flat.get("wd_window_start") is not None:
        if flat.get("wd_width") is None:
            raise ConfigError("wd_width", None, "a window width in steps with wd_window_start")
        s = _number(flat, "wd_window_start")
        return Schedule(steps, ((s, s + _number(flat, "wd_width"), wd),)).windows
    wins = flat.get("wd_window")
    if wins:
        if not isinstance(wins, (str, list, tuple)) or not all(isinstance(w, str) for w in
                                                                 ([wins] if isinstance(wins, str) else wins)):
            raise ConfigError("wd_window", wins, "'START:END' or a list of them, e.g. '5000:10000'")
        wins = [wins] if isinstance(wins, str) else list(wins)
        return Schedule(steps, tuple((a, b, wd) for a, b in map(parse_window, wins))).windows
    return Schedule.constant(wd, steps).windows if wd > 0 else ()


def config_from_flat(flat: dict) -> TrainConfig:
    """One TrainConfig from flat keys (unknown keys and bad values name the field)."""
    unknown = sorted(set(flat) - set(KEYS))
    if unknown:
        raise ConfigError(unknown[0], flat[unknown[0]], "a config key: " + ", ".join(KEYS))
    steps = flat.get("steps", TrainConfig.steps)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ConfigError("steps", steps, "a positive integer number of training steps")
    model = ModelConfig(**{k: flat[k] for k in MODEL_KEYS if k in flat})
    fr = flat.get("freeze") or []
    fr = [fr] if isinstance(fr, str) else fr
    if not isinstance(fr, (list, tuple)) or not all(isinstance(f, str) for f in fr):
        raise ConfigError("freeze", flat.get("freeze"), "COMPONENT@STEP or a list of them, e.g. layer0@5000")
    return TrainConfig(**{k: flat[k] for k in TRAIN_KEYS if k in flat}, model=model,
                       wd_windows=_windows(flat, steps),
                       freeze=tuple((f.component, f.step) for f in map(Freeze.parse, fr)))


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

    def points(self) -> list[dict]:
        empty = [k for k, v in self.grid.items() if not v]
        if empty:
            raise ConfigError(f"grid.{empty[0]}", [], "a list of at least one value (an empty list would sweep"
                                                       " nothing)")
        keys = list(self.grid)
        return [{**self.base, **dict(zip(keys, combo))}
                for combo in itertools.product(*(self.grid[k] for k in keys))]

    def expand(self) -> list[TrainConfig]:
        """Every grid point as a validated config; the first invalid point stops everything."""
        out, seen = [], set()
        for point in self.points():
            try:
                cfg = config_from_flat(point)
            except ConfigError as e:
                raise ConfigError(e.field, e.value, f"{e.allowed} (at grid point {point})") from None
            if cfg.run_id() not in seen:
                seen.add(cfg.run_id())
                out.append(cfg)
        return out
