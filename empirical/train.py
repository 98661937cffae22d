"""One model trained: one TrainConfig in, one Run (config, tidy metrics, summary, env) out.

`train` drives `steppers.model.ModelStepper` (one nn.Module, a torch optimizer) with the loop of
`loop.py`; the parts it is made of (model, optimizer, loss, logging, the Run and its training
state) are `training_parts.py`'s, shared with the pack engine."""
from __future__ import annotations

from pathlib import Path

from critwin.empirical.config import TrainConfig
from critwin.empirical.loop import Member, Paused, drive
from critwin.empirical.steppers.model import ModelStepper
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
    try:
        out = drive(ModelStepper(member, model, device), [member], start, resume, save_every,
                    progress, on_steps, until, stop_when)
    except Paused as p:     # what was trained so far, as a run of its own status (a store keeps it)
        p.run = finish_run(cfg, data, member.rows, member.last, "paused", None, p.wall, n_parameters,
                           extra={"steps_done": p.step})
        raise
    return finish_run(cfg, data, member.rows, member.last, member.status, member.error, out.wall,
                      n_parameters, out.checkpoints,
                      {"resumed_from_step": out.first} if out.resumed else None)


__all__ = ["ModelStepper", "batch_loss", "build_model", "build_optimizer", "censored_reach", "initial_model",
           "log_metrics", "train"]
