"""One model trained: one TrainConfig in, one Run (config, tidy metrics, summary, env) out.

`train` drives `ModelStepper` (one nn.Module, a torch optimizer) with the loop of `loop.py`;
the helpers here (model, optimizer, loss, logging, the Run and its training state) serve the
pack engine too."""
from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F
from critwin.empirical.config import TrainConfig, check_branch
from critwin.empirical.environment import environment
from critwin.empirical.interventions import (
    decay_after_step,
    decay_before_step,
    frozen_parameters,
)
from critwin.empirical.interventions.second_moment import AdamFrozenSecondMoment
from critwin.empirical.loop import Member, Paused, drive
from critwin.empirical.metrics import (
    decay_mechanism,
    evaluate_split,
    split_metrics,
    squared_grad_norm,
    weight_metrics,
)
from critwin.empirical.models import Transformer
from critwin.empirical.stepper import Stepper
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
        out = drive(ModelStepper(member, model, device), [member], start, resume, save_every, progress, on_steps,
                    until, stop_when)
    except Paused as p:     # what was trained so far, as a run of its own status (a store keeps it)
        p.run = finish_run(cfg, data, member.rows, member.last, "paused", None, p.wall, n_parameters,
                           extra={"steps_done": p.step})
        raise
    return finish_run(cfg, data, member.rows, member.last, member.status, member.error, out.wall,
                      n_parameters, out.checkpoints,
                      {"resumed_from_step": out.first} if out.resumed else None)


class ModelStepper(Stepper):
    """The step of one model with its torch optimizer, for `loop.drive`: freezes (a frozen
    parameter gets no gradient, so no update and no moment update; 'rebuild' starts a fresh
    optimizer over the rest), clipping, the lr schedule's value, decay through interventions/."""

    def __init__(self, member: Member, model, device):
        cfg = member.cfg
        self.member, self.cfg, self.model, self.device = member, cfg, model, device
        self.identity, self.label = cfg, f"{cfg.task} seed {cfg.seed}"
        self.opt = build_optimizer(cfg, model.parameters())
        self.comps = model.components()
        self.freezes = cfg.freezes()
        for f in self.freezes:
            f.validate(self.comps, cfg.steps)
        self.decayed = model.decayed_parameters(cfg.decay_set)
        split = member.data.splits["train"]
        self.x = torch.as_tensor(split.inputs, device=device)
        self.y = torch.as_tensor(split.targets, device=device)
        lengths = split.extra.get("lengths")
        self.lengths = None if lengths is None else torch.as_tensor(lengths, device=device)
        self.loss, self.lr, self.lam, self.ce_grad_sq = None, cfg.lr, 0.0, 0.0

    def forward(self, batches: list) -> list[bool]:
        """The batch's loss (kept for `update`); whether it is finite."""
        idx = batches[0].to(self.device)
        with self.cfg.autocast():
            self.loss = batch_loss(self.model, self.x[idx], self.y[idx],
                                   None if self.lengths is None else self.lengths[idx])
        return [math.isfinite(self.loss.item())]

    def update(self, step: int, lrs: list, lams: list, evaluate: bool) -> None:
        """Backward, freezes, clipping, the optimizer step at lrs[0], decay lams[0] in the config's reading."""
        cfg, model = self.cfg, self.model
        self.opt.zero_grad(set_to_none=True)
        self.loss.backward()
        frozen = frozen_parameters(self.freezes, self.comps, step)
        for p in frozen:
            p.grad = None   # the optimizer skips it: no update, no moment update
        if cfg.freeze_optimizer == "rebuild" and any(f.step == step for f in self.freezes):
            self.opt = optimizer_over_trainable(cfg, model, frozen)    # the paper's protocol: new moments
        if cfg.clip is not None:
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None], cfg.clip)
        self.lr, self.lam = lrs[0], lams[0]
        if cfg.lr_schedule != "constant":
            for g in self.opt.param_groups:
                g["lr"] = self.lr
        self.ce_grad_sq = squared_grad_norm(self.decayed) if evaluate else 0.0
        decay_before_step(cfg.decay_form, self.decayed, self.lam, skip=frozen)
        self.opt.step()
        decay_after_step(cfg.decay_form, self.decayed, self.opt, self.lr, self.lam, skip=frozen)

    def evaluate(self, step: int) -> None:
        """Log the splits, the weight metrics and (after step 0) the decay's share of the update."""
        m, cfg = self.member, self.cfg
        mech = None if step == 0 else decay_mechanism(self.opt, self.decayed, self.lr, self.lam, cfg.decay_form,
                                                      self.ce_grad_sq)
        m.last = log_metrics(self.model, m.scored, step, self.device, m.rows, mech, autocast=cfg.autocast)

    def state(self, step: int, wall: float = 0.0, checkpoints: dict | None = None) -> bytes:
        m = self.member
        return training_state(self.cfg, step, self.model, self.opt, m.order.gen, m.order.perm, m.order.ptr, m.rows,
                              m.last, wall, checkpoints)

    def restore(self, state: dict, resumed: bool) -> None:
        """Continue from `state` (training_state's): this run's resume state, or (resumed False)
        the checkpoint of the run it branches from, which must have trained the same way."""
        cfg, m = self.cfg, self.member
        first = state["step"]
        if not resumed:
            check_branch(TrainConfig.from_dict(state["config"]), cfg, first)
        self.model.load_state_dict(state["model"])
        if cfg.freeze_optimizer == "rebuild" and any(f.step < first for f in self.freezes):
            self.opt = optimizer_over_trainable(cfg, self.model, frozen_parameters(self.freezes, self.comps, first - 1))
        self.opt.load_state_dict(state["optimizer"])
        m.order.restore(state["generator"], state["perm"], state["ptr"])
        torch.set_rng_state(state["torch_rng"])
        m.rows, m.last = list(state["rows"]), state["last"]


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
