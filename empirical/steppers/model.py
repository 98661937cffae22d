"""The step of one model (one nn.Module, a torch optimizer), for `loop.drive`: `train`'s stepper."""
from __future__ import annotations

import math

import torch
from critwin.empirical.config import TrainConfig, check_branch
from critwin.empirical.interventions import (
    decay_after_step,
    decay_before_step,
    frozen_parameters,
)
from critwin.empirical.loop import Member
from critwin.empirical.metrics import decay_mechanism, squared_grad_norm
from critwin.empirical.stepper import Stepper
from critwin.empirical.training_parts import (
    batch_loss,
    build_optimizer,
    log_metrics,
    optimizer_over_trainable,
    training_state,
)


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


__all__ = ["ModelStepper"]
