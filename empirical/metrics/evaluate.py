"""Loss and accuracy of a model on a task split (and the shift task's symmetric rate)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

EVAL_ATTENTION_BUDGET = 2 ** 27   # sequences x length^2 per evaluation batch (~1 GB of attention scores per head)


@torch.no_grad()
def evaluate_split(model, split, device, batch: int = 4096) -> dict:
    """{'loss', 'acc'}; 'symmetric_rate' where the split has symmetric targets; the Alchemy
    events where it has their metadata (see `alchemy_events`)."""
    if split.targets.ndim == 2:                   # a language-model task (tasks/sequence.py)
        from critwin.empirical.metrics.decode import evaluate_sequences
        return evaluate_sequences(model, split, device)
    x = torch.as_tensor(split.inputs, device=device)
    batch = max(1, min(batch, EVAL_ATTENTION_BUDGET // max(1, x.shape[1] ** 2)))   # long contexts: smaller batches
    y = torch.as_tensor(split.targets, device=device)
    lengths = split.extra.get("lengths")
    lengths = None if lengths is None else torch.as_tensor(lengths, device=device)
    logits = torch.cat([model(x[i:i + batch], None if lengths is None else lengths[i:i + batch]).float()
                        for i in range(0, len(x), batch)])       # float: scores in fp32 under bf16 autocast too
    return split_scores(logits, y, split, device)


@torch.no_grad()
def split_scores(logits, y, split, device) -> dict:
    """evaluate_split's numbers from the split's logits (N, classes) and targets y (N,)."""
    pred = logits.argmax(-1)
    out = {"loss": F.cross_entropy(logits, y).item(), "acc": (pred == y).float().mean().item()}
    if "symmetric_target" in split.extra:
        sym = torch.as_tensor(split.extra["symmetric_target"], device=device)
        out["symmetric_rate"] = (pred == sym).float().mean().item()
    if "chemistry_stones" in split.extra:
        out.update(alchemy_events(pred.cpu().numpy(), split))
    return out


def alchemy_events(pred, split) -> dict:
    """Events per query, P(C) = P(A) P(B|A) P(C|A and B): A the prediction is one of the
    chemistry's 8 stones, B it lies in the query's B set (the face the potion moves onto, or
    the stones reachable in h hops), C it is the answer. nan where a condition never holds."""
    import numpy as np
    a = (pred[:, None] == split.extra["chemistry_stones"]).any(1)
    b = (pred[:, None] == split.extra["event_b"]).any(1)
    c = pred == split.targets
    ab = a & b
    return {"event_a": float(a.mean()), "event_b": float(b.mean()), "event_c": float(c.mean()),
            "p_b_given_a": float(ab.sum() / a.sum()) if a.any() else float(np.nan),
            "p_c_given_ab": float((c & ab).sum() / ab.sum()) if ab.any() else float(np.nan)}
