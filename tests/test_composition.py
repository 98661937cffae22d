"""The composition model (Theory II) against independent computations: finite differences of its
loss, torch's own optimizers on the same two-factor problem, scipy's integrator, a closed form."""
import numpy as np
import pytest
import sympy as sp
import torch
from scipy.integrate import solve_ivp

from critwin.errors import ConfigError
from critwin.theory.composition import CompositionModel, derive, edges, simulate, window_lambda


def loss_np(ms, qs, s_m, s_r, lam):
    eps = 1 - s_m * np.prod(ms) - s_r * np.prod(qs)
    return 0.5 * eps ** 2 + lam / 2 * (np.sum(np.square(ms)) + np.sum(np.square(qs)))


def test_the_derived_flow_is_minus_the_gradient_by_finite_differences():
    d = derive(2, 3)
    s = {sp.Symbol("s_m", positive=True): 0.7, sp.Symbol("s_r", positive=True): 1.3,
         sp.Symbol("lambda", positive=True): 0.05}
    m, q, eps = (sp.Symbol(n, positive=True) for n in ("m", "q", "epsilon"))
    for mv, qv in ((0.3, 0.4), (0.8, 0.2), (0.1, 0.9)):
        e = 1 - 0.7 * mv ** 2 - 1.3 * qv ** 3
        h = 1e-6
        ms, qs = np.array([mv, mv]), np.array([qv, qv, qv])
        up, dn = ms.copy(), ms.copy()
        up[0] += h
        dn[0] -= h
        fd_m = -(loss_np(up, qs, 0.7, 1.3, 0.05) - loss_np(dn, qs, 0.7, 1.3, 0.05)) / (2 * h)
        up, dn = qs.copy(), qs.copy()
        up[0] += h
        dn[0] -= h
        fd_q = -(loss_np(ms, up, 0.7, 1.3, 0.05) - loss_np(ms, dn, 0.7, 1.3, 0.05)) / (2 * h)
        at = {**s, m: mv, q: qv, eps: e}
        assert float(d["dm"].subs(at)) == pytest.approx(fd_m, rel=1e-6)
        assert float(d["dq"].subs(at)) == pytest.approx(fd_q, rel=1e-6)
    assert sp.simplify(d["q_star"] - sp.Symbol("s_m", positive=True) / sp.Symbol("s_r", positive=True)) == 0


def test_reasoning_grows_above_q_star_and_dies_below_it_under_a_penalty():
    """Memorisation settled under the penalty (eps = lambda / s_m); started just above q* the
    reasoning path grows, just below it shrinks, by simulation (which never reads q*)."""
    s_m, s_r, lam = 0.5, 2.0, 0.02
    q_star = s_m / s_r
    x_eq = 1 - lam / s_m                                       # memorisation alone at its settling point
    fates = []
    for q0 in (1.05 * q_star, 0.95 * q_star):
        x_eq_here = x_eq - s_r * q0 ** 3                         # eps = lam / s_m with this q
        mod = CompositionModel(s_m=s_m, s_r=s_r, m0=np.sqrt(x_eq_here / s_m), q0=q0)
        sim = simulate(mod, np.full((1, 3000), lam), lr=0.05, optimizer="gd", every=3000)
        fates.append(sim["q"][-1, 0] / q0)
    assert fates[0] > 1.2 and fates[1] < 0.8


