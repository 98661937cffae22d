"""Adam written once per side: the theory's numpy step (`theory/adam.py`) and the empirical hand-taken
move (`empirical/adam.py`), each checked against Adam itself."""
import numpy as np
import pytest
import torch

from critwin.empirical.adam import adam_move
from critwin.theory.adam import adam_step


def test_the_theory_step_takes_two_hand_checked_steps():
    """Gradients 1 then -2, betas (0.9, 0.99), lr 0.1, eps 0: the first step is lr (m_hat = v_hat = 1);
    the second has m = -0.11, v = 0.0499, so m_hat = -11/19 and v_hat = 499/199."""
    m, v = np.zeros(1), np.zeros(1)
    first = adam_step(m, v, np.array([1.0]), 1, 0.1, (0.9, 0.99), 0.0)
    assert first[0] == pytest.approx(0.1, rel=1e-12) and m[0] == pytest.approx(0.1) and v[0] == pytest.approx(0.01)
    second = adam_step(m, v, np.array([-2.0]), 2, 0.1, (0.9, 0.99), 0.0)
    assert m[0] == pytest.approx(-0.11, rel=1e-12) and v[0] == pytest.approx(0.0499, rel=1e-12)
    assert second[0] == pytest.approx(0.1 * (-11 / 19) / np.sqrt(499 / 199), rel=1e-12)


def test_the_theory_step_equals_torchs_adam():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3, 4))
    p = torch.tensor(w, requires_grad=True)
    opt = torch.optim.Adam([p], lr=3e-2, betas=(0.9, 0.98), eps=1e-8, foreach=False)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, 6):
        g = rng.normal(size=w.shape)
        p.grad = torch.tensor(g)
        opt.step()
        w -= adam_step(m, v, g, t, 3e-2, (0.9, 0.98), 1e-8)
        np.testing.assert_allclose(w, p.detach().numpy(), rtol=1e-12, atol=1e-15)


def test_the_empirical_move_equals_torchs_adam_exactly():
    """Moments kept as torch keeps them, moved by `adam_move`: the same float32 weights as torch.optim.Adam."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(5, 7, generator=g)
    p = w.clone().requires_grad_()
    opt = torch.optim.Adam([p], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, foreach=False)
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for t in range(1, 6):
        grad = torch.randn(5, 7, generator=g)
        p.grad = grad.clone()
        opt.step()
        m.lerp_(grad, 1 - 0.9)
        v.mul_(0.999).addcmul_(grad, grad, value=1 - 0.999)
        w = adam_move(w, m, v.sqrt() / (1 - 0.999 ** t) ** 0.5, 1e-2, 0.9, t, 1e-8)
        assert torch.equal(w, p.detach())
