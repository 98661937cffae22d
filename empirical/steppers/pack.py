"""The step of a pack (`engine.train_pack`): its members' weights stacked along a leading axis, one
forward and backward and one optimizer step for all, each member's slice moved as it would move alone."""
from __future__ import annotations

import io
import json
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from critwin.empirical.adam import adam_move
from critwin.empirical.config import TrainConfig
from critwin.empirical.interventions.stacked_decay import (
    add_stacked_l2_grad,
    apply_stacked_decay,
    stacked_decay_masks,
)
from critwin.empirical.loop import Member
from critwin.empirical.metrics import (
    decay_mechanism,
    split_scores,
    stacked_weight_metrics,
)
from critwin.empirical.metrics.evaluate import EVAL_ATTENTION_BUDGET
from critwin.empirical.models.stacked import MemberDropout, stacked_logits
from critwin.empirical.packing import PACK_FREE, on_engine, pack_key
from critwin.empirical.stepper import Stepper
from critwin.empirical.training_parts import _device, build_optimizer, initial_model, log_metrics
from critwin.errors import ConfigError

EVAL_BATCH = 4096        # examples per stacked evaluation forward, all members together


def _stack(models, device) -> dict:
    names = [n for n, _ in models[0].named_parameters()]
    return {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]).to(device).requires_grad_()
            for n in names}


