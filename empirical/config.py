"""TrainConfig: one frozen, validated config fully determines a training run."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields, replace

from critwin.empirical.interventions.decay import DECAY_FORMS
from critwin.empirical.interventions.freeze import Freeze
from critwin.empirical.models.transformer import DECAY_SETS, ModelConfig
from critwin.empirical.tasks import TASK_OPTIONS, TASKS, make_task

from critwin.errors import ConfigError
from critwin.schedules import PLACEMENTS, Schedule, parse_window
from critwin.vocabulary import RUN_OPTIMIZERS as OPTIMIZERS
from critwin.vocabulary import STORED_READING

LR_SCHEDULES = ("constant", "cosine")
FREEZE_OPTIMIZER = ("keep", "rebuild")
DEVICES = ("cpu", "cuda")
PRECISIONS = ("fp32", "bf16")   # bf16: forward and backward under torch.autocast (weights and Adam stay fp32)
CONFIG_VERSION = 1
# Fields added after version 1, with the value every earlier run had: the run id hashes them
# only when they differ from it, so runs stored before they existed keep their ids and meaning.
ADDED_DEFAULTS = {"decay_form": STORED_READING["decay_form"], "decay_set": STORED_READING["decay_set"], "freeze_second_moment": None, "amsgrad": False,
                  "lr_schedule": "constant", "lr_final": 0.0, "clip": None, "checkpoints": [], "branch": None,
                  "freeze_optimizer": "keep", "eval_max": None,
                  "hops": None, "chemistries": None, "ablation": None, "modulus": None, "train_frac": None,
                  "query_end": None, "input_format": None, "held_out": None, "precision": "fp32"}
ADDED_MODEL_DEFAULTS = {"head_bias": False, "norm": "pre", "positions": "learned", "embed_scale": False,
                        "dropout": 0.0, "activation": "gelu", "layer_init": "independent"}


BRANCH_FREE = ("freeze", "wd_windows", "checkpoints", "branch")   # may differ from a branch's source


def check_branch(source: "TrainConfig", cfg: "TrainConfig", step: int) -> None:
    """A run may start from `source`'s checkpoint at `step` only if it would have trained the
    same way up to there: every field equal but freezes and decay windows, which must agree
    before `step`, and what a freeze does to the optimizer, where nothing froze before `step`."""
    import numpy as np
    a, b = source.resolved(), cfg.resolved()
    free = BRANCH_FREE if any(f[1] < step for f in source.freeze) else BRANCH_FREE + ("freeze_optimizer",)
    for k in a:
        if k not in free and a[k] != b[k]:
            raise ConfigError(k, b[k], f"{a[k]!r}, the value of the run it branches from ({cfg.branch})")
    if not np.array_equal(source.schedule().value(np.arange(step)), cfg.schedule().value(np.arange(step))):
        raise ConfigError("wd_windows", list(cfg.wd_windows), f"the same decay as the source run before step {step}")
    if sorted(f for f in source.freeze if f[1] < step) != sorted(f for f in cfg.freeze if f[1] < step):
        raise ConfigError("freeze", list(cfg.freeze), f"the source run's freezes before step {step} (new ones from it on)")


@dataclass(frozen=True)
class TrainConfig:
    task: str = "anchor_permutation"
    task_seed: int = 0
    hops: int | None = None          # Alchemy composition / decomposition: path length 2..5
    chemistries: int | None = None   # Alchemy: cap on chemistries per split (None = all 1,371 / 165)
    ablation: bool | None = None     # Alchemy: also evaluate with reward tokens replaced by <unk>
    query_end: str | None = None     # Alchemy: io (None: the query closed by <io>) or potion (the authors' code)
    input_format: str | None = None  # Alchemy: tokens (None: 4 per stone) or stone_states (one per stone, a variation)
    held_out: str | None = None      # Alchemy: toolkit (None: our seeded split) or authors (their code's rule)
    modulus: int | None = None       # modarith: p (None = 67)
    train_frac: float | None = None  # modarith: fraction of the p^2 pairs trained (None = 0.4)
    model: ModelConfig = ModelConfig()
    optimizer: str = "adamw"
    lr: float = 3e-3
    betas: tuple = (0.9, 0.98)
    momentum: float = 0.9
    lr_schedule: str = "constant"   # cosine: lr * (1 + cos(pi step / steps)) / 2, per batch
    lr_final: float = 0.0           # cosine: where it ends (lr_final + (lr - lr_final) (1 + cos) / 2)
    clip: float | None = None       # clip the loss gradient's global norm to this before the step
    batch_size: int = 128
    steps: int = 20000
    wd_windows: tuple = ()     # ((start, end, lambda), ...): decay lambda(step)
    # the reading keeps its first defaults (vocabulary.STORED_READING) so that stored runs keep their ids;
    # the commands and checks set the paper's reading (vocabulary.PAPER_READING)
    decay_form: str = STORED_READING["decay_form"]   # how lambda acts: decoupled shrink or l2 penalty in the loss
    decay_set: str = STORED_READING["decay_set"]     # what it acts on: matrices, non_embedding, all
    freeze_second_moment: int | None = None   # adamw: hold Adam's v from this step on (an intervention)
    amsgrad: bool = False      # adamw: normalise by the running max of v (v never falls: an intervention)
    freeze: tuple = ()         # ((component, step), ...)
    freeze_optimizer: str = "keep"  # at a freeze: keep the optimizer's state, or rebuild it over the rest
    checkpoints: tuple = ()    # steps after which the full training state is saved with the run
    branch: str | None = None  # "RUN_ID@STEP": start from that run's checkpoint instead of step 0
    seed: int = 0
    eval_every: int = 100
    eval_max: int | None = None   # evaluate each split on at most this many examples (a fixed seeded subset)
    device: str = "cpu"
    precision: str = "fp32"    # bf16: autocast the forward and backward passes (a speed option; measure it first)

    def __post_init__(self):
        for f in ("lr", "momentum"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f, v, "a number")
        try:
            object.__setattr__(self, "betas", tuple(float(b) for b in self.betas))
        except (TypeError, ValueError):
            raise ConfigError("betas", self.betas, "two numbers in [0, 1), e.g. [0.9, 0.98]") from None
        try:
            wins = tuple(tuple(float(v) for v in w) for w in self.wd_windows)
        except (TypeError, ValueError):
            raise ConfigError("wd_windows", self.wd_windows, "(start, end, wd) number triples") from None
        if any(len(w) != 3 for w in wins):
            raise ConfigError("wd_windows", self.wd_windows,
                              "(start, end, wd) triples: every window needs its decay value wd")
        object.__setattr__(self, "wd_windows", wins)
        try:
            object.__setattr__(self, "freeze", tuple((str(c), int(s)) for c, s in self.freeze))
        except (TypeError, ValueError):
            raise ConfigError("freeze", self.freeze, "(component, step) pairs, e.g. (('layer0', 5000),)") from None
        if self.task not in TASKS:
            raise ConfigError("task", self.task, "one of " + ", ".join(TASKS))
        make_task(self.task, self.task_seed, **self.task_options())   # validates the task's options
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
        if self.lr_schedule not in LR_SCHEDULES:
            raise ConfigError("lr_schedule", self.lr_schedule, "one of " + ", ".join(LR_SCHEDULES))
        lf = self.lr_final
        if isinstance(lf, bool) or not isinstance(lf, (int, float)) or not (0 <= lf <= self.lr) or (
                lf and self.lr_schedule != "cosine"):
            raise ConfigError("lr_final", lf, f"a learning rate in [0, lr = {self.lr:g}], with the cosine schedule"
                                              " (0 otherwise)")
        if self.clip is not None and (isinstance(self.clip, bool) or not isinstance(self.clip, (int, float))
                                      or not (math.isfinite(self.clip) and self.clip > 0)):
            raise ConfigError("clip", self.clip, "a gradient-norm bound > 0, or None")
        em = self.eval_max
        if em is not None and (isinstance(em, bool) or not isinstance(em, int) or em < 1):
            raise ConfigError("eval_max", em, "a positive number of examples per split, or None (all)")
        if self.device not in DEVICES:
            raise ConfigError("device", self.device, "one of " + ", ".join(DEVICES))
        if self.precision not in PRECISIONS:
            raise ConfigError("precision", self.precision, "one of " + ", ".join(PRECISIONS))
        self.schedule()  # validates the windows against the training length
        if self.decay_form not in DECAY_FORMS:
            raise ConfigError("decay_form", self.decay_form, "one of " + ", ".join(DECAY_FORMS))
        if self.decay_form == "adam_scaled" and self.optimizer != "adamw":
            raise ConfigError("decay_form", self.decay_form, "decoupled or l2 with the sgd optimizer (adam_scaled"
                                                             " divides by Adam's second moment)")
        if self.decay_set not in DECAY_SETS:
            raise ConfigError("decay_set", self.decay_set, "one of " + ", ".join(DECAY_SETS))
        fsm = self.freeze_second_moment
        if fsm is not None and (isinstance(fsm, bool) or not isinstance(fsm, int) or not 1 <= fsm <= self.steps
                                or self.optimizer != "adamw"):
            raise ConfigError("freeze_second_moment", fsm, f"a step in [1, {self.steps}] with the adamw optimizer,"
                                                          " or None")
        if not isinstance(self.amsgrad, bool) or (self.amsgrad and (self.optimizer != "adamw" or fsm is not None)):
            raise ConfigError("amsgrad", self.amsgrad, "true or false; true needs the adamw optimizer and no"
                                                       " freeze_second_moment")
        if not self.schedule().windows:  # without decay the reading is moot: one run for all readings
            for k in ("decay_form", "decay_set"):
                object.__setattr__(self, k, ADDED_DEFAULTS[k])
        if self.freeze_optimizer not in FREEZE_OPTIMIZER:
            raise ConfigError("freeze_optimizer", self.freeze_optimizer, "one of " + ", ".join(FREEZE_OPTIMIZER))
        try:
            object.__setattr__(self, "checkpoints", tuple(sorted({int(s) for s in self.checkpoints})))
        except (TypeError, ValueError):
            raise ConfigError("checkpoints", self.checkpoints, "steps, e.g. (500, 1000)") from None
        if any(not 1 <= s <= self.steps for s in self.checkpoints):
            raise ConfigError("checkpoints", list(self.checkpoints), f"steps in [1, {self.steps}]")
        if self.branch is not None:
            self.branch_point()
        for c, s in self.freeze:
            Freeze(c, s)
            if not (0 <= s <= self.steps):
                raise ConfigError("freeze", f"{c}@{s}", f"a step in [0, {self.steps}]")

    def branch_point(self) -> tuple[str, int]:
        """(source run id, step) of `branch`."""
        try:
            rid, step = str(self.branch).split("@")
            step = int(step)
        except ValueError:
            raise ConfigError("branch", self.branch, "RUN_ID@STEP, a stored run and one of its checkpoints") from None
        if not (len(rid) == 16 and all(ch in "0123456789abcdef" for ch in rid)) or not 1 <= step < self.steps:
            raise ConfigError("branch", self.branch, f"RUN_ID@STEP: a 16-hex-digit run id, a step in [1, {self.steps})")
        return rid, step

    def task_options(self) -> dict:
        return {k: getattr(self, k) for k in TASK_OPTIONS}

    def autocast(self):
        """The context the forward and backward passes run in: bf16 autocast, or nothing."""
        import contextlib

        import torch
        if self.precision == "bf16":
            return torch.autocast(device_type=self.device, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def lr_at(self, step: int) -> float:
        """The learning rate of step `step` (0-based)."""
        if self.lr_schedule == "cosine":
            return self.lr_final + (self.lr - self.lr_final) * 0.5 * (1 + math.cos(math.pi * step / self.steps))
        return self.lr

    def schedule(self) -> Schedule:
        return Schedule(self.steps, self.wd_windows)

    def freezes(self) -> list[Freeze]:
        return [Freeze(c, s) for c, s in self.freeze]

    def resolved(self) -> dict:
        """Plain JSON-able dict of every field (the run's identity), with the format version."""
        d = asdict(self)
        d["betas"], d["wd_windows"] = list(self.betas), [list(w) for w in self.wd_windows]
        d["freeze"] = [list(f) for f in self.freeze]
        d["checkpoints"] = list(self.checkpoints)
        d["model"] = self.model.to_dict()
        d["config_version"] = CONFIG_VERSION
        return d

    def identity(self) -> dict:
        """The resolved config without added fields at their pre-existing defaults (hashed)."""
        d = self.resolved()
        for k, v in ADDED_DEFAULTS.items():
            if d[k] == v:
                del d[k]
        for k, v in ADDED_MODEL_DEFAULTS.items():
            if d["model"][k] == v:
                del d["model"][k]
        return d

    def run_id(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names - {"config_version"}
        if unknown:
            raise ConfigError("config", sorted(unknown), "only TrainConfig fields: " + ", ".join(sorted(names)))
        return cls(**{k: (tuple(tuple(x) if isinstance(x, list) else x for x in v) if isinstance(v, list) else v)
                      for k, v in d.items() if k in names})

    @classmethod
    def from_flat(cls, flat: dict) -> "TrainConfig":
        """One config from flat keys, as sweep specs and command lines write them (`FLAT_KEYS`):
        TrainConfig fields, ModelConfig fields (d, heads, layers, init, gamma, ...) and the decay
        and freeze helpers: wd (the decay value: constant, or inside the window(s)), wd_window
        ("START:END" or a list), wd_window_start with wd_width (one window), budget_placement with
        budget and width (one budget-matched window, lambda = budget / width), freeze
        ("COMPONENT@STEP" or a list). Unknown keys and bad values name the field."""
        unknown = sorted(set(flat) - set(FLAT_KEYS))
        if unknown:
            raise ConfigError(unknown[0], flat[unknown[0]], "a config key: " + ", ".join(FLAT_KEYS))
        steps = flat.get("steps", cls.steps)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigError("steps", steps, "a positive integer number of training steps")
        model = ModelConfig(**{k: flat[k] for k in MODEL_KEYS if k in flat})
        fr = flat.get("freeze") or []
        fr = [fr] if isinstance(fr, str) else fr
        if not isinstance(fr, (list, tuple)) or not all(isinstance(f, str) for f in fr):
            raise ConfigError("freeze", flat.get("freeze"), "COMPONENT@STEP or a list of them, e.g. layer0@5000")
        return cls(**{k: flat[k] for k in TRAIN_KEYS if k in flat}, model=model,
                   wd_windows=_flat_windows(flat, steps),
                   freeze=tuple((f.component, f.step) for f in map(Freeze.parse, fr)))

    def with_model(self, **changes) -> "TrainConfig":
        """A copy with architecture/init fields changed (d, heads, layers, init, gamma, ...)."""
        return replace(self, model=replace(self.model, **changes))


# The flat keys of `TrainConfig.from_flat`: its fields (model, windows and freezes spelled out),
# the model's, and the decay helpers.
TRAIN_KEYS = tuple(f.name for f in fields(TrainConfig) if f.name not in ("model", "wd_windows", "freeze"))
MODEL_KEYS = tuple(f.name for f in fields(ModelConfig))
DECAY_KEYS = ("wd", "wd_window", "wd_window_start", "wd_width", "budget_placement", "budget", "width")
FLAT_KEYS = TRAIN_KEYS + MODEL_KEYS + DECAY_KEYS + ("freeze",)


def _flat_number(flat: dict, key: str, default=None):
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


def _flat_windows(flat: dict, steps: int) -> tuple:
    wd = _flat_number(flat, "wd")
    if wd is not None and not (wd >= 0 and wd != float("inf")):
        raise ConfigError("wd", wd, "a weight decay >= 0")
    has_window = bool(flat.get("wd_window")) or flat.get("wd_window_start") is not None
    if has_window and wd is None:
        raise ConfigError("wd", None, "a decay value for the window (a window without wd would silently"
                                      " be no decay; give wd=0 for that on purpose)")
    if flat.get("budget_placement") is None:
        given = [k for k in ("budget", "width") if flat.get(k) is not None]
        if given:       # without a placement they would be ignored: the run would train without that decay
            raise ConfigError("budget_placement", None, f"one of {', '.join(PLACEMENTS)} with {' and '.join(given)}"
                                                        " (the window a decay budget is spent in)")
    else:
        if flat.get("budget") is None or flat.get("width") is None:
            raise ConfigError("budget", flat.get("budget"), "budget and width with budget_placement")
        budget = _flat_number(flat, "budget")
        if not (math.isfinite(budget) and budget > 0):
            raise ConfigError("budget", budget, "a finite decay budget lambda * width > 0")
        beside = [k for k in ("wd", "wd_window", "wd_window_start") if flat.get(k) not in (None, "", [], ())]
        if beside:      # the budget sets the window and its lambda: these would be ignored
            raise ConfigError(beside[0], flat[beside[0]], "nothing beside budget_placement (it sets the window"
                                                          " and its lambda = budget / width)")
        return Schedule.budget_matched(flat["budget_placement"], budget, _flat_number(flat, "width"), steps).windows
    wd = wd or 0.0
    if flat.get("wd_window_start") is not None:
        if flat.get("wd_width") is None:
            raise ConfigError("wd_width", None, "a window width in steps with wd_window_start")
        s = _flat_number(flat, "wd_window_start")
        return Schedule(steps, ((s, s + _flat_number(flat, "wd_width"), wd),)).windows
    wins = flat.get("wd_window")
    if wins:
        if not isinstance(wins, (str, list, tuple)) or not all(isinstance(w, str) for w in
                                                                 ([wins] if isinstance(wins, str) else wins)):
            raise ConfigError("wd_window", wins, "'START:END' or a list of them, e.g. '5000:10000'")
        wins = [wins] if isinstance(wins, str) else list(wins)
        return Schedule(steps, tuple((a, b, wd) for a, b in map(parse_window, wins))).windows
    return Schedule.constant(wd, steps).windows if wd > 0 else ()
