"""Train many small models as one: the members of a pack stacked along a leading axis.

A pack is a list of TrainConfigs that differ only in what `PACK_FREE` names (seeds, task
instance, init scale, learning rate, decay schedule and reading, freezes), on a task of
`PACK_TASKS` (the anchor tasks, modular arithmetic, Alchemy). `train_pack` trains
them in one process as stacked weights: one forward and backward for all members
(`models/stacked.py`: the model of `models/transformer.py` with a batched matmul over members
for every linear map), one optimizer step over the stacked
tensors (AdamW and SGD act elementwise, so each member's slice steps as it would alone), decay
as per-member factors. Members with different learning rates take torch's step at lr 1, and
each member's slice is then moved lr times as far (the optimizers' state does not depend on
lr). A member whose freezes rebuild the optimizer gets its moments zeroed at each freeze and
its Adam update redone with its own step count. Gradient clipping is per member (its own
norm over its unfrozen parameters), and dropout draws each member's masks from the random
state it would train from alone (`models/stacked.py`). Each member comes back as its own Run, with
the run id, metrics and status it would have had alone (float-level differences: batched
matmuls round differently). Like one run, a pack writes a resume state and continues from it
after a kill.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from critwin.empirical.config import TrainConfig
from critwin.empirical.loop import Member, drive
from critwin.empirical.packing import (  # noqa: F401  (imported from here by the sweep, tests and benchmarks)
    PACK_FREE,
    PACK_TASKS,
    default_pack_size,
    on_engine,
    pack_key,
    pack_size,
    packs,
)
from critwin.empirical.steppers.pack import PackStepper
from critwin.empirical.store import Run
from critwin.empirical.training_parts import _device, finish_run, initial_model

from critwin.errors import ConfigError


def build_pack(cfgs: list[TrainConfig]) -> "PackStepper":
    """The stepper of one pack (equal `pack_key`) at step 0: every member's seeded initialisation
    stacked, its data (made once per task instance), batch order and dropout's random state."""
    keys = {pack_key(c) for c in cfgs}
    if None in keys or len(keys) > 1:
        raise ConfigError("configs", [c.run_id() for c in cfgs],
                          "configs that differ only in " + ", ".join(PACK_FREE) + " and gamma (see pack_key)")
    device = _device(cfgs[0].device)
    built, rng, datas = [], [], {}
    for c in cfgs:          # members of one task instance share its data (made once)
        key = json.dumps([c.task_seed, c.task_options()], sort_keys=True)
        built.append(initial_model(c, datas.get(key)))
        datas[key] = built[-1][1]
        rng.append(torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state())
    members = [Member.of(c, data) for c, (_, data) in zip(cfgs, built)]
    shapes = {tuple((n, *sp.inputs.shape) for n, sp in m.scored.items()) + (m.data.splits["train"].inputs.shape,)
              for m in members}
    if len(shapes) > 1:
        raise ConfigError("task_seed", [c.task_seed for c in cfgs], "task instances whose splits have one shape")
    for m in members:
        for name, sp in {**m.scored, "train": m.data.splits["train"]}.items():
            lengths = sp.extra.get("lengths")
            if lengths is not None and (np.asarray(lengths) != sp.inputs.shape[1]).any():
                raise ConfigError("task", m.cfg.task, f"a task whose {name} rows fill their width (the stacked"
                                                      " model reads the last position)")
    return PackStepper(members, [b[0] for b in built], device, rng)


def train_pack(cfgs: list[TrainConfig], progress: bool = True, on_steps=None, resume: Path | None = None,
               save_every: float | None = None) -> list[Run]:
    """Train the configs of one pack (equal `pack_key`) as one stacked model; one Run each.
    With `resume` (a file path) the pack writes its state there as `train` does for one run,
    and a pack killed midway continues from it, with the numbers of an uninterrupted pack.
    The loop is `loop.drive`'s; the step is PackStepper's."""
    if not cfgs:
        return []
    stepper = build_pack(cfgs)
    members = stepper.members
    out = drive(stepper, members, None, resume, save_every, progress, on_steps)
    E = len(members)
    n_par = sum(p[0].numel() for p in stepper.params.values())
    extra = {"pack": {"members": E, "wall_seconds": out.wall}, **({"resumed_from_step": out.first} if out.resumed else {})}
    return [finish_run(m.cfg, m.data, m.rows, m.last, m.status, m.error, out.wall / E, n_par, extra=extra)
            for m in members]


__all__ = ["PACK_FREE", "PACK_TASKS", "PackStepper", "build_pack", "default_pack_size", "on_engine", "pack_key",
           "pack_size", "packs", "train_pack"]
