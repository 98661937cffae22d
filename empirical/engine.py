"""Train many small models as one: the members of a pack stacked along a leading axis.

A pack is a list of TrainConfigs that differ only in what `PACK_FREE` names (seeds, task
instance, init scale, learning rate, decay schedule and reading, freezes). `train_pack` trains
them in one process as stacked weights: one forward and backward for all members
(`models/stacked.py`: the model of `models/transformer.py` with a batched matmul over members
for every linear map), one optimizer step over the stacked
tensors (AdamW and SGD act elementwise, so each member's slice steps as it would alone), decay
as per-member factors. Members with different learning rates take torch's step at lr 1, and
each member's slice is then moved lr times as far (the optimizers' state does not depend on
lr). A member whose freezes rebuild the optimizer gets its moments zeroed at each freeze and
its Adam update redone with its own step count. Each member comes back as its own Run, with
the run id, metrics and status it would have had alone (float-level differences: batched
matmuls round differently). Like one run, a pack writes a resume state and continues from it
after a kill.
"""
from __future__ import annotations

import io
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from critwin.empirical.config import TrainConfig
from critwin.empirical.metrics import (
    decay_mechanism,
    split_scores,
    stacked_weight_metrics,
)
from critwin.empirical.models.stacked import stacked_logits
from critwin.empirical.store import Run
from critwin.empirical.train import (
    ResumeWriter,
    _device,
    build_optimizer,
    eval_splits,
    finish_run,
    initial_model,
    log_metrics,
    read_resume_state,
)
from tqdm.auto import tqdm

from critwin.errors import ConfigError

PACK_FREE = ("seed", "task_seed", "wd_windows", "decay_form", "decay_set", "lr", "lr_final", "freeze")  # and gamma
PACK_TASKS = ("anchor_permutation", "anchor_shift", "modarith")               # fixed-shape classification
EVAL_BATCH = 4096        # examples per stacked evaluation forward, all members together


def pack_key(cfg: TrainConfig) -> str | None:
    """Configs with equal keys can train as one pack; None: this one trains alone (branches,
    checkpoints, clipping, dropout, the second-moment interventions (held v, adam_scaled decay),
    bf16 autocast, or a task whose examples vary in shape)."""
    if (cfg.task not in PACK_TASKS or cfg.branch or cfg.checkpoints or cfg.clip is not None
            or cfg.freeze_second_moment is not None or cfg.model.dropout > 0 or cfg.decay_form == "adam_scaled"
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
    device), and split evenly into at least `workers` packs where there are enough members,
    so every worker gets one. A config that cannot be packed is a pack of one."""
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
        k = max(-(-len(members) // cap), min(workers, len(members)))
        for j in range(k):
            part = members[j * len(members) // k:(j + 1) * len(members) // k]
            out.append((part[0][0], [c for _, c in part]))
    return [p for _, p in sorted(out, key=lambda t: t[0])]


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


class _Member:
    """One member's own state beside the stacked weights: data, order, logs, status."""

    def __init__(self, cfg: TrainConfig, data, device):
        self.cfg, self.data = cfg, data
        split = data.splits["train"]
        if cfg.batch_size > len(split):
            raise ConfigError("batch_size", cfg.batch_size, f"at most the {len(split)} training examples")
        self.x = torch.as_tensor(split.inputs, device=device)
        self.y = torch.as_tensor(split.targets, device=device)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.perm, self.ptr = torch.randperm(len(self.y), generator=self.gen), 0
        self.lam = cfg.schedule().value(np.arange(cfg.steps))
        self.scored = eval_splits(cfg, data)
        self.rows, self.last = [], {}
        self.status, self.error = "complete", None
        self.frozen_from: dict = {}      # parameter name -> the step its first freeze starts
        rebuild = cfg.freeze_optimizer == "rebuild"
        self.rebuilds = {f.step for f in cfg.freezes()} if rebuild else set()   # steps with a fresh optimizer
        self.own_step = None             # optimizer steps since its last rebuild (None: none yet)

    def set_freezes(self, template) -> None:
        comps = template.components()
        names = {id(p): n for n, p in template.named_parameters()}
        for f in self.cfg.freezes():
            f.validate(comps, self.cfg.steps)
            for p in comps[f.component]:
                n = names[id(p)]
                self.frozen_from[n] = min(f.step, self.frozen_from.get(n, f.step))

    def frozen(self, step: int) -> set:
        return {n for n, s in self.frozen_from.items() if step >= s}

    STATE = ("ptr", "rows", "last", "status", "error", "own_step")

    def state(self) -> dict:
        """What it needs to continue after a kill (its weights and moments are the pack's)."""
        return {"generator": self.gen.get_state(), "perm": self.perm.cpu(),
                **{k: getattr(self, k) for k in self.STATE}}

    def restore(self, state: dict) -> None:
        self.gen.set_state(state["generator"])
        self.perm = state["perm"].to(torch.int64)
        for k in self.STATE:
            setattr(self, k, state[k])

    def next_batch(self) -> torch.Tensor:
        B = self.cfg.batch_size
        if self.ptr + B > len(self.y):
            self.perm, self.ptr = torch.randperm(len(self.y), generator=self.gen), 0
        idx = self.perm[self.ptr:self.ptr + B]
        self.ptr += B
        return idx


