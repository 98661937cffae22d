import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sympy as sp

from critwin.theory import (Schedule, StylisedSetting, build_problem, compute_rates, crossing_times, derive,
                            init_params, simulate_reduced)
from critwin.theory.windows import predict, recipe_window, reduced_window

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


@pytest.mark.parametrize("emb", ["orthonormal", "unit"])
def test_reduced_drive_matches_the_full_flow_averaged_over_inits(emb):
    """The reasoning path's early growth from a random init, mean over 100 inits of the full
    flow (an independent computation), against the reduced model. The |P|-times larger
    curvature mu_r as the drive was 15x too fast here; with unit keys the slowest key mode as the
    key factor was ~4x too slow (measured with the targets' average mode: 0.84-0.92x for unit keys,
    0.72-0.77x for gaussian keys, 1.08-1.11x orthonormal)."""
    from critwin.theory import Schedule, integrate_flow
    from critwin.theory.reduced import simulate_reduced
    s = StylisedSetting(d=16, keys=6, anchors=5, train_pairs=15, eta=1e-2, embeddings=emb)
    p = build_problem(s)
    n, g = 100, 0.1
    q = init_params(p, np.full(n, g), np.arange(n))
    steps = np.array([0, 10, 20])
    _, traj, _ = integrate_flow(p, q, [Schedule.none(20)] * n, s.eta, steps)
    full = traj["rho"].mean(axis=1) - traj["rho"][0].mean()
    r = compute_rates(s, [g], problem=p)
    _, red = simulate_reduced(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, Schedule.none(20), s.eta, steps)
    np.testing.assert_allclose(red["rho"][1:, 0], full[1:], rtol=0.25)


@pytest.mark.xfail(strict=True, reason="known limit of the reduced model: it runs ahead of the full flow as gamma "
                                       "grows (mean of 32 inits, steps 20/40/60: 1.8/2.5/1.8x at gamma 0.8, "
                                       "1.05/1.38/1.63x at 0.3, 0.93/0.99/1.30x at 0.1)")
def test_reduced_rho_follows_the_full_flow_at_the_paper_gamma():
    from critwin.theory import Schedule, integrate_flow
    from critwin.theory.reduced import simulate_reduced
    s = StylisedSetting(d=16, keys=6, anchors=5, train_pairs=15, eta=1e-2)
    p = build_problem(s)
    n, g = 32, 0.8
    q = init_params(p, np.full(n, g), np.arange(n))
    steps = np.array([0, 20, 40, 60])
    _, traj, _ = integrate_flow(p, q, [Schedule.none(60)] * n, s.eta, steps)
    full = traj["rho"].mean(axis=1) - traj["rho"][0].mean()
    r = compute_rates(s, [g], problem=p)
    _, red = simulate_reduced(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, Schedule.none(60), s.eta, steps)
    np.testing.assert_allclose(red["rho"][1:, 0], full[1:], rtol=0.25)


def test_memorization_drive_is_the_initial_speed_of_the_full_flow():
    """x'(0) from M = 0 (tiny init), by a forward difference of the full flow: the reduced model's
    memorisation rate. mu_m, the slowest key mode (the curvature), is smaller whenever the keys are not
    orthonormal."""
    from critwin.theory import Schedule, integrate_flow
    s = StylisedSetting(d=16, keys=6, anchors=5, train_pairs=15, eta=1e-4, embeddings="unit", seed=2)
    p = build_problem(s)
    q = init_params(p, np.array([1e-4]), np.array([0]))
    _, traj, _ = integrate_flow(p, q, [Schedule.none(2)], s.eta, np.array([0, 1]))
    speed = (traj["x"][1, 0] - traj["x"][0, 0]) / s.eta
    r = compute_rates(s, [1e-4], problem=p)
    assert r.mu_m_drive == pytest.approx(speed, rel=0.01)
    assert r.mu_m < 0.5 * r.mu_m_drive


def test_inverted_or_unreached_windows_are_flagged():
    from critwin.theory.windows import window_verdict
    assert window_verdict(231.0, 156.0)["window"] == "none" and "inverted" in window_verdict(231.0, 156.0)["reason"]
    assert window_verdict(231.0, float("inf"))["window"] == "none"
    assert window_verdict(231.0, 23105.0) == {"window": "delta", "reason": ""}
    from critwin.theory import predict
    (row,) = predict(StylisedSetting(targets="permutation"), 0.8, "reduced", total=2000, width=500)
    assert row["window"] == "none" and row["t2_steps"] < row["t1_steps"]


@pytest.mark.parametrize("gamma", [0.3, 0.8])
def test_reduced_final_fraction_without_decay_is_near_the_full_flow_median(gamma):
    """No decay, 800 steps: the reduced model's final reasoning fraction against the median of
    the full flow over 40 inits (measured: 0.607 vs 0.550 at gamma 0.3, 0.701 vs 0.594 at 0.8;
    the curvature as drive gave 0.737 / 0.831)."""
    from critwin.theory import Schedule, integrate_flow
    s = StylisedSetting(d=16, keys=6, anchors=5, train_pairs=15, eta=1e-2, gamma=gamma)
    p = build_problem(s)
    q = init_params(p, np.full(40, gamma), np.arange(40))
    _, traj, _ = integrate_flow(p, q, [Schedule.none(800)] * 40, s.eta, [800])
    r = compute_rates(s, [gamma], problem=p)
    _, red = simulate_reduced(r.mu_m_drive, r.mu_r_drive, r.rho0, r.capacity, Schedule.none(800), s.eta, [800])
    assert abs(red["reasoning_fraction"][-1, 0] - np.median(traj["reasoning_fraction"][-1])) < 0.12


@pytest.mark.parametrize("emb", ["orthonormal", "unit"])
def test_frozen_couplings_reach_about_one_over_p(emb):
    """With W2 frozen at a random init, the best V explains ~reach of the targets: checked by
    least squares over many inits (independent of the formula), and the linear law then has no
    delta-window at delta = 1/2."""
    from critwin.theory.rates import frozen_reach
    from critwin.theory.stylised import couplings
    s = StylisedSetting(d=16, keys=4, anchors=5, train_pairs=12, embeddings=emb, targets="permutation", seed=3)
    p = build_problem(s)
    Y = p.targets.reshape(len(p.pairs), -1)
    q = init_params(p, np.ones(400), np.arange(400))
    fr = []
    for c in couplings(p, q.W2):
        V, *_ = np.linalg.lstsq(c[:, None], Y, rcond=None)        # min_V sum_p |c_p V - Y_p|^2
        fr.append(1 - np.sum((c[:, None] * V - Y) ** 2) / np.sum(Y**2))
    assert np.mean(fr) == pytest.approx(frozen_reach(p), rel=0.15)
    if emb == "orthonormal":
        assert frozen_reach(p) == pytest.approx(1 / len(p.pairs))
    r = compute_rates(s)
    assert r.reach == min(r.capacity, frozen_reach(p))
    (row,) = predict(s.with_(delta=0.5), method="reduced", law="linear")
    assert row["window"] == "none" and "W2 at a random init" in row["reason"]