def test_gd_with_a_small_step_follows_the_flow_integrated_by_scipy():
    mod = CompositionModel(s_m=0.4, s_r=0.9, m0=0.05, q0=0.2)
    lr, T = 0.01, 6000
    lam = window_lambda([2000], 2000, 0.03, T)
    sim = simulate(mod, lam, lr, "gd", every=1000)

    def f(t, y):
        m, q = y
        lam_t = 0.03 if 2000 * lr <= t < 4000 * lr else 0.0
        e = 1 - 0.4 * m * m - 0.9 * q ** 3
        return [0.4 * e * m - lam_t * m, 0.9 * e * q * q - lam_t * q]
    segments, y = [], [0.05, 0.2]
    for a, b in ((0, 20), (20, 40), (40, 60)):                   # piecewise: the window's edges are kinks
        sol = solve_ivp(f, (a, b), y, rtol=1e-10, atol=1e-12, dense_output=True)
        segments.append((a, b, sol.sol))
        y = sol.y[:, -1]
    ref = np.array([next(sol for a, b, sol in segments if a <= t <= b)(t) for t in sim["steps"][1:] * lr])
    np.testing.assert_allclose(sim["m"][1:, 0], ref[:, 0], rtol=0.02)
    np.testing.assert_allclose(sim["q"][1:, 0], ref[:, 1], rtol=0.02)


@pytest.mark.parametrize("optimizer", ["adamw", "momentum"])
def test_each_optimizer_equals_torchs_on_the_two_factor_problem(optimizer):
    """Two scalar factors (n = 1), L2 penalty in the loss, against torch.optim on autograd."""
    mod = CompositionModel(s_m=0.6, s_r=1.4, m0=0.3, q0=0.25)
    T, lam = 200, window_lambda([50], 100, 0.05, 200)
    sim = simulate(mod, lam, 1e-2, optimizer, every=1)
    ms = [torch.tensor(0.3, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    qs = [torch.tensor(0.25, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    opt = torch.optim.Adam(ms + qs, lr=1e-2, betas=(0.9, 0.98), eps=1e-8) if optimizer == "adamw" else \
        torch.optim.SGD(ms + qs, lr=1e-2, momentum=0.9)
    for t in range(T):
        eps = 1 - 0.6 * ms[0] * ms[1] - 1.4 * qs[0] * qs[1] * qs[2]
        loss = 0.5 * eps ** 2 + lam[0, t] / 2 * sum(v ** 2 for v in ms + qs)
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert ms[0].item() == pytest.approx(sim["m"][t + 1, 0], rel=1e-9, abs=1e-12)
        assert qs[0].item() == pytest.approx(sim["q"][t + 1, 0], rel=1e-9, abs=1e-12)


def test_memorisation_alone_is_the_logistic_of_the_flow():
    """No penalty, reasoning frozen, GD flow: x' = 2 s_m (1 - x) x, so x(t) = 1 / (1 + (1/x0 - 1) e^(-2 s_m t))."""
    mod = CompositionModel(s_m=0.5, s_r=1.0, m0=0.1, q0=1e-9)
    lr, T = 1e-3, 20000
    sim = simulate(mod, np.zeros((1, T)), lr, "gd", every=2000, reason=False)
    x0 = 0.5 * 0.1 ** 2
    t = sim["steps"] * lr
    np.testing.assert_allclose(sim["x"][:, 0], 1 / (1 + (1 / x0 - 1) * np.exp(-2 * 0.5 * t)), rtol=2e-3)


def test_a_penalty_from_step_0_kills_reasoning_that_a_later_one_rescues():
    """The window this model exists for: onset 0 ends memorised, a later onset composes (GD)."""
    mod = CompositionModel(s_m=1.0, s_r=6.0, m0=0.05, q0=0.05)
    e = edges(mod, [0, 100, 200, 400, 800, 1600], width=4000, value=0.2, total=8000, lr=0.05, optimizer="gd")
    assert e["fraction"][0] < 0.5 and e["exists"] and e["left"] > 0
    none = simulate(mod, np.zeros((1, 8000)), 0.05, "gd", every=8000)
    assert none["rho"][-1, 0] / (none["x"][-1, 0] + none["rho"][-1, 0]) < 0.5     # and no decay memorises


def test_bad_inputs_name_the_field():
    with pytest.raises(ConfigError, match="s_r"):
        CompositionModel(s_m=1.0, s_r=0.0, m0=0.1, q0=0.1)
    with pytest.raises(ConfigError, match="optimizer"):
        simulate(CompositionModel(s_m=1.0, s_r=1.0, m0=0.1, q0=0.1), np.zeros((1, 3)), 0.1, "rmsprop")
