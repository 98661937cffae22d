"""TrainConfig: one frozen, validated config fully determines a training run."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields, replace

from ..errors import ConfigError
from ..schedules import Schedule
from .interventions.freeze import Freeze
from .models.transformer import ModelConfig
from .tasks import TASKS

OPTIMIZERS = ("adamw", "sgd")
DEVICES = ("cpu", "cuda")
CONFIG_VERSION = 1


@dataclass(frozen=True)
class TrainConfig:
    task: str = "anchor_permutation"
    task_seed: int = 0
    model: ModelConfig = ModelConfig()
    optimizer: str = "adamw"
    lr: float = 3e-3
    betas: tuple = (0.9, 0.98)
    momentum: float = 0.9
    batch_size: int = 128
    steps: int = 20000
    wd_windows: tuple = ()     # ((start, end, lambda), ...): hand-applied decoupled decay
    freeze: tuple = ()         # ((component, step), ...)
    seed: int = 0
    eval_every: int = 100
    device: str = "cpu"

    def __post_init__(self):
        object.__setattr__(self, "betas", tuple(float(b) for b in self.betas))
        object.__setattr__(self, "wd_windows", tuple(tuple(float(v) for v in w) for w in self.wd_windows))
        object.__setattr__(self, "freeze", tuple((str(c), int(s)) for c, s in self.freeze))
        if self.task not in TASKS:
            raise ConfigError("task", self.task, "one of " + ", ".join(TASKS))
        if isinstance(self.model, dict):
            object.__setattr__(self, "model", ModelConfig(**self.model))
        for f in ("batch_size", "steps", "eval_every"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f, v, "a positive integer")
        for f in ("seed", "task_seed"):
            if isinstance(getattr(self, f), bool) or not isinstance(getattr(self, f), int) or getattr(self, f) < 0:
                raise ConfigError(f, getattr(self, f), "an integer >= 0")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError("optimizer", self.optimizer, "one of " + ", ".join(OPTIMIZERS))
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ConfigError("lr", self.lr, "a learning rate > 0")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ConfigError("betas", self.betas, "two numbers in [0, 1)")
        if not (0 <= self.momentum < 1):
            raise ConfigError("momentum", self.momentum, "a number in [0, 1)")
        if self.device not in DEVICES:
            raise ConfigError("device", self.device, "one of " + ", ".join(DEVICES))
        self.schedule()  # validates the windows against the training length
        for c, s in self.freeze:
            Freeze(c, s)
            if not (0 <= s <= self.steps):
                raise ConfigError("freeze", f"{c}@{s}", f"a step in [0, {self.steps}]")

    def schedule(self) -> Schedule:
        return Schedule(self.steps, self.wd_windows)

    def freezes(self) -> list[Freeze]:
        return [Freeze(c, s) for c, s in self.freeze]

    def resolved(self) -> dict:
        """Plain JSON-able dict of every field (the run's identity), with the format version."""
        d = asdict(self)
        d["betas"], d["wd_windows"] = list(self.betas), [list(w) for w in self.wd_windows]
        d["freeze"] = [list(f) for f in self.freeze]
        d["model"] = self.model.to_dict()
        d["config_version"] = CONFIG_VERSION
        return d

    def run_id(self) -> str:
        blob = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names - {"config_version"}
        if unknown:
            raise ConfigError("config", sorted(unknown), "only TrainConfig fields: " + ", ".join(sorted(names)))
        return cls(**{k: (tuple(tuple(x) if isinstance(x, list) else x for x in v) if isinstance(v, list) else v)
                      for k, v in d.items() if k in names})

    def with_model(self, **changes) -> "TrainConfig":
        """A copy with architecture/init fields changed (d, heads, layers, init, gamma, ...)."""
        return replace(self, model=replace(self.model, **changes))
