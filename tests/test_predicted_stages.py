"""Predicted stages: the readout's closed-form flow against numerical integration and least
squares, and the Alchemy context features against the chemistry itself."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from critwin.bridge.predicted_stages import BLOCKS, context_features, predict_stages
from critwin.errors import ConfigError
from critwin.theory.readout_stages import LinearReadoutFlow, half_rise_time, stage_order


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6)) * np.array([3.0, 1.0, 1.0, 0.3, 0.1, 0.0])   # one dead feature
    Y = X @ rng.normal(size=(6, 4)) + 0.1 * rng.normal(size=(200, 4))
    return X, Y


def test_flow_matches_numerical_integration(regression):
    X, Y = regression
    flow = LinearReadoutFlow().fit(X, Y)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    sxx, syx = Xc.T @ Xc / len(X), Yc.T @ Xc / len(X)
    k, p = syx.shape
    sol = solve_ivp(lambda t, w: (syx - w.reshape(k, p) @ sxx).ravel(), (0, 7.0), np.zeros(k * p),
                    t_eval=[0.5, 7.0], rtol=1e-10, atol=1e-12)
    for i, t in enumerate(sol.t):
        assert np.allclose(flow.weights(t), sol.y[:, i].reshape(k, p), atol=1e-7)


def test_flow_ends_at_least_squares(regression):
    X, Y = regression
    flow = LinearReadoutFlow().fit(X, Y)
    live = X[:, :5]          # the dead feature has zero variance: its weight stays 0
    beta = np.linalg.lstsq(live - live.mean(0), Y - Y.mean(0), rcond=None)[0].T
    assert np.allclose(flow.weights(1e9)[:, :5], beta, atol=1e-6)
    assert np.allclose(flow.weights(1e9)[:, 5], 0.0)
    assert np.allclose(flow.scores(X, 0.0), Y.mean(0))          # nothing learned at t = 0
    assert flow.timescales()[0] < flow.timescales()[-1]


def test_orders_and_rises():
    assert stage_order({"A": 1.0, "B": 5.0, "C": 5.0, "D": float("nan")}) == "A < B = C"
    t = np.array([1.0, 2.0, 3.0, 4.0])
    assert half_rise_time(t, [0.1, 0.2, 0.6, 0.9]) == 3.0
    assert np.isnan(half_rise_time(t, [0.5, 0.5, 0.51, 0.5]))
    with pytest.raises(ConfigError):
        LinearReadoutFlow().fit(np.zeros((1, 3)), np.zeros((1, 2)))
    with pytest.raises(ConfigError):
        LinearReadoutFlow().fit(*[np.ones((3, 2))] * 2).weights(-1.0)


def test_context_features_match_the_chemistry():
    """Brute force from the chemistry, not the support: in the withheld task every stone occurs
    equally often in the support, and the query stone is linked to its neighbours along the two
    shown axes (one of each shown pair moves it; the other leaves it where it is)."""
    from critwin.empirical.tasks.alchemy import AlchemyTask, N_CLASSES, stone_class
    from critwin.empirical.tasks.alchemy_chemistry import POTIONS, corner
    eps = AlchemyTask("withheld", None, 0, max_chemistries=3).episodes()["test"]
    F = context_features(eps)
    assert F.shape == (24, 3 * N_CLASSES + len(POTIONS))
    row = 0
    for ep in eps:
        cls = [stone_class(ep.chemistry, corner(i)) for i in range(8)]
        for q in ep.queries:
            ctx, query, pot, links = np.split(F[row], np.cumsum([N_CLASSES, N_CLASSES, len(POTIONS)]))
            assert np.allclose(ctx[cls], 1 / 8) and np.isclose(ctx.sum(), 1)
            assert query.argmax() == stone_class(ep.chemistry, q.start) and query.sum() == 1
            assert pot[POTIONS.index(q.potions[0])] == 1 and pot.sum() == 1
            moved = [ep.chemistry.apply(q.start, p) for p in POTIONS if p not in ep.withheld]
            shown = {stone_class(ep.chemistry, m) for m in moved if m != tuple(q.start)}
            assert len(shown) == 2
            assert set(np.flatnonzero(links)) == shown and np.isclose(links.sum(), 1)
            row += 1
    assert context_features(eps, ("query",)).shape == (24, N_CLASSES)
    with pytest.raises(ConfigError) as e:
        context_features(eps, ("query", "tokens"))
    assert e.value.field == "features"


def test_predicted_stages_of_a_small_task():
    r = predict_stages("composition", 2, chemistries=20, times=np.geomspace(0.1, 1e4, 15))
    assert list(r["curves"].columns[:4]) == ["t", "event_a", "event_b", "event_c"] and len(r["curves"]) == 15
    assert r["curves"].event_a.iloc[0] < r["curves"].event_a.iloc[-1]       # something is learned
    assert (r["curves"].event_c <= r["curves"].event_a + 1e-12).all()       # C implies A, by construction
    assert set(r["stage_times"]) == {"A", "B", "C", "B|A", "C|AB"} and r["features"] == list(BLOCKS)
    assert set(r["changepoint_times"]) == set(r["stage_times"])
    a = r["changepoint_times"]["A"]          # A rises: its last rise completes inside the traced times
    assert 0.1 < a <= 1e4 and r["curves"].event_a[r["curves"].t >= a].iloc[0] > r["curves"].event_a.iloc[0]


def test_theory_stages_command(capsys, tmp_path):
    import json

    from critwin.cli.main import main
    code = main(["theory", "stages", "--task", "decomposition", "--hops", "2", "--chemistries", "10",
                 "--features", "context,links", "--out-csv", str(tmp_path / "c.csv"), "--out", str(tmp_path), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["rows"][0]["task"] == "alchemy_decomposition_h2" and d["features"] == ["context", "links"]
    assert (tmp_path / "c.csv").exists() and (tmp_path / "predicted_stages_decomposition.png").exists()
    for argv, field in ((["--task", "withheld", "--hops", "2"], "hops"), (["--features", "tokens"], "features")):
        code = main(["theory", "stages", *argv, "--chemistries", "5", "--no-figure", "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 2 and out["field"] == field


def test_compare_stages_orders_ranks_and_timescale():
    import pandas as pd

    from critwin.bridge.predicted_stages import compare_stages
    pred = [{"task": "alchemy_composition_h2", "variant": "composition", "hops": 2,
             "stage_times": {"A": 1.0, "B": 10.0, "C": 100.0}},
            {"task": "alchemy_withheld", "variant": "withheld", "hops": None,
             "stage_times": {"A": 2.0, "B": 20.0, "C": float("nan")}},
            {"task": "alchemy_decomposition_h5", "variant": "decomposition", "hops": 5,
             "stage_times": {"A": 1.0, "B": 2.0, "C": 3.0}}]          # no runs: left out
    obs = pd.DataFrame([("alchemy_composition", 2, m, v) for m, v in
                        (("event_a", 100.0), ("event_b", 1000.0), ("event_c", 10000.0))] +
                       [("alchemy_withheld", np.nan, m, v) for m, v in
                        (("event_a", 1000.0), ("event_b", 200.0), ("event_c", float("nan")))],
                       columns=["task", "hops", "metric", "median"])
    res = compare_stages(pred, obs)
    assert res["conditions"] == 2 and res["orders_agree"] == 1
    assert [r["observed_order"] for r in res["rows"]] == ["A < B < C", "B < A"]
    assert len(res["pairs"]) == 5                                   # C of withheld: predicted never
    logs = np.log([100 / 1, 1000 / 10, 10000 / 100, 1000 / 2, 200 / 20])
    assert np.isclose(res["steps_per_flow_time"], np.exp(logs.mean()))
    assert np.isclose(res["log_residual_sd"], logs.std())
    with pytest.raises(ConfigError):
        compare_stages(pred[2:], obs)
    for r in pred:                            # timed by change points: the predictions' own change-point times
        r["changepoint_times"] = {k: 2 * v for k, v in r["stage_times"].items()}
    cp = compare_stages(pred, obs, "changepoint")
    assert np.isclose(cp["steps_per_flow_time"], res["steps_per_flow_time"] / 2) and cp["orders_agree"] == 1


def test_bridge_stages_command_by_change_points(tmp_path, capsys):
    """A stored composition run whose A rises 0.4 -> 0.75 at step 1,500 (below the 0.95 level, as
    at cpu size): the threshold rule sees no stage, change points time it to within a tenth (they
    work on a log-time grid)."""
    import json

    import pandas as pd

    from critwin.cli.main import main
    from critwin.empirical import Run, RunStore
    from critwin.paper_checks import CHECKS
    cfg = next(c for (name, _, s), c in CHECKS["S3"].configs("cpu").items() if name.endswith("h2") and s == 0)
    steps = np.arange(0, 4001, 100)
    curves = {"event_a": np.where(steps >= 1500, 0.75, 0.4), "event_b": np.where(steps >= 1500, 0.7, 0.3),
              "event_c": np.full(len(steps), 0.1)}
    rows = [(int(t), "test", m, float(v)) for m, c in curves.items() for t, v in zip(steps, c)]
    RunStore(tmp_path / "runs").save(Run(cfg.resolved(), pd.DataFrame(rows, columns=["step", "split", "metric", "value"]),
                                         {"status": "complete", "final": {}}, {}))
    common = ["bridge", "stages", "--store", str(tmp_path / "runs"), "--chemistries", "10", "--no-figure", "--json"]
    assert main(common) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["obs_step_A"] is None       # nan: never
    assert main(common + ["--method", "changepoint"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["task"] == "alchemy_composition_h2" and abs(row["obs_step_A"] - 1500) <= 150
    assert row["obs_step_C"] is None                        # C never rises


def test_predicted_times_use_the_observed_rule():
    """Stage times: the level (0.95 for A, 0.90 otherwise) held at 3 grid points in a row, found by hand;
    the order is read from those times, not from the half-rise times."""
    r = predict_stages("withheld", None, chemistries=20, times=np.geomspace(1e-2, 1e4, 40))
    levels = {"A": ("event_a", 0.95), "B": ("event_b", 0.9), "C": ("event_c", 0.9),
              "B|A": ("p_b_given_a", 0.9), "C|AB": ("p_c_given_ab", 0.9)}
    for k, (col, tau) in levels.items():
        ok = r["curves"][col].fillna(0.0).to_numpy() >= tau
        hits = [i for i in range(len(ok) - 2) if ok[i] and ok[i + 1] and ok[i + 2]]
        want = r["curves"].t.iloc[hits[0]] if hits else float("nan")
        assert (np.isnan(want) and np.isnan(r["stage_times"][k])) or r["stage_times"][k] == want
    done = sorted((v, k) for k, v in r["stage_times"].items() if k in ("A", "B", "C") and np.isfinite(v))
    assert [x for x in r["order"].replace("=", "<").split(" < ") if x] == [k for _, k in done]
