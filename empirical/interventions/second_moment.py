"""AdamW whose second moment stops updating from a chosen step: a mechanism intervention.

If an L2 penalty acts through Adam because Adam divides it by the gradient scale sqrt(v),
then holding v at its value from an early step (while the loss gradients are large) should
keep the penalty weak later on. Until `freeze_from` this is Adam with decoupled weight decay
0, step for step as torch's AdamW; from then on v is held and only the first moment moves.
"""
from __future__ import annotations

import torch
from critwin.empirical.adam import adam_move


class AdamFrozenSecondMoment(torch.optim.Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, freeze_from: int = 0):
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps})
        self.freeze_from = int(freeze_from)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                    st["v_hat"] = torch.zeros_like(p)
                st["step"] += 1
                t = st["step"]
                st["exp_avg"].mul_(b1).add_(p.grad, alpha=1 - b1)
                if t <= max(self.freeze_from, 1):
                    st["exp_avg_sq"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                    st["v_hat"] = st["exp_avg_sq"] / (1 - b2 ** t)
                p.copy_(adam_move(p, st["exp_avg"], st["v_hat"].sqrt(), group["lr"], b1, t, group["eps"]))
        return None
