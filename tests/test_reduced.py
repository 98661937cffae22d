import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sympy as sp

from critwin.theory import derive, Schedule, StylisedSetting, compute_rates, crossing_times, simulate_reduced
from critwin.theory.windows import recipe_window, reduced_window

SMALL = StylisedSetting(d=8, keys=4, anchors=4, train_pairs=10, embeddings="orthonormal")


def test_linear_law_crossings_are_the_closed_forms():
    r = compute_rates(SMALL, [0.3, 0.8, 1.5])
    t1, t2 = crossing_times(r.mu_m, r.mu_r, r.rho0, r.capacity, 0.3, "linear")
    np.testing.assert_allclose(t1, np.log(1 / 0.3) / r.mu_m, rtol=1e-6)
    np.testing.assert_allclose(t2, np.log(1 / 0.3) / r.mu_r, rtol=1e-6)


def test_bilinear_escape_matches_saxe_closed_form():
    """Reasoning alone on the balanced manifold is logistic: derive()'s escape time."""
    r = compute_rates(SMALL, [0.2, 0.8])
    _, t2 = crossing_times(r.mu_m, r.mu_r, r.rho0, r.capacity, 0.5, "bilinear", start="balanced")
    # on Q = rho / rho0: rho' = (2 mu_r / rho0) rho (c - rho) = 2 G rho (c - rho) / c
    G = r.mu_r * r.capacity / r.rho0
    c, u0, uf = r.capacity, r.rho0, 0.5 * r.capacity
    G_sym, c_sym, u0_sym, uf_sym = sp.symbols("G c u_0 u_f", positive=True)
    formula = sp.lambdify((G_sym, c_sym, u0_sym, uf_sym), derive().escape_time)
    expected = formula(G, c, u0, uf)
    np.testing.assert_allclose(t2, expected, rtol=1e-5)


def test_window_edges_are_integrated_exactly():
    """Memorization alone under a decay window against the piecewise analytic solution."""
    mu, lam, eta = 2.0, 5.0, 1e-2
    sched = Schedule.window(30, 70, lam, 100)
    steps = np.array([0, 30, 50, 70, 100], dtype=float)
    _, tr = simulate_reduced(mu, 1e-9, 1e-12, 1e-9, [sched], eta, steps, "linear")

    def relax(x0, rate, target, t):
        return target + (x0 - target) * np.exp(-rate * t)
    x30 = relax(0, mu, 1, 0.3)
    x50 = relax(x30, mu + lam, mu / (mu + lam), 0.2)
    x70 = relax(x30, mu + lam, mu / (mu + lam), 0.4)
    x100 = relax(x70, mu, 1, 0.3)
    np.testing.assert_allclose(tr["x"][:, 0], [0, x30, x50, x70, x100], atol=1e-7)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 3), st.floats(0.05, 3), st.floats(0.05, 0.5))
def test_window_edges_move_monotonically_with_gamma(g1, g2, delta):
    lo, hi = sorted((g1, g2))
    if hi / lo < 1.01:
        return
    s = SMALL.with_(delta=delta)
    rec = recipe_window(s, [lo, hi])
    assert rec["t2_steps"][0] > rec["t2_steps"][1]            # t2 ~ gamma^-2
    assert rec["t1_steps"][0] == pytest.approx(rec["t1_steps"][1])  # t1 ~ gamma^0
    red = reduced_window(s, [lo, hi], "linear")
    assert red["t2_steps"][0] > red["t2_steps"][1]
    bil = reduced_window(s, [lo, hi], "bilinear")
    assert bil["t2_steps"][0] >= bil["t2_steps"][1] * (1 - 1e-6)


def test_fifty_gammas_in_one_integration():
    g = np.geomspace(0.05, 3, 50)
    red = reduced_window(StylisedSetting(), g)
    assert red["t2_steps"].shape == (50,) and np.all(np.isfinite(red["t2_steps"]))
