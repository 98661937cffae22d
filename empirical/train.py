"""The training loop: one TrainConfig in, one Run (config, tidy metrics, summary, env) out."""
from __future__ import annotations

import contextlib
import io
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from critwin.empirical.config import TrainConfig, check_branch
from critwin.empirical.environment import environment
from critwin.empirical.interventions import (
    add_l2_grad,
    apply_adam_scaled_decay,
    apply_decay,
    frozen_parameters,
)
from critwin.empirical.interventions.second_moment import AdamFrozenSecondMoment
from critwin.empirical.metrics import (
    decay_mechanism,
    evaluate_split,
    squared_grad_norm,
    weight_metrics,
)
from critwin.empirical.models import Transformer
from critwin.empirical.store import Run, write_atomic
from critwin.empirical.tasks import make_task
from critwin.empirical.tasks.sequence import (
    IGNORE,
    is_sequence_task,
    language_model_data,
)
from tqdm.auto import tqdm

from critwin.errors import ConfigError

RESUME_SECONDS = 300.0   # default of how often (at most) a run writes the state it resumes from after a kill
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


def eval_splits(cfg: TrainConfig, data) -> dict:
    """The splits every evaluation scores: each cut to cfg.eval_max examples (fixed subset)."""
    return {name: split.sample(cfg.eval_max) for name, split in data.splits.items()}


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


def initial_model(cfg: TrainConfig):
    """(model at its seeded initialisation, task data): exactly what `train` starts from."""
    torch.manual_seed(cfg.seed)
    data = make_task(cfg.task, cfg.task_seed, **cfg.task_options()).generate()
    if is_sequence_task(data):
        data = language_model_data(data)
    return build_model(cfg, data.vocab_size, data.seq_len, data.info.get("n_classes")), data


