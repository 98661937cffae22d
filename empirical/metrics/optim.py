"""What weight decay does to the update: per-group norms and the decay-vs-loss balance.

Logged at every evaluation so the mechanism of a decay reading can be read off a run: the
penalty's gradient next to the cross-entropy gradient, the gradient scale Adam divides by
(sqrt of its bias-corrected second moment), and the per-step relative shrink the decay
actually causes (lr * lambda when decoupled; lambda * adam_gain when an L2 penalty goes through
Adam).

adam_gain = lr |theta| / |(sqrt(v_hat) + eps) * theta|: lr over Adam's divisor averaged with
the weights' own squares (a root mean square weighted by theta^2). It is the shrink per unit
lambda of an L2 penalty at the weights' typical gradient scale. Why not the mean of
lr / sqrt(v_hat): coordinates whose exact gradient is 0 (the key bias, which softmax ignores;
unused embedding rows) have a v_hat of float noise (~1e-9 of the largest), lr / sqrt(v_hat)
there is ~lr / eps, and such a mean follows the noise (two float orderings of one run gave 165
and 220). In this weighted form those coordinates add ~0 to the divisor, so the gain moves by
at most their share of |theta|^2, and two orderings agree to ~1e-6.
"""
from __future__ import annotations

import math

import torch
from critwin.empirical.interventions.decay import adam_scaled_step, adam_v_hat

PARAM_GROUPS = ("attn", "mlp", "norm", "head", "embedding")


def parameter_group(name: str) -> str:
    """attn / mlp / norm (LayerNorm) / head (unembedding) / embedding, from a parameter name."""
    if name.startswith(("tok.", "pos.")):
        return "embedding"
    if name.startswith("unembed"):
        return "head"
    if name.startswith("ln_f") or ".ln" in name:
        return "norm"
    return "attn" if ".attn." in name else "mlp"


@torch.no_grad()
def group_norms(model) -> dict:
    """{'norm_<group>': L2 norm of that group's parameters}."""
    sq = dict.fromkeys(PARAM_GROUPS, 0.0)
    for name, p in model.named_parameters():
        sq[parameter_group(name)] += float((p.double() ** 2).sum())
    return {f"norm_{g}": math.sqrt(v) for g, v in sq.items()}


@torch.no_grad()
def squared_grad_norm(params) -> float:
    return float(sum((p.grad.double() ** 2).sum() for p in params if p.grad is not None))


@torch.no_grad()
def decay_mechanism(opt, decayed, lr: float, lam: float, form: str, ce_grad_sq: float) -> dict:
    """The decay's share of the update over the decayed parameters (see the module text).

    ce_grad_sq: squared norm of the cross-entropy gradient on them at this step (before any
    penalty was added). adam_gain (module text) is the shrink an L2 penalty of strength 1 causes
    through Adam at the weights' typical gradient scale; nan for SGD.
    """
    theta_sq = float(sum((p.double() ** 2).sum() for p in decayed))
    out = {"l2_over_ce": lam * math.sqrt(theta_sq) / math.sqrt(ce_grad_sq) if ce_grad_sq > 0 else float("nan")}
    div_sq, scaled, v_sum, v_n = 0.0, 0.0, 0.0, 0
    adam = "betas" in opt.defaults and "eps" in opt.defaults
    if adam:
        eps = opt.defaults["eps"]
        for p in decayed:
            v_hat = adam_v_hat(opt, p)
            if v_hat is None:
                continue
            div_sq += float((((v_hat.sqrt() + eps) * p.double()) ** 2).sum())
            if form == "adam_scaled":           # its own divisor holds the penalty's gradient
                scaled += float((adam_scaled_step(p, v_hat, lr, lam, eps) ** 2).sum())
            v_sum, v_n = v_sum + float(v_hat.sum()), v_n + v_hat.numel()
    ok = adam and v_n and theta_sq > 0
    gain = lr * math.sqrt(theta_sq / div_sq) if ok and div_sq > 0 else float("nan")
    out["adam_gain"] = gain
    out["second_moment"] = math.sqrt(v_sum / v_n) if v_n else float("nan")
    if form == "decoupled" or not adam:
        out["effective_shrink"] = lr * lam
    elif form == "adam_scaled":
        out["effective_shrink"] = math.sqrt(scaled / theta_sq) if ok else float("nan")
    else:
        out["effective_shrink"] = lam * gain
    return out
