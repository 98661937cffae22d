"""The parts one training is made of, shared by both steppers and `train` / `train_pack`: the model
at its seeded initialisation and its task data, the optimizer, the loss of a batch, the logged
metric rows, the training state a run continues from, and the Run a finished training becomes."""
from __future__ import annotations

import contextlib
import io

import pandas as pd
import torch
import torch.nn.functional as F
from critwin.empirical.config import TrainConfig
from critwin.empirical.environment import environment
from critwin.empirical.interventions.second_moment import AdamFrozenSecondMoment
from critwin.empirical.metrics import (
    evaluate_split,
    split_metrics,
    weight_metrics,
)
from critwin.empirical.models import Transformer
from critwin.empirical.store import Run
from critwin.empirical.tasks import make_task
from critwin.empirical.tasks.sequence import (
    IGNORE,
    is_sequence_task,
    language_model_data,
)

from critwin.errors import ConfigError

REACH_LEVEL = 0.95    # summary '<split>_reach_step': first evaluation with accuracy >= this (grokking step)


def censored_reach(value, steps: int) -> float:
    """A stored reach step as a number: a run that never reached the level counts as its
    last step (right-censored), so averages over runs are not biased toward the lucky ones."""
    return float(steps if value is None or value != value else value)


def build_model(cfg: TrainConfig, vocab_size: int, seq_len: int, n_out: int | None = None) -> Transformer:
    return Transformer(cfg.model, vocab_size, seq_len, n_out)


def build_optimizer(cfg: TrainConfig, params):
    if cfg.optimizer == "adamw" and cfg.freeze_second_moment is not None:
        return AdamFrozenSecondMoment(params, lr=cfg.lr, betas=cfg.betas, freeze_from=cfg.freeze_second_moment)
    if cfg.optimizer == "adamw":    # fused: one kernel over every tensor (3x torch's per-tensor loop on CPU)
        return torch.optim.AdamW(params, lr=cfg.lr, betas=cfg.betas, weight_decay=0.0, amsgrad=cfg.amsgrad,
                                 fused=True)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, foreach=True)


def optimizer_over_trainable(cfg: TrainConfig, model, frozen) -> torch.optim.Optimizer:
    """A fresh optimizer over the parameters not in `frozen` (freeze_optimizer='rebuild')."""
    ids = {id(p) for p in frozen}
    return build_optimizer(cfg, [p for p in model.parameters() if id(p) not in ids])


def _device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device", name, "cpu, or cuda on a machine with a CUDA GPU (none found)")
    return torch.device(name)


def log_metrics(model, splits: dict, step: int, device, rows: list, mechanism: dict | None = None,
                scores: dict | None = None, weights: dict | None = None, autocast=None) -> dict:
    """Evaluate every split (or take `scores`, {split: evaluate_split's dict}, computed
    elsewhere), the weight metrics and per-group norms (or take `weights`, weight_metrics'
    dict), and (when given) the decay's share of the update (split 'optim'); append tidy
    rows; return a flat dict. `autocast`: the context the splits are scored in (bf16 runs)."""
    model.eval()
    flat = {}
    for name, split in splits.items():
        if scores is not None:
            got = scores[name]
        else:
            with (autocast() if autocast is not None else contextlib.nullcontext()):   # the weight metrics stay fp32
                got = evaluate_split(model, split, device)
        for metric, value in got.items():
            rows.append((step, name, metric, value))
            flat[f"{name}_{metric}"] = value
    for metric, value in (weights if weights is not None else weight_metrics(model)).items():
        rows.append((step, "model", metric, value))
        flat[metric] = value
    for metric, value in (mechanism or {}).items():
        rows.append((step, "optim", metric, value))
        flat[metric] = value
    model.train()
    return flat


def batch_loss(model, xb, yb, lb=None):
    """Cross-entropy of the last real position's prediction, or of every next-token prediction
    where targets are sequences (a language-model task; IGNORE positions left out)."""
    if yb.ndim == 2:
        logits = model(xb, all_positions=True)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1), ignore_index=IGNORE)
    return F.cross_entropy(model(xb, lb), yb)


def task_data(cfg: TrainConfig):
    """The config's task data (its task, instance and options), as the model sees it."""
    data = make_task(cfg.task, cfg.task_seed, **cfg.task_options()).generate()
    return language_model_data(data) if is_sequence_task(data) else data


def logged_curves(cfg: TrainConfig) -> dict:
    """{split: the metric names its evaluations log} of `cfg`'s runs, known before any training."""
    return {name: split_metrics(split) for name, split in task_data(cfg).splits.items()}


def initial_model(cfg: TrainConfig, data=None):
    """(model at its seeded initialisation, task data): exactly what `train` starts from.
    `data`: the config's `task_data`, made already (members of a pack that share a task
    instance share it; generating it draws nothing from torch's random state)."""
    torch.manual_seed(cfg.seed)
    data = task_data(cfg) if data is None else data
    return build_model(cfg, data.vocab_size, data.seq_len, data.info.get("n_classes")), data


def finish_run(cfg: TrainConfig, data, rows: list, last: dict, status: str, error: str | None, wall: float,
               n_parameters: int, checkpoints: dict | None = None, extra: dict | None = None) -> Run:
    """The Run of a finished training: tidy metrics, summary (status, reach steps, timing,
    final metrics) and environment."""
    metrics = pd.DataFrame(rows, columns=["step", "split", "metric", "value"])
    metrics["step"] = metrics["step"].astype("int64")
    reach = {}
    for split in data.splits:
        if split != "train":
            acc = metrics[(metrics.split == split) & (metrics.metric == "acc")].sort_values("step")
            hit = acc[acc.value >= REACH_LEVEL]
            reach[f"{split}_reach_step"] = int(hit.step.iloc[0]) if len(hit) else None   # None: censored
    summary = {"status": status, "error": error, "steps_done": int(metrics["step"].max()), **reach,
               "wall_seconds": wall, "seconds_per_step": wall / max(1, int(metrics["step"].max())),
               "final": last, "n_parameters": n_parameters,
               "task_info": {k: v for k, v in data.info.items() if k in ("chance", "id_modulus")}, **(extra or {})}
    return Run(cfg.resolved(), metrics, summary, environment(cfg.device), checkpoints or {})


def training_state(cfg: TrainConfig, step: int, model, opt, gen, perm, ptr: int, rows: list, last: dict,
                   wall: float = 0.0, checkpoints: dict | None = None) -> bytes:
    """Everything a branch (or a resumed run) needs to continue exactly from after `step`,
    serialized (torch.save); `wall`: the training seconds spent to get there; `checkpoints`:
    those a resumed run has already taken."""
    buf = io.BytesIO()
    torch.save({"format": 1, "step": step, "wall": wall, "checkpoints": dict(checkpoints or {}),
                "config": cfg.resolved(), "model": model.state_dict(), "optimizer": opt.state_dict(),
                "generator": gen.get_state(), "torch_rng": torch.get_rng_state(),
                "perm": perm.cpu(), "ptr": ptr, "rows": list(rows), "last": dict(last)}, buf)
    return buf.getvalue()


__all__ = ["REACH_LEVEL", "batch_loss", "build_model", "build_optimizer", "censored_reach", "finish_run",
           "initial_model", "log_metrics", "logged_curves", "optimizer_over_trainable", "task_data",
           "training_state"]