def train(cfg: TrainConfig, progress: bool = True, on_steps=None, start: dict | None = None,
          resume: Path | None = None, save_every: float | None = None) -> Run:
    """Train one model. Deterministic on CPU for a given config (seeded init and batches).
    on_steps(n), if given, is called at every evaluation with the steps done since the last.
    A config with `branch` starts from `start`, the source run's checkpoint (RunStore.checkpoint):
    the result equals training the same config from step 0. With `resume` (a file path), the
    training state is written there at the first evaluation `save_every` seconds after the last
    write (default: $CRITWIN_RESUME_SECONDS, else 300), and a run killed midway continues from
    that file on its next start, with the numbers of an uninterrupted run (the caller deletes
    the file once the run is stored)."""
    device = _device(cfg.device)
    if (cfg.branch is None) != (start is None):
        raise ConfigError("branch", cfg.branch, "a config with branch, trained from its checkpoint (start)")
    model, data = initial_model(cfg)
    model = model.to(device)
    gen = torch.Generator().manual_seed(cfg.seed)
    train_split = data.splits["train"]
    if cfg.batch_size > len(train_split):
        raise ConfigError("batch_size", cfg.batch_size, f"at most the {len(train_split)} training examples")
    opt = build_optimizer(cfg, model.parameters())
    comps = model.components()
    freezes = cfg.freezes()
    for f in freezes:
        f.validate(comps, cfg.steps)
    decayed = model.decayed_parameters(cfg.decay_set)
    l2 = cfg.decay_form == "l2"
    lam = cfg.schedule().value(np.arange(cfg.steps))
    x = torch.as_tensor(train_split.inputs, device=device)
    y = torch.as_tensor(train_split.targets, device=device)
    lengths = train_split.extra.get("lengths")
    lengths = None if lengths is None else torch.as_tensor(lengths, device=device)
    n, B = len(y), cfg.batch_size
    perm, ptr = torch.randperm(n, generator=gen), 0
    rows: list = []
    scored = eval_splits(cfg, data)
    first, checkpoints = 0, {}
    saved = read_resume_state(resume, cfg)
    if start is not None and saved is None:
        check_branch(TrainConfig.from_dict(start["config"]), cfg, start["step"])
    start = saved or start
    if start is not None:
        first = start["step"]
        model.load_state_dict(start["model"])
        if cfg.freeze_optimizer == "rebuild" and any(f.step < first for f in freezes):
            opt = optimizer_over_trainable(cfg, model, frozen_parameters(freezes, comps, first - 1))
        opt.load_state_dict(start["optimizer"])
        gen.set_state(start["generator"])
        torch.set_rng_state(start["torch_rng"])
        perm, ptr, rows, last = start["perm"].to(torch.int64), start["ptr"], list(start["rows"]), start["last"]
    else:
        last = log_metrics(model, scored, 0, device, rows, autocast=cfg.autocast)
    status, error, t0, done_steps = "complete", None, time.perf_counter(), first
    saver, wall_before = ResumeWriter(resume, save_every), (saved or {}).get("wall", 0.0)
    checkpoints.update((saved or {}).get("checkpoints", {}))
    bar = tqdm(total=cfg.steps, initial=first, desc=f"{cfg.task} seed {cfg.seed}", unit="step",
               disable=not progress, leave=False, mininterval=0.5)
    for step in range(first, cfg.steps):
        if ptr + B > n:
            perm, ptr = torch.randperm(n, generator=gen), 0
        idx = perm[ptr:ptr + B].to(device)
        ptr += B
        with cfg.autocast():
            loss = batch_loss(model, x[idx], y[idx], None if lengths is None else lengths[idx])
        if not math.isfinite(loss.item()):
            status, error = "diverged", f"non-finite training loss at step {step}"
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        frozen = frozen_parameters(freezes, comps, step)
        for p in frozen:
            p.grad = None   # the optimizer skips it: no update, no moment update
        if cfg.freeze_optimizer == "rebuild" and any(f.step == step for f in freezes):
            opt = optimizer_over_trainable(cfg, model, frozen)    # the paper's protocol: new moments
        if cfg.clip is not None:
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None], cfg.clip)
        lr = cfg.lr_at(step)
        if cfg.lr_schedule != "constant":
            for g in opt.param_groups:
                g["lr"] = lr
        evaluate = (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps
        ce_grad_sq = squared_grad_norm(decayed) if evaluate else 0.0
        if l2:
            add_l2_grad(decayed, float(lam[step]), skip=frozen)
        opt.step()
        if cfg.decay_form == "decoupled":
            apply_decay(decayed, lr, float(lam[step]), skip=frozen)
        elif cfg.decay_form == "adam_scaled":
            apply_adam_scaled_decay(decayed, opt, lr, float(lam[step]), skip=frozen)
        if evaluate:
            mech = decay_mechanism(opt, decayed, lr, float(lam[step]), cfg.decay_form, ce_grad_sq)
            last = log_metrics(model, scored, step + 1, device, rows, mech, autocast=cfg.autocast)
            if on_steps is not None:
                on_steps(step + 1 - done_steps)
                done_steps = step + 1
            bar.set_postfix({k: f"{last[k]:.3f}" for k in last if k.endswith(("_acc", "test_event_a", "test_p_b_given_a"))
                             and not k.startswith("test_ablate")}, refresh=False)
        if step + 1 in cfg.checkpoints:
            checkpoints[step + 1] = training_state(cfg, step + 1, model, opt, gen, perm, ptr, rows, last)
        if evaluate and saver.due(step + 1, cfg.steps):
            saver.write(training_state(cfg, step + 1, model, opt, gen, perm, ptr, rows, last,
                                       wall_before + time.perf_counter() - t0, checkpoints))
        bar.update(1)
    bar.close()
    return finish_run(cfg, data, rows, last, status, error, wall_before + time.perf_counter() - t0,
                      sum(p.numel() for p in model.parameters()), checkpoints,
                      {"resumed_from_step": first} if saved is not None else None)


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


class ResumeWriter:
    """When and where a run (or pack) writes its resume state: to `path` (None: never), at most
    every `save_every` seconds (None: $CRITWIN_RESUME_SECONDS, else RESUME_SECONDS), never after
    the last step, atomically."""

    def __init__(self, path, save_every: float | None = None):
        self.path = None if path is None else Path(path)
        self.every = float(os.environ.get("CRITWIN_RESUME_SECONDS", RESUME_SECONDS)) if save_every is None \
            else save_every
        self.last = time.perf_counter()

    def due(self, done: int, steps: int) -> bool:
        return self.path is not None and done < steps and time.perf_counter() - self.last >= self.every

    def write(self, blob: bytes) -> None:
        """A write that fails (a full disk) costs only resumability: warn and train on."""
        try:
            write_atomic(self.path, blob)
        except OSError as e:
            warnings.warn(f"could not write the resume state {self.path} ({e.strerror or e}); training on without it")
        self.last = time.perf_counter()


def read_resume_state(path, cfg: TrainConfig | list[TrainConfig]) -> dict | None:
    """The training state a killed run left at `path`, if it is readable and of this very config
    (a list: of this very pack, members in order); None otherwise (an unreadable or foreign file
    is ignored, with a warning, and overwritten later)."""
    if path is None or not Path(path).is_file():
        return None
    pack = isinstance(cfg, list)
    key, want, steps = ("configs", [c.run_id() for c in cfg], cfg[0].steps) if pack else \
        ("config", cfg.run_id(), cfg.steps)
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
        saved = [TrainConfig.from_dict(c).run_id() for c in state[key]] if pack else \
            TrainConfig.from_dict(state[key]).run_id()     # by identity: fields added later at their defaults agree
        ok = state.get("format") == 1 and saved == want and 0 < state["step"] < steps
    except Exception as e:  # noqa: BLE001 - a damaged resume file only costs the time it saved
        warnings.warn(f"ignoring unreadable resume state {path} ({type(e).__name__}: {e}); training from the start")
        return None
    if not ok:
        warnings.warn(f"ignoring resume state {path}: it belongs to another config; training from the start")
        return None
    return state
