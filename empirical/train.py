"""Training: configs in, one Run (config, tidy metrics, summary, env) each out, for every task.

The loop and the Runs it ends in are `loop.py`'s (`loop.train_members`, the one way a stepper's members
are trained); this module only builds the stepper. `train` gives it one model
(`steppers.model.ModelStepper`: one nn.Module, a torch optimizer); `train_pack` a pack of them
stacked as one (`steppers.pack.PackStepper`, see `engine.py`). The parts both steppers are made of
(model, optimizer, loss, logging, the Run and its training state) are `training_parts.py`'s."""
from __future__ import annotations

from pathlib import Path

from critwin.empirical.config import TrainConfig
from critwin.empirical.loop import Member, train_members
from critwin.empirical.steppers.model import ModelStepper
from critwin.empirical.steppers.pack import build_pack
from critwin.empirical.store import Run
from critwin.empirical.training_parts import (  # noqa: F401  (imported from here by tests, benchmarks, checks)
    _device,
    batch_loss,
    build_model,
    build_optimizer,
    censored_reach,
    finish_run,
    initial_model,
    log_metrics,
)

from critwin.errors import ConfigError


def train(cfg: TrainConfig, progress: bool = True, on_steps=None, start: dict | None = None,
          resume: Path | None = None, save_every: float | None = None, until: int | None = None,
          stop_when=None) -> Run:
    """Train one model. Deterministic on CPU for a given config (seeded init and batches).
    on_steps(n), if given, is called at every evaluation with the steps done since the last.
    A config with `branch` starts from `start`, the source run's checkpoint (RunStore.checkpoint):
    the result equals training the same config from step 0. With `resume` (a file path), the
    training state is written there at the first evaluation `save_every` seconds after the last
    write (default: $CRITWIN_RESUME_SECONDS, else 300), and a run killed midway continues from
    that file on its next start, with the numbers of an uninterrupted run (the caller deletes
    the file once the run is stored). `until`: pause at that step with the resume state written
    (`loop.Paused`, carrying the Run so far with status 'paused'), as at the first evaluation where
    `stop_when(rows)` holds (say, a stage reached). The loop is `loop.drive`'s; the step is ModelStepper's."""
    device = _device(cfg.device)
    if (cfg.branch is None) != (start is None):
        raise ConfigError("branch", cfg.branch, "a config with branch, trained from its checkpoint (start)")
    model, data = initial_model(cfg)
    model = model.to(device)
    member = Member.of(cfg, data)
    n_parameters = sum(p.numel() for p in model.parameters())
    return train_members(ModelStepper(member, model, device), [member], n_parameters, start=start, resume=resume,
                         save_every=save_every, progress=progress, on_steps=on_steps, until=until,
                         stop_when=stop_when)[0]


def train_pack(cfgs: list[TrainConfig], progress: bool = True, on_steps=None, resume: Path | None = None,
               save_every: float | None = None) -> list[Run]:
    """Train the configs of one pack (equal `pack_key`) as one stacked model; one Run each.
    With `resume` (a file path) the pack writes its state there as `train` does for one run,
    and a pack killed midway continues from it, with the numbers of an uninterrupted pack."""
    if not cfgs:
        return []
    stepper = build_pack(cfgs)
    n_parameters = sum(p[0].numel() for p in stepper.params.values())
    return train_members(stepper, stepper.members, n_parameters, resume=resume, save_every=save_every,
                         progress=progress, on_steps=on_steps, packed=True)


__all__ = ["ModelStepper", "batch_loss", "build_model", "build_optimizer", "censored_reach", "initial_model",
           "log_metrics", "train", "train_members", "train_pack"]
