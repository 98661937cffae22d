"""Adam's step on numpy arrays, the one every theory optimizer takes (`optimizers.run_discrete`,
`composition.simulate`): torch's Adam, bias corrections included, without weight decay (a
decoupled decay is the caller's, applied after the step). `adam_update` takes the same step in place."""
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


def adam_update(w: np.ndarray, m: np.ndarray, v: np.ndarray, g: np.ndarray, t: int, lr, betas, eps: float,
                scratch: tuple[np.ndarray, np.ndarray]) -> None:
    """w -= adam_step(m, v, g, t, lr, betas, eps), the same floats, computed in place: two `scratch`
    arrays shaped like w take the temporaries, so a long run allocates nothing (fresh memory's page
    faults cost more than the arithmetic at the stylised model's sizes)."""
    b1, b2 = betas
    s1, s2 = scratch
    np.multiply(g, 1 - b1, out=s1)
    m *= b1
    m += s1
    np.square(g, out=s1)
    s1 *= 1 - b2
    v *= b2
    v += s1
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    if c1 == 1:         # a bias correction is exactly 1 after a few hundred (m) or thousand (v) steps,
        np.multiply(m, lr, out=s1)      # and dividing by 1 changes no float: that pass is skipped
    else:
        np.divide(m, c1, out=s1)
        s1 *= lr
    np.sqrt(v if c2 == 1 else np.divide(v, c2, out=s2), out=s2)
    s2 += eps
    s1 /= s2
    w -= s1


__all__ = ["adam_step", "adam_update"]
