"""Train many small models as one: the members of a pack stacked along a leading axis.

A pack is a list of TrainConfigs that differ only in what `PACK_FREE` names (seeds, task
instance, init scale, learning rate, decay schedule and reading, freezes), on a task of
`PACK_TASKS` (the anchor tasks, modular arithmetic, Alchemy). `train_pack` (in `train.py`, through
the same `loop.train_members` as one model) trains them in one process as stacked weights:
one forward and backward for all members (`models/stacked.py`: the model of
`models/transformer.py` with a batched matmul over members for every linear map), one optimizer
step over the stacked
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

This module gathers the pack engine's names where callers import them: what packs (`packing.py`),
the pack's stepper and its construction (`steppers/pack.py`), and `train_pack` (`train.py`).
"""
from __future__ import annotations

from critwin.empirical.packing import (  # noqa: F401  (imported from here by the sweep, tests and benchmarks)
    PACK_FREE,
    PACK_TASKS,
    default_pack_size,
    on_engine,
    pack_count,
    pack_key,
    pack_size,
    packs,
)
from critwin.empirical.steppers.pack import PackStepper, build_pack
from critwin.empirical.train import train_pack

__all__ = ["PACK_FREE", "PACK_TASKS", "PackStepper", "build_pack", "default_pack_size", "on_engine", "pack_count",
           "pack_key", "pack_size", "packs", "train_pack"]
