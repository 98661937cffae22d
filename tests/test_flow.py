import numpy as np
import pytest

from critwin.theory import (Schedule, StylisedSetting, build_problem, init_params, integrate_flow,
                            run_discrete)
from critwin.theory.agreement import reduced_vs_full
from critwin.theory.flow import compress, kernel, observables
from critwin.theory.stylised import order_parameters
from critwin.theory.windows import reduced_window


@pytest.mark.parametrize("targets", ["teacher", "permutation"])
def test_compressed_state_reproduces_order_parameters(small, targets):
    p = build_problem(small.with_(targets=targets))
    q = init_params(p, [0.5, 1.2], [0, 1])
    a, b = order_parameters(p, q), observables(p, compress(p, q), kernel(p))
    for k in ("x", "rho", "m", "r", "loss", "ood_rho"):
        np.testing.assert_allclose(a[k], b[k], rtol=1e-10, atol=1e-12)


def test_gradient_flow_agrees_with_small_step_gd(small_problem, small):
    p = small_problem
    q = init_params(p, small.gamma, [0])
    sched = Schedule.window(300, 600, 0.5, 1000)
    eta = 1e-3      # flow time 1.0; GD error is O(eta)
    steps_f, flow, _ = integrate_flow(p, q, sched, eta, [500, 1000], rtol=1e-9, atol=1e-12)
    steps_g, gd, _ = run_discrete(p, q, sched, eta, "gd", eval_every=500)
    for k in ("x", "rho", "m", "r"):
        np.testing.assert_allclose(gd[k][1:, 0], flow[k][:, 0], rtol=5e-3, atol=1e-3)


def test_decay_never_steps_over_a_window_edge(small_problem, small):
    """A short window between evaluation points still acts exactly once."""
    q = init_params(small_problem, small.gamma, [0, 0])
    short = Schedule.window(100.0, 100.5, 20.0, 300)
    none = Schedule.none(300)
    _, a, _ = integrate_flow(small_problem, q, [short, none], small.eta, [300])
    assert not np.allclose(a["m"][-1, 0], a["m"][-1, 1])


@pytest.mark.parametrize("targets", ["teacher", "permutation"])
def test_reduced_matches_full_early_and_reports_the_rest(targets):
    s = StylisedSetting(d=16, keys=4, anchors=4, train_pairs=10, gamma=0.1, targets=targets)
    w = reduced_window(s)
    early = 0.25 * min(w["t1_steps"][0], w["t2_steps"][0])
    ev = np.linspace(0, early, 6)
    out = reduced_vs_full(s, Schedule.none(int(early) + 1), eval_steps=ev, split_step=early)
    # memorization is exactly linear at small init: the reduced law holds early
    assert out["x_maxdiff_early"] < 0.02
    # outcome under a decay window: bilinear law vs full flow, and the paper's linear law
    sched = Schedule.window(2000, 4000, 1.0, 6000)
    bil = reduced_vs_full(s, sched, "bilinear")
    lin = reduced_vs_full(s, sched, "linear")
    gap_b = abs(bil["reasoning_fraction_reduced"][-1] - bil["reasoning_fraction_full"][-1])
    gap_l = abs(lin["reasoning_fraction_reduced"][-1] - lin["reasoning_fraction_full"][-1])
    assert np.isfinite(bil["rho_maxdiff_late"]) and np.isfinite(lin["rho_maxdiff_late"])
    assert gap_b < 0.05 and gap_b < gap_l


def test_ood_transfer_needs_non_orthogonal_anchors():
    """Held-out couplings move only through <b_o, b_p> = (u_j'.u_j)(u_i'.u_i): zero for
    orthonormal anchors (the held-out couplings keep their random init, so OOD reasoning is
    only the shared V seen through random couplings), not for unit ones."""
    from critwin.theory import Schedule, StylisedSetting, build_problem, init_params, integrate_flow
    from critwin.theory.flow import compress
    moved = {}
    for emb in ("orthonormal", "unit"):
        s = StylisedSetting(d=16, keys=6, anchors=5, train_pairs=15, eta=1e-2, embeddings=emb, seed=1)
        p = build_problem(s)
        q = init_params(p, 0.8, [0])
        _, _, end = integrate_flow(p, q, [Schedule.none(300)], s.eta, [0, 300])
        moved[emb] = np.abs(end.c_ood - compress(p, q).c_ood).max()
    assert moved["orthonormal"] < 1e-9 < 1e-3 < moved["unit"]


@pytest.mark.parametrize("emb", ["orthonormal", "unit"])
def test_invariant_subspace_flow_equals_the_dense_flow(emb):
    """Integrating Z and V in coordinates of their invariant span changes nothing but the cost:
    same trajectory as the d x K coordinates, and at most 2|P| + 1 dimensions when G = I."""
    from critwin.theory.flow import invariant_basis
    s = StylisedSetting(d=16, keys=4, anchors=4, train_pairs=6, eta=1e-2, embeddings=emb, seed=2)
    p = build_problem(s)
    q = init_params(p, [0.4, 1.1], [0, 1])
    sched = [Schedule.window(50, 150, 0.3, 300), Schedule.none(300)]
    ev = [0, 100, 200, 300]
    _, sub, end_s = integrate_flow(p, q, sched, s.eta, ev, rtol=1e-10, atol=1e-12)
    _, dense, end_d = integrate_flow(p, q, sched, s.eta, ev, rtol=1e-10, atol=1e-12, subspace=False)
    for k in sub:
        np.testing.assert_allclose(sub[k], dense[k], rtol=1e-7, atol=1e-9)
    for a, b in zip(end_s.full(), end_d.full()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    st = compress(p, q)
    basis = invariant_basis(p, *st.full(), kernel(p), max_share=1.0)
    n = basis.Q.shape[-1]
    assert (n <= 2 * len(p.pairs) + 1) if emb == "orthonormal" else n <= 16 * 4
    # the span is invariant: G maps it into itself
    Q = basis.Q[0]
    GQ = (Q.T.reshape(-1, 16, 4) @ kernel(p).G).reshape(-1, 64).T
    np.testing.assert_allclose(Q @ (Q.T @ GQ), GQ, atol=1e-9)
