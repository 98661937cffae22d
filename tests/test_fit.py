import json

import numpy as np
import pandas as pd
import pytest

from critwin.cli.main import main
from critwin.bridge.fit import RATE_LAWS, LawFit, held_out_test, law_shape
from critwin.bridge.observed import observed_times, timescales
from critwin.empirical import RunStore, load_runs
from critwin.empirical.sweep import LocalExecutor, SweepSpec, run_sweep
from critwin.errors import ConfigError
from critwin.theory import StylisedSetting

SETTING = StylisedSetting(targets="permutation")
GAMMAS = np.array([0.5, 0.65, 0.8, 0.95, 1.1])


@pytest.mark.parametrize("law", RATE_LAWS)
def test_each_law_wins_on_its_own_data(law):
    truth = 700.0 * law_shape(law, GAMMAS, SETTING)
    rng = np.random.default_rng(0)
    table = pd.DataFrame([(g, t * np.exp(rng.normal(0, 0.02))) for g, t in zip(GAMMAS, truth) for _ in range(3)],
                         columns=["gamma", "value"])
    res = held_out_test(table, [0.8], setting=SETTING)
    assert res["better_law"] == law and res["held_out"] == 4
    assert res["scores"][law]["mean_abs_log_error"] < 0.05
    assert [r["role"] for r in res["rows"]] == ["held-out", "held-out", "fit", "held-out", "held-out"]


def test_fit_prefactor_is_log_mean_and_predict_scales():
    f = LawFit("gamma^-2", SETTING).fit([0.8, 0.8], [100.0, 400.0])
    assert f.prefactor_ == pytest.approx(200.0 * 0.64)
    assert f.predict([0.4])[0] == pytest.approx(200.0 * 4)


def test_log_law_is_flatter_than_gamma_minus_two():
    s = law_shape("log(1/gamma)", GAMMAS, SETTING)
    assert np.all(np.diff(s) < 0)                      # smaller init, later escape
    ratio = s[0] / s[-1]
    assert 1 < ratio < (1.1 / 0.5) ** 2                # but far less than the gamma^-2 ratio


def test_bad_law_and_fit_gamma_are_named():
    with pytest.raises(ConfigError, match="law"):
        LawFit("cubic")
    table = pd.DataFrame({"gamma": [0.5, 1.1], "value": [10.0, 20.0]})
    with pytest.raises(ConfigError, match="fit_gamma"):
        held_out_test(table, [0.8], setting=SETTING)
    with pytest.raises(ConfigError, match="gamma"):
        law_shape("gamma^-2", [0.0], SETTING)


@pytest.fixture(scope="module")
def gamma_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("gammas")
    spec = SweepSpec({"d": 16, "steps": 200, "batch_size": 32, "eval_every": 20, "wd": 0.5, "wd_width": 40,
                      "lr": 1e-2},
                     {"gamma": [0.5, 0.8], "wd_window_start": [0, 80, 160]})
    run_sweep(spec.expand(), RunStore(path), LocalExecutor(2), progress=False)
    return path


def test_observed_times_match_the_run_timescales(gamma_store):
    ts = timescales(load_runs(gamma_store), ood_level=0.07)
    (mem,) = observed_times(gamma_store, "memorization", mem_level=0.1).values()
    ts10 = timescales(load_runs(gamma_store), mem_level=0.1).set_index("run_id")
    for _, r in mem.iterrows():       # only runs whose decay starts after they memorized
        onset = RunStore(gamma_store).load(r.run_id).config["wd_windows"][0][0]
        assert r.value == ts10.loc[r.run_id, "memorization_step"] and onset >= r.value
    (key, rea), = observed_times(gamma_store, "reasoning", ood_level=0.07).items()
    assert key == ("decoupled/matrices", "decay 0.5", "width 40") and len(rea) == 6
    starts = RunStore(gamma_store)
    for _, r in rea.iterrows():
        onset = starts.load(r.run_id).config["wd_windows"][0][0]
        expected = ts.set_index("run_id").loc[r.run_id, "reasoning_step"] - onset
        assert (np.isnan(r.value) and np.isnan(expected)) or r.value == expected
    with pytest.raises(ConfigError, match="quantity"):
        observed_times(gamma_store, "stages")


def test_bridge_fit_cli(capsys, gamma_store, tmp_path):
    code = main(["bridge", "fit", "--store", str(gamma_store), "--quantity", "memorization", "--fit-gamma", "0.8",
                 "--mem-level", "0.1", "--out", str(tmp_path), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and len(d["results"]) == 1
    res = d["results"][0]
    assert {r["gamma"] for r in res["rows"]} == {0.5, 0.8} and set(res["scores"]) == set(RATE_LAWS)
    assert (tmp_path / "bridge_fit_memorization.png").stat().st_size > 1000


def test_recipe_from_embeddings_matches_the_setting_recipe():
    from critwin.theory import build_problem
    from critwin.theory.windows import recipe_from_embeddings, recipe_window
    s = StylisedSetting()
    p = build_problem(s)
    a = recipe_window(s, [0.5, 0.8])
    b = recipe_from_embeddings(p.keys, p.anchors, p.pairs, [0.5, 0.8], s.eta, s.delta)
    np.testing.assert_allclose(b["t1_steps"], a["t1_steps"])
    np.testing.assert_allclose(b["t2_steps"], a["t2_steps"])
    with pytest.raises(ConfigError, match="eta"):
        recipe_from_embeddings(p.keys, p.anchors, p.pairs, 0.8, 0.0)


def test_run_recipe_reads_the_runs_initial_embeddings():
    from critwin.bridge.compare import run_recipe
    from critwin.empirical.sweep import config_from_flat
    from critwin.empirical.train import initial_model
    cfg = config_from_flat({"d": 32, "gamma": 0.8, "seed": 3, "steps": 10})
    model, data = initial_model(cfg)
    E = model.tok.weight.detach().double().numpy()[:16]                 # 16 keys x d
    lam = np.linalg.eigvalsh(E @ E.T).min()                              # K < d: all nonzero
    res = run_recipe(cfg)
    assert res["sigma_e"] == pytest.approx(lam, rel=1e-9)
    assert res["t1_steps"][0] == pytest.approx(np.log(2) / cfg.lr / lam, rel=1e-9)
    assert run_recipe(cfg)["t2_steps"][0] == res["t2_steps"][0]          # same seed, same init
    assert run_recipe(config_from_flat({"d": 32, "seed": 4, "steps": 10}))["sigma_e"] != res["sigma_e"]


def test_decay_budget_is_rise_times_per_step_decay(gamma_store):
    from critwin.bridge.observed import decay_budget_at_rise
    b = decay_budget_at_rise(gamma_store, ood_level=0.07)
    assert set(b.gamma) == {0.5, 0.8} and (b.runs == 3).all()
    assert np.allclose(b.per_step, 1e-2 * 0.5)
    ok = b.reached > 0
    np.testing.assert_allclose(b.budget[ok], b.rise_steps[ok] * 5e-3)