class PackStepper(Stepper):
    """The step of a pack stacked along a leading member axis, for `loop.drive`: one forward
    and backward for all members (`models/stacked.py`), one optimizer step over the stacked
    tensors, per-member learning rates, freezes (a frozen slice gets its weights and moments
    back after the step; 'rebuild' zeroes a member's moments and counts its own Adam steps)
    and decay through interventions/stacked_decay.py; per-member clipping and dropout.
    `rng`: each member's random state after its seeded initialisation (what dropout draws from)."""

    def __init__(self, members: list[Member], models: list, device, rng: list | None = None):
        self.members, self.device = members, device
        cfgs = [m.cfg for m in members]
        cfg0, E = cfgs[0], len(members)
        self.cfg0, self.identity, self.label = cfg0, cfgs, f"{cfg0.task} pack of {E}"
        self.params = _stack(models, device)     # before .to(): Module.to moves member 0 in place, and a stack
        self.template = template = models[0].to(device)     # needs every member on one device; the template
                                                            # materialises one member at a time for the metrics
        self.frozen_from = [_freezes(m.cfg, template) for m in members]   # name -> the step its first freeze starts
        self.rebuilds = [{f.step for f in m.cfg.freezes()} if m.cfg.freeze_optimizer == "rebuild" else set()
                         for m in members]                   # steps with a fresh optimizer
        self.own_step = [None] * E       # optimizer steps since the member's last rebuild (None: none yet)
        self.opt = build_optimizer(cfg0, list(self.params.values()))
        self.l2_on, self.dec_on = _decaying(members, "l2"), _decaying(members, "decoupled")
        self.l2_masks = stacked_decay_masks(template, [m.cfg.decay_set if on else None
                                                       for m, on in zip(members, self.l2_on)])
        self.dec_masks = stacked_decay_masks(template, [m.cfg.decay_set if on else None
                                                        for m, on in zip(members, self.dec_on)])
        splits = [m.data.splits["train"] for m in members]
        self.X = torch.stack([torch.as_tensor(sp.inputs, device=device) for sp in splits])
        self.Y = torch.stack([torch.as_tensor(sp.targets, device=device) for sp in splits])
        self.ar = torch.arange(E, device=device)[:, None]
        self.one_lr = len({(c.lr, c.lr_final) for c in cfgs}) == 1
        if not self.one_lr:
            for g in self.opt.param_groups:
                g["lr"] = 1.0
        self.evals = {name: (torch.stack([torch.as_tensor(m.scored[name].inputs, device=device) for m in members]),
                             torch.stack([torch.as_tensor(m.scored[name].targets, device=device) for m in members]))
                      for name in members[0].scored}
        self.losses, self.lrs, self.lams, self.ce_grad_sq = None, None, None, None
        p = cfg0.model.dropout
        self.drop = MemberDropout(p, list(rng), device) if p > 0 else None

    @classmethod
    def accepts(cls, cfg: TrainConfig, pack: int | None) -> bool:
        return on_engine(cfg, pack)

    def frozen(self, e: int, step: int) -> set:
        return {n for n, s in self.frozen_from[e].items() if step >= s}

    def forward(self, batches: list) -> list[bool]:
        """Every member's mean cross-entropy on its batch (kept for `update`); which are finite."""
        idx = torch.stack(batches).to(self.device)
        xb, yb = self.X[self.ar, idx], self.Y[self.ar, idx]
        logits = stacked_logits(self.cfg0.model, self.params, xb, self.drop)
        self.losses = F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="none").view(yb.shape).mean(1)
        return torch.isfinite(self.losses.detach()).tolist()

    def update(self, step: int, lrs: list, lams: list, evaluate: bool) -> None:
        """Backward for all; one optimizer step over the stacked tensors, each member's slice then
        moved at its own lr, redone with its own Adam step count, decayed, or held (frozen)."""
        params, opt, members = self.params, self.opt, self.members
        opt.zero_grad(set_to_none=True)
        self.losses.sum().backward()
        lrs, lams = np.array(lrs), np.array(lams)
        self.lrs, self.lams = lrs, lams
        if self.one_lr and self.cfg0.lr_schedule != "constant":
            for g in opt.param_groups:
                g["lr"] = lrs[0]
        frozen = [self.frozen(e, step) for e in range(len(members))]
        if self.cfg0.clip is not None:
            _clip(params, frozen, self.cfg0.clip)
        self.ce_grad_sq = _ce_grad_sq(members, params, self.template, frozen) if evaluate else None
        own = self._rebuild(step)
        held = _hold(params, opt, frozen)
        with torch.no_grad():
            add_stacked_l2_grad(params, lams * self.l2_on, self.l2_masks)
            before = {n: p.detach().clone() for n, p in params.items()} if (own or not self.one_lr) else None
            opt.step()
            if not self.one_lr:
                lr_t = torch.as_tensor(lrs, dtype=torch.float32, device=self.device)
                for n, p in params.items():
                    p.copy_(before[n] + lr_t.view(-1, *[1] * (p.dim() - 1)) * (p - before[n]))
            if own:
                _own_adam_step(params, opt, before, {e: self.own_step[e] for e in own}, lrs)
            apply_stacked_decay(params, lrs, lams * self.dec_on, self.dec_masks)
            _restore(params, opt, held)

    @torch.no_grad()
    def _rebuild(self, step: int) -> list[int]:
        """Members whose config rebuilds the optimizer at a freeze: at the freeze step their slices
        of every moment are zeroed and their own step count restarts (what a fresh optimizer over
        the trainable parameters does alone); returns the members that count their own steps."""
        for e in range(len(self.members)):
            if step in self.rebuilds[e]:
                self.own_step[e] = 0
                for p in self.params.values():
                    for v in self.opt.state.get(p, {}).values():
                        if torch.is_tensor(v) and v.dim() > 0:
                            v[e] = 0
        own = [e for e in range(len(self.members)) if self.own_step[e] is not None]
        for e in own:
            self.own_step[e] += 1
        return own

    @torch.no_grad()
    def scores(self) -> list[dict]:
        """Every member's split scores from one stacked forward per split (chunked like evaluate_split)."""
        members, E = self.members, len(self.members)
        out = [{} for _ in members]
        for name, (xs, ys) in self.evals.items():
            chunk = max(1, min(EVAL_BATCH, EVAL_ATTENTION_BUDGET // xs.shape[2] ** 2) // E)
            logits = torch.cat([stacked_logits(self.cfg0.model, self.params, xs[:, i:i + chunk])
                                for i in range(0, xs.shape[1], chunk)], 1)
            for e, m in enumerate(members):
                out[e][name] = split_scores(logits[e], ys[e], m.scored[name], self.device)
        return out

    def evaluate(self, step: int) -> None:
        """Log every live member: its scores and weight metrics (all members at once) and, after
        step 0, the decay mechanism read from its slice of the optimizer state."""
        got, wm = self.scores(), stacked_weight_metrics(self.template, self.params)
        for e, m in enumerate(self.members):
            if step == 0:
                m.last = self._log(e, 0, 0.0, 0.0, None, got[e], wm[e])
            elif m.alive:
                m.last = self._log(e, step, float(self.lrs[e]), float(self.lams[e]), self.ce_grad_sq[e], got[e], wm[e])

    @torch.no_grad()
    def _log(self, e: int, step: int, lr: float, lam: float, ce_grad_sq, scores, weights) -> dict:
        """Member e's evaluation: its split scores and weight metrics (computed for all members at
        once) and, after step 0, the decay mechanism read from its slice of the optimizer state
        through the template model holding its weights."""
        m, template, params, opt = self.members[e], self.template, self.params, self.opt
        mech = None
        if step > 0:
            named = dict(template.named_parameters())
            for n, p in named.items():
                p.copy_(params[n][e])
            state = {}
            for n, p in named.items():
                st = opt.state.get(params[n])
                since = self.frozen_from[e].get(n)
                if self.rebuilds[e] and since is not None and since < step:
                    continue                # the rebuilt optimizer does not hold a frozen parameter
                if st and since != 0:       # frozen from the start: alone it would have no state
                    state[p] = {k: (v[e] if torch.is_tensor(v) and v.dim() > 0 else v) for k, v in st.items()}
                    if since is not None and since < step and "step" in st:    # its steps stopped at the freeze
                        state[p]["step"] = torch.as_tensor(float(since))
                    elif self.own_step[e] is not None and "step" in st:        # counted from its last rebuild
                        state[p]["step"] = torch.as_tensor(float(self.own_step[e]))
            view = SimpleNamespace(defaults=opt.defaults, state=state)
            mech = decay_mechanism(view, template.decayed_parameters(m.cfg.decay_set), lr, lam, m.cfg.decay_form,
                                   ce_grad_sq)
        return log_metrics(template, m.scored, step, template.tok.weight.device, m.rows, mech, scores, weights)

    def state(self, step: int, wall: float = 0.0, checkpoints: dict | None = None) -> bytes:
        """The pack's training state after `step` (torch.save): what `train_pack(resume=...)` continues from."""
        buf = io.BytesIO()
        members = [{"generator": m.order.gen.get_state(), "perm": m.order.perm.cpu(), "ptr": m.order.ptr,
                    "rows": m.rows, "last": m.last, "status": m.status, "error": m.error, "own_step": own,
                    **({} if self.drop is None else {"rng": self.drop.states[e].cpu()})}    # dropout's state
                   for e, (m, own) in enumerate(zip(self.members, self.own_step))]
        torch.save({"format": 1, "step": step, "wall": wall, "configs": [c.resolved() for c in self.identity],
                    "params": {n: p.detach().cpu() for n, p in self.params.items()}, "optimizer": self.opt.state_dict(),
                    "members": members, "alive": [m.alive for m in self.members]}, buf)
        return buf.getvalue()

    def restore(self, state: dict, resumed: bool) -> None:
        """Continue from a pack state (`state`'s)."""
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(state["params"][n])
        self.opt.load_state_dict(state["optimizer"])
        for e, (m, st, alive) in enumerate(zip(self.members, state["members"], state["alive"])):
            m.order.restore(st["generator"], st["perm"], st["ptr"])
            m.rows, m.last, m.status, m.error, m.alive = st["rows"], st["last"], st["status"], st["error"], alive
            self.own_step[e] = st["own_step"]
            if self.drop is not None:
                self.drop.states[e] = st["rng"]


def _freezes(cfg: TrainConfig, template) -> dict:
    """Per parameter name, the step its first freeze in `cfg` starts (validated against `template`)."""
    comps = template.components()
    names = {id(p): n for n, p in template.named_parameters()}
    frozen_from = {}
    for f in cfg.freezes():
        f.validate(comps, cfg.steps)
        for p in comps[f.component]:
            n = names[id(p)]
            frozen_from[n] = min(f.step, frozen_from.get(n, f.step))
    return frozen_from


@torch.no_grad()
def _clip(params: dict, frozen: list, max_norm: float) -> None:
    """Each member's gradient scaled as `clip_grad_norm_` scales a run's alone: by
    max_norm / (norm + 1e-6) where that is below 1, its norm over its unfrozen parameters
    (a frozen one has no gradient alone)."""
    names = list(params)
    norms = torch.stack([params[n].grad.flatten(1).norm(dim=1) for n in names])        # (parameters, E)
    for e, gone in enumerate(frozen):
        for n in gone:
            norms[names.index(n), e] = 0.0
    coef = (max_norm / (norms.norm(dim=0) + 1e-6)).clamp(max=1.0)
    for n in names:
        g = params[n].grad
        g.mul_(coef.view(-1, *[1] * (g.dim() - 1)))


def _decaying(members, form: str) -> np.ndarray:
    """(E,) 1.0 for the members that decay at all, and in reading `form`; 0.0 for the others."""
    return np.array([float(m.cfg.decay_form == form and bool(m.lam.any())) for m in members])


@torch.no_grad()
def _hold(params: dict, opt, frozen: list) -> list:
    """What a frozen slice must get back after the step: (member, name, its weights, its
    optimizer state or None where it has none yet). Restoring it is the single loop's
    grad = None: no update, no moment update, no decay."""
    held = []
    for e, names in enumerate(frozen):
        for n in names:
            st = opt.state.get(params[n])
            kept = {k: v[e].clone() for k, v in st.items() if torch.is_tensor(v) and v.dim() > 0} if st else None
            held.append((e, n, params[n][e].clone(), kept))
    return held


@torch.no_grad()
def _restore(params: dict, opt, held: list) -> None:
    for e, n, w, kept in held:
        params[n][e] = w
        st = opt.state.get(params[n], {})
        for k, v in st.items():
            if torch.is_tensor(v) and v.dim() > 0:
                v[e] = kept[k] if kept is not None and k in kept else 0


@torch.no_grad()
def _own_adam_step(params: dict, opt, before: dict, own_steps: dict, lrs) -> None:
    """Redo the Adam update of members whose step count is their own (after a rebuild) from
    the moments the shared step has just updated: torch's AdamW with their bias corrections.
    SGD's momentum has none, so its shared step is already theirs."""
    if "betas" not in opt.defaults:
        return
    (b1, b2), eps, ams = opt.defaults["betas"], opt.defaults["eps"], opt.defaults.get("amsgrad", False)
    for n, p in params.items():
        st = opt.state.get(p)
        if not st:
            continue
        for e, k in own_steps.items():
            v = st["max_exp_avg_sq"][e] if ams else st["exp_avg_sq"][e]
            p[e] = adam_move(before[n][e], st["exp_avg"][e], v.sqrt() / (1 - b2 ** k) ** 0.5, float(lrs[e]), b1, k, eps)


@torch.no_grad()
def _ce_grad_sq(members, params: dict, template, frozen: list) -> list[float]:
    """Per member: the squared norm of its loss gradient over its decayed, unfrozen parameters
    (before any penalty)."""
    names = {id(p): n for n, p in template.named_parameters()}
    out = []
    for e, m in enumerate(members):
        sq = 0.0
        for p in template.decayed_parameters(m.cfg.decay_set):
            g = params[names[id(p)]].grad
            if g is not None and names[id(p)] not in frozen[e]:
                sq += float((g[e].double() ** 2).sum())
        out.append(sq)
    return out


__all__ = ["EVAL_BATCH", "PackStepper"]


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
