"""Adam's move from its moments, in torch's arithmetic, for the places that take Adam's step by hand:
a pack member whose step count is its own (`steppers.pack`) and the held second moment
(`interventions.second_moment`). Tested equal to `torch.optim.Adam`."""
from __future__ import annotations

import torch


def adam_move(base: torch.Tensor, exp_avg: torch.Tensor, sqrt_v_hat: torch.Tensor, lr: float, beta1: float,
              step: int, eps: float) -> torch.Tensor:
    """The weights `base` moved by Adam's step `step` (1 for the first): base - lr m_hat / (sqrt(v_hat) + eps),
    where m_hat = exp_avg / (1 - beta1^step) and `sqrt_v_hat` is the bias-corrected second moment's root.
    A new tensor; `base` is left as it is."""
    return torch.addcdiv(base, exp_avg, sqrt_v_hat.add(eps), value=-lr / (1 - beta1 ** step))


__all__ = ["adam_move"]
