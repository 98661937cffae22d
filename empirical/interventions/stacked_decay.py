"""Weight decay on a pack's stacked tensors (engine.py): each member decays as it would alone.

A pack holds every parameter as one tensor with a leading member axis. Members may differ in
their reading and decayed set, so each reading keeps, per parameter name, a 0/1 mask of the
members whose decayed set holds it, and acts with a per-member lambda (the members of other
readings, or without decay, at 0). The forms are those of `decay.py`: `l2` adds lambda * theta
to the gradient before the optimizer step, `decoupled` shrinks theta by (1 - lr * lambda) after
it. (`adam_scaled` does not pack: engine.pack_key.)
"""
from __future__ import annotations

import numpy as np
import torch


def stacked_decay_masks(template, decay_sets: list) -> dict:
    """Per parameter name of `template` (one member's module), an (E,) 0/1 mask of the members
    whose decayed set (`decay_sets[e]`, None: not decayed in this reading) holds it; names no
    member decays are left out."""
    names = {id(p): n for n, p in template.named_parameters()}
    masks = {}
    for e, which in enumerate(decay_sets):
        if which is not None:
            for p in template.decayed_parameters(which):
                masks.setdefault(names[id(p)], np.zeros(len(decay_sets)))[e] = 1.0
    return masks


def _per_member(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.view(-1, *[1] * (like.dim() - 1))


@torch.no_grad()
def add_stacked_l2_grad(stacked: dict, lam: np.ndarray, masks: dict) -> None:
    """The `l2` reading on stacked tensors: each member's slice of grad gets lam[e] * theta where
    its mask holds the name (call before the optimizer step). lam: (E,) this step's lambdas."""
    for n, mask in masks.items():
        per = lam * mask
        if per.any():       # decided on the host: no device sync per parameter
            t = torch.as_tensor(per, dtype=torch.float32, device=stacked[n].device)
            stacked[n].grad.add_(stacked[n] * _per_member(t, stacked[n]))


@torch.no_grad()
def apply_stacked_decay(stacked: dict, lrs: np.ndarray, lam: np.ndarray, masks: dict) -> None:
    """The `decoupled` reading on stacked tensors: each member's slice shrinks by
    (1 - lrs[e] * lam[e]) where its mask holds the name (call after the optimizer step)."""
    for n, mask in masks.items():
        per = lam * mask
        if per.any():
            shrink = torch.as_tensor(1.0 - lrs * per, dtype=torch.float32, device=stacked[n].device)
            stacked[n].mul_(_per_member(shrink, stacked[n]))