def _stack(models, device) -> dict:
    names = [n for n, _ in models[0].named_parameters()]
    return {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]).to(device).requires_grad_()
            for n in names}


def _decay(members, template, form: str) -> tuple[np.ndarray, dict]:
    """The decay of the members whose reading is `form`: (steps, E) lambda (0 for the others)
    and, per parameter name, an (E,) 0/1 mask of the members whose decayed set holds it (names
    no member decays are left out)."""
    names = {id(p): n for n, p in template.named_parameters()}
    lam, masks = np.zeros((members[0].cfg.steps, len(members))), {}
    for e, m in enumerate(members):
        if m.cfg.decay_form != form or not m.lam.any():
            continue
        lam[:, e] = m.lam
        for p in template.decayed_parameters(m.cfg.decay_set):
            masks.setdefault(names[id(p)], np.zeros(len(members)))[e] = 1.0
    return lam, masks


def train_pack(cfgs: list[TrainConfig], progress: bool = True, on_steps=None, resume: Path | None = None,
               save_every: float | None = None) -> list[Run]:
    """Train the configs of one pack (equal `pack_key`) as one stacked model; one Run each.
    With `resume` (a file path) the pack writes its state there as `train` does for one run,
    and a pack killed midway continues from it, with the numbers of an uninterrupted pack."""
    if not cfgs:
        return []
    keys = {pack_key(c) for c in cfgs}
    if None in keys or len(keys) > 1:
        raise ConfigError("configs", [c.run_id() for c in cfgs],
                          "configs that differ only in " + ", ".join(PACK_FREE) + " and gamma (see pack_key)")
    cfg0 = cfgs[0]
    device = _device(cfg0.device)
    built = [initial_model(c) for c in cfgs]
    members = [_Member(c, data, device) for c, (_, data) in zip(cfgs, built)]
    shapes = {tuple((n, *sp.inputs.shape) for n, sp in m.scored.items()) + (tuple(m.x.shape),) for m in members}
    if len(shapes) > 1:
        raise ConfigError("task_seed", [c.task_seed for c in cfgs], "task instances whose splits have one shape")
    template = built[0][0].to(device)          # materialises one member at a time for the metrics
    for m in members:
        m.set_freezes(template)
    params = _stack([b[0] for b in built], device)
    del built
    E, steps = len(cfgs), cfg0.steps
    opt = build_optimizer(cfg0, list(params.values()))
    l2_lam, l2_mask = _decay(members, template, "l2")
    dec_lam, dec_mask = _decay(members, template, "decoupled")
    X = torch.stack([m.x for m in members])
    Y = torch.stack([m.y for m in members])
    ar = torch.arange(E, device=device)[:, None]
    one_lr = len({(c.lr, c.lr_final) for c in cfgs}) == 1
    if not one_lr:
        for g in opt.param_groups:
            g["lr"] = 1.0

    def per_member(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        return v.view(-1, *[1] * (like.dim() - 1))

    def losses_of(p, xb, yb):        # (E,) mean cross-entropy per member
        logits = stacked_logits(cfg0.model, p, xb)
        return F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="none").view(yb.shape).mean(1)
    evals = {name: (torch.stack([torch.as_tensor(m.scored[name].inputs, device=device) for m in members]),
                    torch.stack([torch.as_tensor(m.scored[name].targets, device=device) for m in members]))
             for name in members[0].scored}

    @torch.no_grad()
    def scores() -> list[dict]:
        """Every member's split scores from one stacked forward per split (chunked like evaluate_split)."""
        out = [{} for _ in members]
        for name, (xs, ys) in evals.items():
            chunk = max(1, EVAL_BATCH // E)
            logits = torch.cat([stacked_logits(cfg0.model, params, xs[:, i:i + chunk])
                                for i in range(0, xs.shape[1], chunk)], 1)
            for e, m in enumerate(members):
                out[e][name] = split_scores(logits[e], ys[e], m.scored[name], device)
        return out
    saved = read_resume_state(resume, cfgs)
    if saved is not None:
        with torch.no_grad():
            for n, p in params.items():
                p.copy_(saved["params"][n])
        opt.load_state_dict(saved["optimizer"])
        for m, st in zip(members, saved["members"]):
            m.restore(st)
        first, alive = saved["step"], list(saved["alive"])
    else:
        first, alive = 0, [True] * E
        got, wm = scores(), stacked_weight_metrics(template, params)
        for e, m in enumerate(members):
            m.last = _log(template, params, opt, members, e, 0, 0.0, 0.0, None, got[e], wm[e])
    t0, saver = time.perf_counter(), ResumeWriter(resume, save_every)
    done_steps, wall_before = first, (saved or {}).get("wall", 0.0)
    bar = tqdm(total=steps, initial=first, desc=f"{cfg0.task} pack of {E}", unit="step", disable=not progress,
               leave=False, mininterval=0.5)
    for step in range(first, steps):
        idx = torch.stack([m.next_batch() for m in members]).to(device)
        losses = losses_of(params, X[ar, idx], Y[ar, idx])
        finite = torch.isfinite(losses.detach()).tolist()
        for e in range(E):
            if alive[e] and not finite[e]:
                alive[e] = False
                members[e].status, members[e].error = "diverged", f"non-finite training loss at step {step}"
        if not any(alive):
            break
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        lrs = np.array([m.cfg.lr_at(step) for m in members])
        if one_lr and cfg0.lr_schedule != "constant":
            for g in opt.param_groups:
                g["lr"] = lrs[0]
        evaluate = (step + 1) % cfg0.eval_every == 0 or step + 1 == steps
        frozen = [m.frozen(step) for m in members]
        ce_grad_sq = _ce_grad_sq(members, params, template, frozen) if evaluate else None
        own = _rebuild(members, step, params, opt)
        held = _hold(params, opt, frozen)
        with torch.no_grad():
            for n, mask in l2_mask.items():
                lam = l2_lam[step] * mask
                if lam.any():       # decided on the host: no device sync per parameter
                    lam_t = torch.as_tensor(lam, dtype=torch.float32, device=device)
                    params[n].grad.add_(params[n] * per_member(lam_t, params[n]))
            before = {n: p.detach().clone() for n, p in params.items()} if (own or not one_lr) else None
            opt.step()
            if not one_lr:
                lr_t = torch.as_tensor(lrs, dtype=torch.float32, device=device)
                for n, p in params.items():
                    p.copy_(before[n] + per_member(lr_t, p) * (p - before[n]))
            if own:
                _own_adam_step(params, opt, before, {e: members[e].own_step for e in own}, lrs)
            for n, mask in dec_mask.items():
                lam = dec_lam[step] * mask
                if lam.any():
                    shrink = torch.as_tensor(1.0 - lrs * lam, dtype=torch.float32, device=device)
                    params[n].mul_(per_member(shrink, params[n]))
            _restore(params, opt, held)
        if evaluate:
            got, wm = scores(), stacked_weight_metrics(template, params)
            for e, m in enumerate(members):
                if alive[e]:
                    m.last = _log(template, params, opt, members, e, step + 1, float(lrs[e]), float(m.lam[step]),
                                  ce_grad_sq[e], got[e], wm[e])
            if on_steps is not None:
                on_steps((step + 1 - done_steps) * sum(alive))
                done_steps = step + 1
            if saver.due(step + 1, steps):
                saver.write(_pack_state(cfgs, step + 1, params, opt, members, alive, wall_before + time.perf_counter() - t0))
        bar.update(1)
    bar.close()
    wall = wall_before + time.perf_counter() - t0
    n_par = sum(p[0].numel() for p in params.values())
    extra = {"pack": {"members": E, "wall_seconds": wall}, **({"resumed_from_step": first} if saved else {})}
    return [finish_run(m.cfg, m.data, m.rows, m.last, m.status, m.error, wall / E, n_par, extra=extra)
            for m in members]


def _pack_state(cfgs, step: int, params: dict, opt, members, alive: list, wall: float) -> bytes:
    """A pack's training state after `step` (torch.save): what `train_pack(resume=...)` continues from."""
    buf = io.BytesIO()
    torch.save({"format": 1, "step": step, "wall": wall, "configs": [c.resolved() for c in cfgs],
                "params": {n: p.detach().cpu() for n, p in params.items()}, "optimizer": opt.state_dict(),
                "members": [m.state() for m in members], "alive": list(alive)}, buf)
    return buf.getvalue()


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
def _rebuild(members, step: int, params: dict, opt) -> list[int]:
    """Members whose config rebuilds the optimizer at a freeze: at the freeze step their slices
    of every moment are zeroed and their own step count restarts (what a fresh optimizer over
    the trainable parameters does alone); returns the members that count their own steps."""
    for e, m in enumerate(members):
        if step in m.rebuilds:
            m.own_step = 0
            for p in params.values():
                for v in opt.state.get(p, {}).values():
                    if torch.is_tensor(v) and v.dim() > 0:
                        v[e] = 0
    own = [e for e, m in enumerate(members) if m.own_step is not None]
    for e in own:
        members[e].own_step += 1
    return own


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
            denom = (v.sqrt() / (1 - b2 ** k) ** 0.5).add_(eps)
            p[e] = before[n][e] - (float(lrs[e]) / (1 - b1 ** k)) * st["exp_avg"][e] / denom


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


@torch.no_grad()
def _log(template, params: dict, opt, members, e: int, step: int, lr: float, lam: float, ce_grad_sq, scores,
         weights) -> dict:
    """Member e's evaluation: its split scores and weight metrics (computed for all members at
    once) and, after step 0, the decay mechanism read from its slice of the optimizer state
    through the template model holding its weights."""
    m = members[e]
    mech = None
    if step > 0:
        named = dict(template.named_parameters())
        for n, p in named.items():
            p.copy_(params[n][e])
        state = {}
        for n, p in named.items():
            st = opt.state.get(params[n])
            since = m.frozen_from.get(n)
            if m.rebuilds and since is not None and since < step:
                continue                # the rebuilt optimizer does not hold a frozen parameter
            if st and since != 0:       # frozen from the start: alone it would have no state
                state[p] = {k: (v[e] if torch.is_tensor(v) and v.dim() > 0 else v) for k, v in st.items()}
                if since is not None and since < step and "step" in st:    # its steps stopped at the freeze
                    state[p]["step"] = torch.as_tensor(float(since))
                elif m.own_step is not None and "step" in st:              # counted from its last rebuild
                    state[p]["step"] = torch.as_tensor(float(m.own_step))
        view = SimpleNamespace(defaults=opt.defaults, state=state)
        mech = decay_mechanism(view, template.decayed_parameters(m.cfg.decay_set), lr, lam, m.cfg.decay_form, ce_grad_sq)
    return log_metrics(template, m.scored, step, template.tok.weight.device, m.rows, mech, scores, weights)


__all__ = ["PACK_FREE", "PACK_TASKS", "default_pack_size", "on_engine", "pack_key", "packs", "train_pack"]
