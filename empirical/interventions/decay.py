"""Weight decay in its two readings, applied by the training loop at every step.

`decoupled`: theta <- theta - eta * lambda(step) * theta after the optimizer step (AdamW's
decoupled form, with the per-step shrink eta * lambda). `l2`: the paper's Eq. 4, a penalty
1/2 lambda(step) |theta|^2 added to the loss, so its gradient lambda * theta goes through
the optimizer (Adam divides it by the gradient scale, SGD adds momentum to it).
"""
from __future__ import annotations

import torch

DECAY_FORMS = ("decoupled", "l2")


@torch.no_grad()
def apply_decay(weights, lr: float, lam: float, skip=()) -> None:
    """Decoupled decay: shrink every tensor in `weights` (except those in `skip`) by (1 - lr * lam)."""
    if lam <= 0:
        return
    skip_ids = {id(p) for p in skip}
    for w in weights:
        if id(w) not in skip_ids:
            w.mul_(1.0 - lr * lam)


@torch.no_grad()
def add_l2_grad(params, lam: float, skip=()) -> None:
    """L2 penalty: add the gradient of 1/2 lam |p|^2 to each p.grad (call before the optimizer step).

    Parameters in `skip` (frozen) and those without a gradient are left alone.
    """
    if lam <= 0:
        return
    skip_ids = {id(p) for p in skip}
    for p in params:
        if id(p) not in skip_ids and p.grad is not None:
            p.grad.add_(p, alpha=lam)
