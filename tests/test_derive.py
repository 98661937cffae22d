import numpy as np
import pytest

from critwin.theory import compute_rates, derive, init_params
from critwin.theory.rates import bilinear_gain, key_spectrum
from critwin.theory.stylised import Params, couplings, loss_and_grads

from helpers import finite_diff_hessian


def test_gamma_exponents_and_small_instance():
    d = derive()
    assert (d.gamma_exponent_m, d.gamma_exponent_r, d.gamma_exponent_gain) == (0, 2, 0)
    assert all(d.checks.values()), d.checks


def test_no_normalisation_gives_both_paper_rates():
    norms = derive().normalisations
    assert norms["pair/gram_mean"]["matches_paper_mu_m"]
    assert norms["sum/gram"]["matches_paper_mu_m"]
    assert norms["mean/gram_mean"]["matches_paper_mu_r"]
    assert not any(v["matches_paper_mu_m"] and v["matches_paper_mu_r"] for v in norms.values())
    assert {v["ratio_mu_r_over_mu_m"] for v in norms.values()} == {"P*c_r*gamma**2"}


def _loss_of(p, q, block, pair=0):
    def f(vec):
        r = q.copy()
        if block == "M":
            r.M[0, pair] = vec.reshape(r.M.shape[2:])
        else:
            r.W1[0] = vec.reshape(r.W1.shape[1:])
        return loss_and_grads(p, r)[0][0]
    return f


def _smallest_nonzero(H):
    ev = np.linalg.eigvalsh(H)
    return ev[ev > 1e-6 * ev.max()][0]


@pytest.mark.parametrize("loss_norm", ["sum", "pair", "mean"])
def test_symbolic_rates_equal_numerical_hessian(small, loss_norm):
    s = small.with_(loss_norm=loss_norm, d=5, keys=3)
    from critwin.theory import build_problem
    p = build_problem(s)
    q = init_params(p, s.gamma, [1])
    rates = compute_rates(s, problem=p)
    # L is quadratic in M and in W1 (W2 fixed): central differences are exact for any h
    hm = finite_diff_hessian(_loss_of(p, q, "M"), q.M[0, 0].ravel().copy(), h=0.5)
    assert _smallest_nonzero(hm) == pytest.approx(rates.mu_m, rel=1e-4)
    # W1 block with W2 frozen: alpha * sum_p c_p^2 * lambda_min+(E E^T) for this init
    hw = finite_diff_hessian(_loss_of(p, q, "W1"), q.W1[0].ravel().copy(), h=0.5)
    c = couplings(p, q.W2)[0]
    expect = p.alpha * np.sum(c**2) * key_spectrum(p.keys)[0]
    assert _smallest_nonzero(hw) == pytest.approx(expect, rel=1e-4)


def test_expected_mu_r_matches_average_over_inits(small_problem, small):
    p = small_problem
    q = init_params(p, small.gamma, np.arange(400))
    realised = p.alpha * np.sum(couplings(p, q.W2) ** 2, axis=1) * key_spectrum(p.keys)[0]
    assert realised.mean() == pytest.approx(compute_rates(small, problem=p).mu_r[0], rel=0.1)


def test_bilinear_gain_is_cross_hessian_at_saddle(small_problem):
    p = small_problem
    d = p.keys.shape[0]
    zero = Params(np.zeros((1, len(p.pairs), d, d)), np.zeros((1, d, d)), np.zeros((1, d, d)))
    # d gW1 / d W2 at the origin, column by column (the loss is cubic: exact with h = 1)
    cols = []
    for idx in range(d * d):
        q = zero.copy()
        q.W2[0].flat[idx] = 1.0
        cols.append(loss_and_grads(p, q)[1].W1[0].ravel())
    A = np.array(cols).T
    assert np.linalg.svd(A, compute_uv=False)[0] == pytest.approx(bilinear_gain(p), rel=1e-8)
