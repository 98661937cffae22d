"""The composition model's left-edge quantities, measured in no-decay runs (written before any edge it
predicts is bisected; prints JSON, committed as force_probe.json).

In the composition model the force per unit size on a path is what decides it under an L2 penalty:
kappa_m = s_m eps on memorisation and kappa_q = s_r eps q on reasoning, so kappa_q / kappa_m = q / q*.
Both are gradients of the loss, so they can be read off a real network whatever its optimizer:
kappa_G(t) = |grad_G CE_train(t)| / |theta_G(t)| over a parameter group G, the full training set's
cross-entropy gradient (no minibatch noise) at the weights of a no-decay run at step t. The model's force
is radial (a balanced factor's gradient lies along the factor), so the radial part is logged too:
F_G(t) = -<grad_G, theta_G> / |theta_G|^2, the growth rate per unit size the loss gives the group; under an L2
penalty lambda the group grows iff F_G > lambda (for plain GD, and for Adam's sign limit coordinate by
coordinate). A path lives in a few directions of its group, so the force along the direction the group
has moved since init is logged too (learned_G). The reading:
attention parameters carry the reasoning path (layer-1 value into layer-2 key/query), MLP parameters
the memorisation path (a key-specific input-to-output map).

Probes: the paper-size anchor task, no decay, gamma 0.5 / 0.8 / 1.1 x task instances 0-2 x seed 0, under
AdamW (the paper's lr 3e-3, betas 0.9/0.98; 600 steps) and SGD with momentum (lr 0.1, momentum 0.9, the
W9 protocol; 1000 steps), a state every 10 (AdamW) or 20 (SGD) steps.

Run: python3 paper_checks/reports/theory2/force_probe.py > paper_checks/reports/theory2/force_probe.json
"""
import json
import sys

import numpy as np
import torch
from critwin.empirical.metrics.optim import parameter_group
from critwin.bridge.survival import PROBES as OPTIMIZERS
from critwin.bridge.survival import accuracy, probe_config, states_along
from critwin.empirical.train import batch_loss

GAMMAS, TASK_SEEDS = (0.5, 0.8, 1.1), (0, 1, 2)


def forces(model, split, init: dict | None = None) -> dict:
    """kappa per group (attn, mlp): |full-batch CE gradient| / |weights| of that group; radial_G: the
    growth force per unit size; learned_G (given the initial weights): the same along the direction the
    group has moved since init, u = (theta - theta_0) / |theta - theta_0|: -<grad, u> / <theta, u>."""
    model.zero_grad()
    x, y = torch.as_tensor(split.inputs), torch.as_tensor(split.targets)
    batch_loss(model, x, y).backward()
    g2, w2, gw, gd, wd, dd = ({"attn": 0.0, "mlp": 0.0} for _ in range(6))
    for name, p in model.named_parameters():
        grp = parameter_group(name)
        if grp in g2 and p.grad is not None:
            g, w = p.grad.double(), p.detach().double()
            g2[grp] += float((g ** 2).sum())
            w2[grp] += float((w ** 2).sum())
            gw[grp] += float((g * w).sum())
            if init is not None:
                d = w - init[name].double()
                gd[grp] += float((g * d).sum())
                wd[grp] += float((w * d).sum())
                dd[grp] += float((d ** 2).sum())
    out = {**{g: float(np.sqrt(g2[g] / w2[g])) for g in g2}, **{f"radial_{g}": -gw[g] / w2[g] for g in g2}}
    if init is not None:
        out.update({f"learned_{g}": (-gd[g] / wd[g] if dd[g] > 0 and wd[g] != 0 else float("nan")) for g in g2})
    return out


def probe(opt: str, gamma: float, task_seed: int) -> dict:
    cfg = probe_config(opt, gamma, task_seed, 0)
    rows = {k: [] for k in ("step", "kappa_attn", "kappa_mlp", "radial_attn", "radial_mlp", "learned_attn",
                            "learned_mlp", "train_acc", "ood_acc")}
    init = None
    for step, model, data in states_along(cfg):
        split, ood = data.splits["train"], data.splits["ood"]
        if init is None:                       # step 0: the initial weights
            init = {k: v.detach().clone() for k, v in model.named_parameters()}
        f = forces(model, split, init if step > 0 else None)
        rows["step"].append(step)
        rows["kappa_attn"].append(f["attn"])
        rows["kappa_mlp"].append(f["mlp"])
        rows["radial_attn"].append(f["radial_attn"])
        rows["radial_mlp"].append(f["radial_mlp"])
        rows["learned_attn"].append(f.get("learned_attn", float("nan")))
        rows["learned_mlp"].append(f.get("learned_mlp", float("nan")))
        rows["train_acc"].append(accuracy(model, split))
        rows["ood_acc"].append(accuracy(model, ood))
    return rows


def main() -> dict:
    torch.set_num_threads(1)
    out = {}
    for opt in OPTIMIZERS:
        for g in GAMMAS:
            for ts in TASK_SEEDS:
                out[f"{opt} gamma {g} task {ts}"] = probe(opt, g, ts)
                print(f"probed {opt} gamma {g} task {ts}", file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    print(json.dumps(main()))
