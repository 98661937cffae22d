"""Adam's step on numpy arrays, the one every theory optimizer takes (`optimizers.run_discrete`,
`composition.simulate`): torch's Adam, bias corrections included, without weight decay (a
decoupled decay is the caller's, applied after the step)."""
from __future__ import annotations

import numpy as np


def adam_step(m: np.ndarray, v: np.ndarray, g: np.ndarray, t: int, lr, betas, eps: float) -> np.ndarray:
    """Move Adam's first and second moments `m`, `v` (in place) by the gradient `g` at step `t` (1 for
    the first step) and return the step to subtract from the weights: lr m_hat / (sqrt(v_hat) + eps).
    `lr` may be an array that broadcasts against `g`."""
    b1, b2 = betas
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * g ** 2
    return lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


__all__ = ["adam_step"]
