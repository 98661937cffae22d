"""Hand-applied decoupled weight decay: theta <- theta - eta * lambda(step) * theta."""
from __future__ import annotations

import torch


@torch.no_grad()
def apply_decay(weights, lr: float, lam: float, skip=()) -> None:
    """Shrink every tensor in `weights` (except those in `skip`) by (1 - lr * lam)."""
    if lam <= 0:
        return
    skip_ids = {id(p) for p in skip}
    for w in weights:
        if id(w) not in skip_ids:
            w.mul_(1.0 - lr * lam)
