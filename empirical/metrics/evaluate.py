"""Loss and accuracy of a model on a task split (and the shift task's symmetric rate)."""
from __future__ import annotations

import torch
import torch.nn.functional as F


@torch.no_grad()
def evaluate_split(model, split, device, batch: int = 4096) -> dict:
    """{'loss', 'acc'} and, where the split has symmetric targets, 'symmetric_rate'."""
    x = torch.as_tensor(split.inputs, device=device)
    y = torch.as_tensor(split.targets, device=device)
    logits = torch.cat([model(x[i:i + batch]) for i in range(0, len(x), batch)])
    pred = logits.argmax(-1)
    out = {"loss": F.cross_entropy(logits, y).item(), "acc": (pred == y).float().mean().item()}
    if "symmetric_target" in split.extra:
        sym = torch.as_tensor(split.extra["symmetric_target"], device=device)
        out["symmetric_rate"] = (pred == sym).float().mean().item()
    return out
