import numpy as np
import pytest

from critwin.theory import (ConfigError, basin, budget_comparison, compare_laws, compute_rates,
                            paper_bound, predict)
from critwin.theory.windows import onset_window

KEYS = {"sigma_e", "c_r", "mu_m", "mu_r", "t1_steps", "t2_steps", "method"}


def test_recipe_reads_sigma_e_and_c_r_off_the_settings_own_embeddings():
    """sigma_e and c_r against numpy on the setting's embeddings (the default definition `gram`: the
    smallest nonzero eigenvalue of sum_k e_k e_k^T, on the keys' span; mean |u_i|^2 |u_j|^2 / d over
    the training pairs), and the
    paper's half times from them: t1 = ln 2 / (mu_m eta), t2 = ln 2 / (c_r gamma^2 sigma_e eta)."""
    from critwin.theory import StylisedSetting, build_problem
    s = StylisedSetting()
    (row,) = predict(s, 0.8, "recipe")
    p = build_problem(s)
    E = p.keys                                                 # (d, K), columns e_k
    eig = np.linalg.eigvalsh(E @ E.T)                            # sum e_k e_k^T, d x d
    sigma = eig[eig > 1e-9 * eig.max()].min()
    U = p.anchors
    c_r = np.mean([(U[:, i] @ U[:, i]) * (U[:, j] @ U[:, j]) for i, j in p.pairs]) / s.d
    assert row["c_r"] == pytest.approx(c_r, rel=1e-9)
    assert row["sigma_e"] == pytest.approx(sigma, rel=1e-6)
    assert row["t1_steps"] == pytest.approx(np.log(2) / (row["mu_m"] * s.eta), rel=1e-9)
    assert row["t2_steps"] == pytest.approx(np.log(2) / (row["c_r"] * 0.8 ** 2 * sigma * s.eta), rel=1e-6)
    assert round(row["t1_steps"]) == 231 and round(row["t2_steps"], -2) == 23100      # the paper's setting


@pytest.mark.parametrize("method", ["recipe", "reduced", "full"])
def test_predict_rows_have_keys(small, method):
    rows = predict(small, [0.5, 1.0], method, total=400, width=100, onsets=[0, 150, 300], wd=0.5)
    assert len(rows) == 2 and all(KEYS <= set(r) for r in rows)
    assert all(r["method"] == method for r in rows)
    if method != "recipe":
        assert all(len(r["fractions"]) == 3 for r in rows)


def test_onset_window_edges():
    assert onset_window([0, 100, 200, 300], [0.1, 0.6, 0.7, 0.2], 0.5) == (100, 200)
    assert all(np.isnan(onset_window([0, 100], [0.1, 0.2], 0.5)))


def test_budget_comparison_rows(small):
    rows = budget_comparison(small, budget=2.0, width=100, total=400)
    by = {r["placement"]: r for r in rows}
    assert set(by) == {"early", "middle", "late", "constant", "none"}
    for k in ("early", "middle", "late", "constant"):
        assert by[k]["budget"] == pytest.approx(2.0)
    assert by["none"]["budget"] == 0


def test_basin_and_bound(small):
    rows = basin(small, [0.3, 1.0], seeds=3, steps=200)
    assert [r["seeds"] for r in rows] == [3, 3]
    assert all(0 <= r["fraction_reached"] <= 1 for r in rows)
    b = paper_bound(small, [0.5, 1.0, 2.0], 10**7)
    assert np.all(np.diff(b) >= 0) and np.all((b >= 0) & (b <= 1))  # more init, higher bound
    with pytest.raises(ConfigError, match="seeds"):
        basin(small, [0.5], seeds=0, steps=10)


def test_escape_law_report(small):
    out = compare_laws(small, [0.05, 0.2, 0.8, 1.5], horizon=3000)
    assert {r["closer_prediction"] for r in out["rows"]} <= {"gamma^-2", "log(1/gamma)", "n/a"}
    assert set(out["fits"]) == {"gamma^-2", "log(1/gamma)"}
    lazy = [r["lazy_pred_steps"] for r in out["rows"]]
    assert lazy[0] / lazy[2] == pytest.approx((0.8 / 0.05) ** 2, rel=1e-3)


def test_bad_method_and_gamma(small):
    with pytest.raises(ConfigError, match="method"):
        predict(small, 0.8, "oracle")
    with pytest.raises(ConfigError, match="gamma"):
        compute_rates(small, [0.5, -0.1])
    with pytest.raises(ConfigError, match="sigma_def"):
        predict(small.with_(sigma_def="literal"), 0.8, "recipe")


def test_full_prediction_reports_the_spread_over_inits():
    from critwin.theory import StylisedSetting, predict
    s = StylisedSetting(d=8, keys=4, anchors=4, train_pairs=10, gamma=0.5, eta=1e-2, embeddings="unit", seed=3)
    (one,) = predict(s, 0.5, "full", width=100, wd=2.0, total=400, onsets=[0, 100, 300], seed=0)
    (many,) = predict(s, 0.5, "full", width=100, wd=2.0, total=400, onsets=[0, 100, 300], seed=0, init_seeds=5)
    singles = [predict(s, 0.5, "full", width=100, wd=2.0, total=400, onsets=[0, 100, 300], seed=i)[0]["fractions"]
               for i in range(5)]
    np.testing.assert_allclose(many["fractions"], np.median(singles, axis=0))
    np.testing.assert_allclose(many["fractions_q10"], np.quantile(singles, 0.1, axis=0))
    assert 0.0 <= many["share_of_inits_with_window"] <= 1.0
    import pytest
    from critwin.errors import ConfigError
    with pytest.raises(ConfigError, match="init_seeds"):
        predict(s, 0.5, "full", init_seeds=0)


def test_full_prediction_reports_progress_in_steps():
    from critwin.theory import StylisedSetting, predict
    s = StylisedSetting(d=8, keys=4, anchors=4, train_pairs=10, gamma=0.5, eta=1e-2, embeddings="unit", seed=3)
    seen = []
    predict(s, 0.5, "full", width=100, wd=2.0, total=400, onsets=[0, 300], init_seeds=2, progress=seen.append)
    assert sum(seen) == 2 * 400 and len(seen) > 2


def test_recipe_adamw_lands_near_adamw_own_memorization_time():
    """The recipe's t1 divided by AdamW's speed-up should be AdamW's own memorization time on the
    stylised model (measured here directly by discrete AdamW steps), where the plain recipe is
    off by that speed-up."""
    from critwin.theory import Schedule, StylisedSetting, build_problem, init_params, run_discrete
    from critwin.theory.optimizers import crossing_step
    from critwin.theory.windows import predict
    s = StylisedSetting(d=16, keys=4, anchors=4, train_pairs=10, eta=1e-2)
    (row,) = predict(s, 0.8, "recipe_adamw")
    (plain,) = predict(s, 0.8, "recipe")
    p = build_problem(s)
    st, tr, _ = run_discrete(p, init_params(p, [0.8], [0]), Schedule.none(3000), s.eta, "adamw", eval_every=1)
    t1_adam = crossing_step(st, tr["x"][:, 0], 1 - s.delta)
    assert row["t1_steps"] == pytest.approx(t1_adam, rel=0.3)
    assert abs(np.log(plain["t1_steps"] / t1_adam)) > 2 * abs(np.log(row["t1_steps"] / t1_adam))
    assert "AdamW's speed-up" in row["assumes"]
