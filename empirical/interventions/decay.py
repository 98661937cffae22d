"""Weight decay in its readings, applied by the training loop at every step.

`decoupled`: theta <- theta - eta * lambda(step) * theta after the optimizer step (AdamW's
decoupled form, with the per-step shrink eta * lambda). `l2`: the paper's Eq. 4, a penalty
1/2 lambda(step) |theta|^2 added to the loss, so its gradient lambda * theta goes through
the optimizer (Adam divides it by the gradient scale, SGD adds momentum to it). `adam_scaled`
(an intervention, Adam only): the penalty's gradient g = lambda * theta normalised coordinate by
coordinate as Adam would if it entered only the second moment, theta <- theta - eta * g /
(sqrt(v_hat + g^2) + eps), with v_hat Adam's own (loss gradients only): no momentum, and the
loss's steps are not slowed by the penalty. The g^2 bounds each step by eta (a divisor without
it, ~1e-6 once the training set is fitted, makes the step ~10x the weight: it explodes).
"""
from __future__ import annotations

import torch

from critwin.vocabulary import DECAY_FORMS


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


def adam_v_hat(opt, p) -> torch.Tensor | None:
    """The second moment `opt` (an Adam variant) divides p's update by, bias-corrected, in float64:
    its held v_hat (AdamFrozenSecondMoment), the running max of v under AMSGrad, else v; None
    before p's first step."""
    st = opt.state.get(p)
    if not st or "exp_avg_sq" not in st:
        return None
    if "v_hat" in st:
        return st["v_hat"].double()
    v = st["max_exp_avg_sq"] if opt.defaults.get("amsgrad") else st["exp_avg_sq"]
    return v.double() / (1 - opt.defaults["betas"][1] ** float(st["step"]))


def adam_scaled_step(w, v_hat: torch.Tensor, lr: float, lam: float, eps: float) -> torch.Tensor:
    """The `adam_scaled` step of one tensor, float64: lr g / (sqrt(v_hat + g^2) + eps), g = lam w."""
    g = lam * w.double()
    return lr * g / ((v_hat + g * g).sqrt() + eps)


@torch.no_grad()
def apply_adam_scaled_decay(weights, opt, lr: float, lam: float, skip=()) -> None:
    """The `adam_scaled` reading: theta <- theta - lr g / (sqrt(v_hat + g^2) + eps), g = lam theta, with
    Adam's v_hat after this step (call after the optimizer step); a tensor without Adam state yet is left alone."""
    if lam <= 0:
        return
    skip_ids, eps = {id(p) for p in skip}, opt.defaults["eps"]
    for w in weights:
        v_hat = None if id(w) in skip_ids else adam_v_hat(opt, w)
        if v_hat is not None:
            w.sub_(adam_scaled_step(w, v_hat, lr, lam, eps).to(w.dtype))


def decay_before_step(form: str, params, lam: float, skip=()) -> None:
    """What a reading does to the gradients before the optimizer step: the `l2` penalty's gradient
    (the other readings act on the weights after it)."""
    if form == "l2":
        add_l2_grad(params, lam, skip=skip)


def decay_after_step(form: str, weights, opt, lr: float, lam: float, skip=()) -> None:
    """What a reading does to the weights after the optimizer step: the `decoupled` shrink or the
    `adam_scaled` step (`l2` acted through the gradients)."""
    if form == "decoupled":
        apply_decay(weights, lr, lam, skip=skip)
    elif form == "adam_scaled":
        apply_adam_scaled_decay(weights, opt, lr, lam, skip=skip)
