"""Which part of what the loss is growing an L2 penalty would hold back: the composition model's input.

Coordinate i of a weight matrix grows under the loss alone when its pull, -g_i theta_i (g the full training
set's cross-entropy gradient), is > 0; under an L2 penalty lambda it still grows when the pull also beats the
penalty's, -g_i theta_i >= lambda theta_i^2. `held_share` is the |theta|-weighted share of the grown
coordinates that pass the second test (theory.composition.survival_edge reads it). Matrices only: a bias
the softmax ignores has an exact gradient of 0 and would add float noise to the grown set.
"""
from __future__ import annotations

import torch
from critwin.empirical.metrics.optim import parameter_group

SURVIVAL_GROUPS = ("attn", "mlp")


def held_share(model, loss_fn, lams, groups=SURVIVAL_GROUPS) -> dict:
    """{group: {"grown": share of |theta| the loss grows, lam: held share for each lam}} at the model's
    weights; loss_fn(model) -> scalar loss (the full training set, no minibatch noise)."""
    model.zero_grad()
    loss_fn(model).backward()
    pulls = {g: [] for g in groups}
    sizes = {g: [] for g in groups}
    for name, p in model.named_parameters():
        grp = parameter_group(name)
        if grp in pulls and p.grad is not None and p.dim() >= 2:
            w = p.detach().double().flatten()
            pulls[grp].append(-p.grad.double().flatten() * w)
            sizes[grp].append(w)
    model.zero_grad()
    out = {}
    for grp in groups:
        if not pulls[grp]:
            continue
        pull, w = torch.cat(pulls[grp]), torch.cat(sizes[grp])
        mass = w.abs()
        grown = pull > 0
        grown_mass = float((mass * grown).sum())
        row = {"grown": grown_mass / float(mass.sum())}
        for lam in lams:
            held = grown & (pull >= float(lam) * w * w)
            row[float(lam)] = float((mass * held).sum()) / grown_mass if grown_mass > 0 else float("nan")
        out[grp] = row
    return out


__all__ = ["SURVIVAL_GROUPS", "held_share"]
