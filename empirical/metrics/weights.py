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


@torch.no_grad()
def stacked_weight_metrics(template, params: dict, k: int = 4) -> list[dict]:
    """weight_norm, condensation, ov_qk_alignment and the per-group norms of every member of a
    stacked model (params: parameter name of `template` -> tensor with a leading member axis),
    with one batched SVD per quantity instead of one per member: what the functions above give
    for each member alone (the engine logs a whole pack at every evaluation with it)."""
    from critwin.empirical.metrics.optim import PARAM_GROUPS, parameter_group
    names = {id(p): n for n, p in template.named_parameters()}
    finite = torch.stack([torch.isfinite(t).flatten(1).all(1) for t in params.values()]).all(0)

    def w(p, dtype=torch.float64):      # a diverged member's matrices as zeros (its metrics end up nan)
        t = params[names[id(p)]]
        return torch.where(finite.view(-1, *[1] * (t.dim() - 1)), t, torch.zeros((), dtype=t.dtype,
                                                                              device=t.device)).to(dtype)
    sq = {n: (t.double() ** 2).flatten(1).sum(1) for n, t in params.items()}
    norm = torch.stack([sq[names[id(p)]] for p in template.decayed_weights()]).sum(0).sqrt()
    s = torch.linalg.svdvals(torch.stack([w(b.attn.v.weight) for b in template.blocks], 1))     # (E, layers, r)
    condensation = (s.sum(-1) ** 2 / (s ** 2).sum(-1)).mean(1)
    E = norm.shape[0]
    if len(template.blocks) >= 2:
        a1, a2 = template.blocks[0].attn, template.blocks[1].attn
        f = a1.o.weight.dtype      # the products in the weights' own precision, as ov_qk_alignment forms them
        u = torch.linalg.svd((w(a1.o.weight, f) @ w(a1.v.weight, f)).double()).U[..., :k]
        v = torch.linalg.svd((w(a2.q.weight, f).transpose(-1, -2) @ w(a2.k.weight, f)).double()).Vh[..., :k, :]
        v = v.transpose(-1, -2)
        align = (u.transpose(-1, -2) @ v).pow(2).sum((-1, -2)) / k
    else:
        align = torch.full((E,), float("nan"), dtype=torch.float64, device=norm.device)
    groups = {g: torch.zeros(E, dtype=torch.float64, device=norm.device) for g in PARAM_GROUPS}
    for n, v2 in sq.items():
        groups[parameter_group(n)] += v2
    cols = {"weight_norm": norm, "condensation": condensation, "ov_qk_alignment": align,
            **{f"norm_{g}": v.sqrt() for g, v in groups.items()}}
    nan = torch.tensor(float("nan"), dtype=torch.float64, device=norm.device)
    host = {key: torch.where(finite, val, nan).cpu().tolist() for key, val in cols.items()}
    return [{key: float(vals[e]) for key, vals in host.items()} for e in range(E)]


@torch.no_grad()
def weight_metrics(model) -> dict:
    """The weight metrics of one model (stacked_weight_metrics with one member)."""
    return stacked_weight_metrics(model, {n: p.detach()[None] for n, p in model.named_parameters()})[0]
