"""Weight-space metrics: norm, condensation index, OV/QK subspace alignment."""
from __future__ import annotations

import torch


@torch.no_grad()
def weight_norm(weights) -> float:
    """L2 norm of the decayed weights (all weight matrices except embeddings)."""
    return float(torch.sqrt(sum((w.double() ** 2).sum() for w in weights)))


@torch.no_grad()
def participation_ratio(w: torch.Tensor) -> float:
    """(sum sigma)^2 / sum sigma^2: the effective rank of a matrix."""
    s = torch.linalg.svdvals(w.double())
    return float(s.sum() ** 2 / (s**2).sum())


@torch.no_grad()
def condensation_index(model) -> float:
    """Mean over layers of the participation ratio of W_V (lower = more condensed)."""
    return sum(participation_ratio(b.attn.v.weight) for b in model.blocks) / len(model.blocks)


@torch.no_grad()
def ov_qk_alignment(model, k: int = 4) -> float:
    """Overlap of layer-1 W_O W_V's top-k output space with layer-2 W_Q^T W_K's top-k key space.

    Mean squared cosine of the principal angles, in [0, 1]; nan with fewer than 2 layers.
    """
    if len(model.blocks) < 2:
        return float("nan")
    a1, a2 = model.blocks[0].attn, model.blocks[1].attn
    ov = (a1.o.weight @ a1.v.weight).double()
    qk = (a2.q.weight.T @ a2.k.weight).double()
    u = torch.linalg.svd(ov).U[:, :k]
    v = torch.linalg.svd(qk).Vh[:k].T
    return float((u.T @ v).pow(2).sum() / k)
