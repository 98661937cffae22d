"""Which configs train together as one pack (`engine.train_pack`): those equal in every field but
`PACK_FREE` and gamma, on a task of `PACK_TASKS`, at most a pack size of them."""
from __future__ import annotations

import json

from critwin.empirical.config import TrainConfig

from critwin.errors import ConfigError

PACK_FREE = ("seed", "task_seed", "wd_windows", "decay_form", "decay_set", "lr", "lr_final", "freeze")  # and gamma
PACK_TASKS = ("anchor_permutation", "anchor_shift", "modarith",                # fixed-shape classification
              "alchemy_withheld", "alchemy_composition", "alchemy_decomposition")


def pack_key(cfg: TrainConfig) -> str | None:
    """Configs with equal keys can train as one pack; None: this one trains alone (branches,
    checkpoints, the second-moment interventions (held v, adam_scaled decay), bf16 autocast, or
    a task whose examples vary in shape). The key is every field but `PACK_FREE` and gamma: one
    architecture, optimizer, batch size, step count, clipping, dropout, evaluation rhythm and
    freeze_optimizer, and one task with its options (Alchemy: variant, hops, chemistries, input
    format, query end, held-out rule, ablation), so every member's batches and evaluation splits
    have one shape; the task instance (task_seed) may differ (`train_pack` checks the shapes)."""
    if (cfg.task not in PACK_TASKS or cfg.branch or cfg.checkpoints
            or cfg.freeze_second_moment is not None or cfg.decay_form == "adam_scaled"
            or cfg.precision != "fp32"):
        return None
    d = cfg.resolved()
    for k in PACK_FREE:
        del d[k]
    del d["model"]["gamma"]
    return json.dumps(d, sort_keys=True)


def packs(configs, size: int | None = None, workers: int = 1) -> list[list[TrainConfig]]:
    """The configs grouped into packs of compatible members (equal `pack_key`), in their order
    of first appearance: at most `size` members each (None: `default_pack_size` of their
    device), and split evenly into a multiple of `workers` packs where there are enough members
    (`pack_count`), so every worker gets one and none trains a last round alone. A config that
    cannot be packed is a pack of one."""
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise ConfigError("pack", size, "a positive number of members per pack, or None (the device's default)")
    groups, alone = {}, []
    for i, c in enumerate(configs):
        key = pack_key(c)
        if key is None:
            alone.append((i, [c]))
        else:
            groups.setdefault(key, []).append((i, c))
    out = list(alone)
    for members in groups.values():
        cap = pack_size(size, members[0][1].device)
        k = pack_count(len(members), cap, workers)
        for j in range(k):
            part = members[j * len(members) // k:(j + 1) * len(members) // k]
            out.append((part[0][0], [c for _, c in part]))
    return [p for _, p in sorted(out, key=lambda t: t[0])]


def pack_count(n: int, cap: int, workers: int = 1) -> int:
    """How many packs `n` compatible members make: at most `cap` members each, and a multiple of
    `workers` where there are that many members. 54 runs in packs of at most 8 on 2 workers make
    8 packs, 4 full rounds, not 7 packs whose last round leaves a worker idle."""
    k = max(-(-n // cap), min(workers, n))
    return min(n, -(-k // workers) * workers)


def default_pack_size(device: str) -> int:
    """Members per pack when a sweep is not told: 64 on a GPU (one small model leaves it idle),
    8 on a CPU (about 2x the plain loop per member at 4-8 members, benchmarks/bench_engine.py)."""
    return 64 if device == "cuda" else 8


def pack_size(size: int | None, device: str) -> int:
    """Members per pack: `size` as asked, None meaning the device's default."""
    return size or default_pack_size(device)


def on_engine(cfg: TrainConfig, size: int | None) -> bool:
    """Whether a sweep trains `cfg` on the engine: it can be packed and packs are on (size, or
    its device's default, above 1). Then it does even in a pack of one, so a run's numbers do
    not depend on how many other configs shared its sweep."""
    return pack_key(cfg) is not None and pack_size(size, cfg.device) > 1


__all__ = ["PACK_FREE", "PACK_TASKS", "default_pack_size", "on_engine", "pack_key", "pack_size", "packs"]
