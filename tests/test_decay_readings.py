"""Decay readings: the L2 penalty through the optimizer, decayed sets, head bias, run ids."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from critwin.cli.main import main
from critwin.paper_checks.readings import NO_DECAY, Reading, score, select_rows
from critwin.empirical import TrainConfig, train
from critwin.empirical.interventions import add_l2_grad
from critwin.empirical.models import ModelConfig, Transformer
from critwin.empirical.sweep import SweepSpec
from critwin.errors import ConfigError
from critwin.paper_checks import CHECKS
from critwin.paper_checks.base import variance_split

from helpers import save_fake_run

TINY = dict(model=ModelConfig(d=16), steps=40, batch_size=32, eval_every=20)
RESULTS = Path(__file__).resolve().parents[1] / "paper_checks" / "results"


def _model(**kw):
    torch.manual_seed(0)
    return Transformer(ModelConfig(d=16, **kw), vocab_size=24, seq_len=3)


@pytest.mark.parametrize("which", ["matrices", "non_embedding", "all"])
def test_l2_gradient_equals_autograd_of_the_penalised_loss(which):
    m = _model(head_bias=True)
    x, y = torch.randint(0, 24, (8, 3)), torch.randint(0, 24, (8,))
    lam = 0.37
    params = m.decayed_parameters(which)
    loss = F.cross_entropy(m(x), y) + 0.5 * lam * sum((p ** 2).sum() for p in params)
    expected = torch.autograd.grad(loss, list(m.parameters()))
    m.zero_grad()
    F.cross_entropy(m(x), y).backward()
    add_l2_grad(params, lam)
    for p, g in zip(m.parameters(), expected):
        torch.testing.assert_close(p.grad, g)


def test_decayed_sets_by_parameter_name():
    m = _model(head_bias=True)
    names = {id(p): n for n, p in m.named_parameters()}
    sets = {w: {names[id(p)] for p in m.decayed_parameters(w)} for w in ("matrices", "non_embedding", "all")}
    assert sets["all"] == set(names.values())
    assert sets["non_embedding"] == set(names.values()) - {"tok.weight", "pos.weight"}
    assert sets["matrices"] == {n for n in names.values() if n.endswith("weight") and "ln" not in n
                                and n not in ("tok.weight", "pos.weight")}
    assert "unembed.bias" in sets["non_embedding"] and "unembed.bias" not in sets["matrices"]
    with pytest.raises(ConfigError, match="decay_set"):
        m.decayed_parameters("biases")


def test_head_bias_is_an_option():
    assert _model().unembed.bias is None
    m = _model(head_bias=True)
    assert m.unembed.bias.shape == (24,) and float(m.unembed.bias.detach().abs().sum()) == 0.0
    assert any(p is m.unembed.bias for p in m.components()["unembed"])
    with pytest.raises(ConfigError, match="head_bias"):
        ModelConfig(head_bias="yes")


def test_old_run_ids_keep_their_meaning():
    """Runs stored before the readings existed: same id, read back as decoupled/matrices/no bias."""
    committed = json.loads((RESULTS / "W2_paper_decoupled_matrices.json").read_text())
    ids = {r["value"]: r["run_ids"] for r in committed["rows"]}
    decoupled = {"decay_form": "decoupled", "decay_set": "matrices"}
    for (name, t, s), cfg in CHECKS["W2"].configs("paper", seeds=3, task_seeds=1, reading=decoupled).items():
        assert cfg.run_id() == ids[name][s]
        assert (cfg.decay_form, cfg.decay_set, cfg.model.head_bias) == ("decoupled", "matrices", False)
    # the paper's reading, now the checks' default, finds the runs stored under it by name
    committed = json.loads((RESULTS / "W2_paper.json").read_text())
    assert committed["reading"] == "l2/non_embedding"
    ids = {r["value"]: r["run_ids"] for r in committed["rows"]}
    for (name, t, s), cfg in CHECKS["W2"].configs("paper").items():      # 3 instances x 3 seeds, in that order
        assert cfg.run_id() == ids[name][t * committed["seeds"] + s]
        assert not cfg.wd_windows or (cfg.decay_form, cfg.decay_set) == ("l2", "non_embedding")   # no decay: shared
    old = {k: v for k, v in TrainConfig().resolved().items() if k not in ("decay_form", "decay_set")}
    old["model"] = {k: v for k, v in old["model"].items() if k != "head_bias"}
    assert TrainConfig.from_dict(old) == TrainConfig()


def test_every_reading_changes_the_run_id_and_no_decay_is_one_run():
    w = ((0.0, 20.0, 0.1),)
    ids = {TrainConfig(**TINY, wd_windows=w, decay_form=f, decay_set=s).run_id()
           for f in ("decoupled", "l2") for s in ("matrices", "non_embedding", "all")}
    assert len(ids) == 6
    assert TrainConfig(**TINY, decay_form="l2", decay_set="all").run_id() == TrainConfig(**TINY).run_id()
    assert TrainConfig(**TINY).with_model(head_bias=True).run_id() != TrainConfig(**TINY).run_id()
    with pytest.raises(ConfigError, match="decay_form"):
        TrainConfig(decay_form="l1")


def test_l2_training_is_deterministic_and_differs_from_decoupled():
    w = ((0.0, 40.0, 0.5),)
    a = train(TrainConfig(**TINY, wd_windows=w, decay_form="l2", decay_set="non_embedding"), progress=False)
    b = train(TrainConfig(**TINY, wd_windows=w, decay_form="l2", decay_set="non_embedding"), progress=False)
    c = train(TrainConfig(**TINY, wd_windows=w), progress=False)
    pd.testing.assert_frame_equal(a.metrics, b.metrics)
    assert a.config["decay_form"] == "l2" and a.config["decay_set"] == "non_embedding"
    assert a.summary["final"]["weight_norm"] != c.summary["final"]["weight_norm"]


def test_l2_with_plain_sgd_is_the_decoupled_shrink_to_first_order():
    """SGD without momentum: theta - lr (g + lam theta) vs (theta - lr g)(1 - lr lam); they differ by lr^2 lam g."""
    base = dict(TINY, optimizer="sgd", momentum=0.0, lr=0.05, steps=20, eval_every=20)
    w = ((0.0, 20.0, 0.2),)
    a = train(TrainConfig(**base, wd_windows=w, decay_form="l2"), progress=False).summary["final"]
    b = train(TrainConfig(**base, wd_windows=w), progress=False).summary["final"]
    n = train(TrainConfig(**base), progress=False).summary["final"]
    assert abs(a["weight_norm"] - b["weight_norm"]) < 1e-3 * abs(n["weight_norm"] - b["weight_norm"]) + 1e-4


def test_sweep_and_cli_take_the_reading(tmp_path, capsys):
    spec = SweepSpec({"steps": 40, "d": 16, "batch_size": 32, "wd": 0.1, "wd_window": "0:20"},
                     {"decay_form": ["decoupled", "l2"], "head_bias": [False, True]})
    cfgs = spec.expand()
    assert {(c.decay_form, c.model.head_bias) for c in cfgs} == {("decoupled", False), ("decoupled", True),
                                                               ("l2", False), ("l2", True)}
    with pytest.raises(ConfigError, match="decay_set"):
        SweepSpec({"decay_set": "weights", "wd": 0.1}).expand()
    code = main(["train", "anchor", "--steps", "20", "--d", "16", "--batch-size", "32", "--wd", "0.1",
                 "--wd-window", "0:10", "--decay-form", "l2", "--decay-set", "all", "--head-bias",
                 "--store", str(tmp_path), "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["config"]["decay_form"] == "l2" and d["config"]["decay_set"] == "all"
    assert d["config"]["model"]["head_bias"] is True


def test_reading_parse_and_labels():
    r = Reading.parse("decoupled/matrices x333.3333333")
    assert (r.decay_form, r.decay_set, r.wd_scale) == ("decoupled", "matrices", 333.3333333)
    assert Reading.parse("l2/non_embedding/bias").label == "l2/non_embedding/bias"
    for r in (Reading("decoupled", "matrices", 1000 / 3), Reading("decoupled", "matrices", 333.3333333),
              Reading("l2", "all", 2.5, True)):
        assert Reading.parse(r.label) == r                  # a label reads back to its reading
    assert Reading("decoupled", "matrices", 1000 / 3).label == "decoupled/matrices x1000/3"
    for bad, field in (("l2", "reading"), ("l3/matrices", "decay_form"), ("l2/matrices xbig", "reading"),
                       ("l2/matrices x1/0", "reading")):
        with pytest.raises(ConfigError, match=field):
            Reading.parse(bad)


def test_variance_split_against_a_hand_computation():
    # instances A: 0.1, 0.3 (mean 0.2); B: 0.8, 0.8 (mean 0.8); grand mean 0.5
    # total SS = 0.16 + 0.04 + 0.09 + 0.09 = 0.38; between = 2 * 0.09 + 2 * 0.09 = 0.36
    s = variance_split([0.1, 0.3, 0.8, 0.8], ["A", "A", "B", "B"])
    assert s["instance_share"] == pytest.approx(0.36 / 0.38) and s["seed_share"] == pytest.approx(0.02 / 0.38)
    assert variance_split([0.1, 0.5, 0.9], [0, 1, 2])["instance_share"] is None   # one seed each: no split


def test_readings_score_against_a_hand_computation():
    rows = [("W2", "no decay"), ("W2", "window [0,5000) 4e-3"), ("W1", "window [5000,10000) 4e-3")]
    assert select_rows("rank")[0] == NO_DECAY and len(select_rows("all", ("W1",))) == 3
    vals = {"no decay": [0.1, 0.2], "window [0,5000) 4e-3": [0.6, 0.8], "window [5000,10000) 4e-3": [0.9, 0.95]}
    recs = [{"reading": "r", "claim": c, "variant": v, "task_seed": t, "seed": 0, "run_id": f"{v}{t}",
             "window_at_0": v.startswith("window [0,"), "measured": vals[v][t]} for c, v in rows for t in (0, 1)]
    table, rank = score(pd.DataFrame(recs))
    got = table.set_index(["hypothesis", "variant"])
    # as measured: |0.15 - 0.151|, |0.7 - 0.151|, |0.925 - 0.931|
    assert got.loc[("as measured", "window [0,5000) 4e-3"), "distance"] == pytest.approx(0.549)
    as_measured = rank.set_index("hypothesis").loc["as measured"]
    assert as_measured["score"] == pytest.approx((0.001 + 0.549 + 0.006) / 3)
    assert as_measured["within"] == 2
    # onset 0 = no decay: the early row becomes the no-decay runs (mean 0.15)
    hyp = rank.set_index("hypothesis").loc["onset 0 = no decay"]
    assert hyp["score"] == pytest.approx((0.001 + 0.001 + 0.006) / 3) and hyp["within"] == 3
    assert rank.iloc[0]["hypothesis"] == "onset 0 = no decay"


def test_readings_command_on_a_store_of_known_outcomes(tmp_path, capsys):
    """Runs with hand-set final OOD under two readings: the command ranks the closer one first."""
    from critwin.paper_checks.readings import plan
    from critwin.empirical import RunStore
    readings = [Reading.parse("l2/non_embedding"), Reading.parse("decoupled/matrices")]
    paperlike = {"no decay": 0.15, "window [0,5000) 4e-3": 0.15, "window [5000,10000) 4e-3": 0.93,
                 "onset 400": 0.93, "lambda 0.01": 0.1}
    store = RunStore(tmp_path / "runs")
    for (label, cid, variant, t, s), cfg in plan(readings, select_rows("rank"), 1, 1).items():
        ood = paperlike[variant] if label.startswith("l2") or variant == "no decay" else 0.6
        save_fake_run(store, cfg, ood)
    code = main(["readings", "--reading", "l2/non_embedding", "--reading", "decoupled/matrices",
                 "--task-seeds", "1", "--store", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["missing_runs"] == 0
    best = d["ranking"][0]
    assert best["reading"] == "l2/non_embedding" and best["within"] == 5
    assert best["score"] == pytest.approx((0.001 + 0.001 + 0.001 + 0.002 + 0.005) / 5)
    worst = [r for r in d["ranking"] if r["reading"] == "decoupled/matrices" and r["hypothesis"] == "as measured"][0]
    assert worst["score"] == pytest.approx((0.001 + 0.449 + 0.331 + 0.328 + 0.495) / 5)
    assert (tmp_path / "out" / "readings.png").stat().st_size > 1000
    assert main(["readings", "--store", str(tmp_path / "nowhere")]) == 2
    assert "store" in capsys.readouterr().err


def test_decay_mechanism_against_a_hand_computed_adam_step():
    """One Adam step on one scalar: v_hat = g^2, so the L2 shrink per unit lambda is lr / (|g| + eps)."""
    from critwin.empirical.metrics import decay_mechanism
    theta = torch.nn.Parameter(torch.tensor([2.0]))
    opt = torch.optim.AdamW([theta], lr=0.01, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.0)
    g_ce, lam = 0.5, 0.1
    theta.grad = torch.tensor([g_ce + lam * 2.0])          # CE gradient + L2 gradient lam * theta
    opt.step()
    th_now = 2.0 - 0.01 * 1.0                             # Adam's first step moves by lr * sign(g)
    out = decay_mechanism(opt, [theta], 0.01, lam, "l2", g_ce ** 2)
    g = g_ce + lam * 2.0
    assert out["second_moment"] == pytest.approx(g)
    assert out["adam_gain"] == pytest.approx(0.01 / (g + 1e-8))
    assert out["effective_shrink"] == pytest.approx(lam * 0.01 / (g + 1e-8))
    assert out["l2_over_ce"] == pytest.approx(lam * th_now / g_ce)
    assert decay_mechanism(opt, [theta], 0.01, lam, "decoupled", g_ce ** 2)["effective_shrink"] == pytest.approx(1e-3)


def test_adam_gain_ignores_the_noise_of_coordinates_whose_gradient_is_zero():
    """Two float orderings leave a zero-gradient coordinate a second moment of 0 or of float noise
    (~1e-9 of the largest gradient, squared): the gain must agree between them (the old unweighted
    mean of lr / sqrt(v_hat) followed that noise: ~lr / eps there)."""
    from critwin.empirical.metrics import decay_mechanism
    torch.manual_seed(0)
    g = torch.randn(50, 8)
    g[:, 0] = 0.0                                         # a column whose exact gradient is 0 (a key bias)
    theta = torch.nn.Parameter(torch.ones(50, 8))
    opt = torch.optim.AdamW([theta], lr=1e-2, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.0)
    theta.grad = g.clone()
    opt.step()
    v = opt.state[theta]["exp_avg_sq"]
    gains = []
    for noise in (0.0, 1e-9, 3e-9):
        v[:, 0] = (1 - 0.98) * (noise * torch.randn(50)) ** 2
        gains.append(decay_mechanism(opt, [theta], 1e-2, 0.0, "l2", 1.0)["adam_gain"])
    assert gains[1] == pytest.approx(gains[0], rel=1e-6) and gains[2] == pytest.approx(gains[0], rel=1e-6)
    div = g.double().abs() + 1e-8                         # v_hat after one step: g^2 (noise 3e-9 left in column 0)
    th = 1.0 - 1e-2 * g.double() / div                   # Adam's first step: lr g / (|g| + eps)
    assert gains[0] == pytest.approx(float(1e-2 * th.norm() / (div * th).norm()), rel=1e-6)


def test_mechanism_is_logged_per_evaluation():
    w = ((0.0, 40.0, 0.5),)
    run = train(TrainConfig(**TINY, wd_windows=w, decay_form="l2", decay_set="non_embedding"), progress=False)
    m = run.metrics
    optim = m[m.split == "optim"]
    assert set(optim.metric) == {"l2_over_ce", "adam_gain", "second_moment", "effective_shrink"}
    assert sorted(optim.step.unique()) == [20, 40]
    assert {f"norm_{g}" for g in ("attn", "mlp", "norm", "head", "embedding")} <= set(m.metric)
    eff = optim[optim.metric == "effective_shrink"].value.to_numpy()
    gain = optim[optim.metric == "adam_gain"].value.to_numpy()
    np.testing.assert_allclose(eff, 0.5 * gain)


def test_frozen_second_moment_adam_matches_torch_until_the_freeze():
    from critwin.empirical.interventions.second_moment import AdamFrozenSecondMoment
    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(5, 3))
    b = torch.nn.Parameter(a.detach().clone())
    c = torch.nn.Parameter(a.detach().clone())
    oa = torch.optim.AdamW([a], lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0)
    ob = AdamFrozenSecondMoment([b], lr=1e-2, betas=(0.9, 0.98), freeze_from=10**9)
    oc = AdamFrozenSecondMoment([c], lr=1e-2, betas=(0.9, 0.98), freeze_from=5)
    for i in range(20):
        g = torch.randn(5, 3) * (10.0 if i >= 5 else 1.0)       # gradients grow after the freeze
        for p, o in ((a, oa), (b, ob), (c, oc)):
            p.grad = g.clone()
            o.step()
        if i == 4:
            v5 = oc.state[c]["v_hat"].clone()
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(oc.state[c]["v_hat"], v5)       # held from step 5
    assert (oa.state[a]["exp_avg_sq"] > 10 * oc.state[c]["exp_avg_sq"]).all()


def test_mechanism_interventions_build_configs():
    from critwin.bridge.mechanism import frozen_second_moment, matched_decoupled
    w = ((0.0, 40.0, 0.5),)
    cfg = TrainConfig(**TINY, wd_windows=w, decay_form="l2", decay_set="non_embedding")
    run = train(cfg, progress=False)
    eff = run.metrics[(run.metrics.split == "optim") & (run.metrics.metric == "effective_shrink")]
    m = matched_decoupled(cfg, run.metrics)
    assert m.decay_form == "decoupled" and m.decay_set == "non_embedding"
    assert [(a, b) for a, b, _ in m.wd_windows] == [(0.0, 20.0), (20.0, 40.0)]
    np.testing.assert_allclose([v * cfg.lr for *_, v in m.wd_windows], eff.value.to_numpy())
    f = frozen_second_moment(cfg, 10)
    assert f.freeze_second_moment == 10 and f.run_id() != cfg.run_id()
    assert train(f, progress=False).summary["status"] == "complete"
    with pytest.raises(ConfigError, match="freeze_second_moment"):
        TrainConfig(**TINY, optimizer="sgd", freeze_second_moment=5)


def test_intervene_command_trains_the_matched_run_and_reads_it_back(tmp_path, capsys):
    """The command finds the stored l2 run, trains its matched decoupled twin into the same store
    (under the id matched_decoupled gives it) and reports both; the twin's logged shrink per step
    is the source's, interval by interval; a second call only reads."""
    from critwin.bridge.mechanism import matched_decoupled
    from critwin.empirical import RunStore
    store = RunStore(tmp_path / "s")
    cfg = TrainConfig(**TINY, wd_windows=((0.0, 40.0, 0.5),), decay_form="l2", decay_set="non_embedding")
    src = train(cfg, progress=False)
    store.save(src)
    store.save(train(TrainConfig(**TINY), progress=False))          # no decay: never a source
    argv = ["bridge", "intervene", "--store", str(store.root), "--match", "0:40@0.5", "--workers", "1",
            "--no-progress", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    twin = matched_decoupled(cfg, src.metrics).run_id()
    assert [r["intervention"] for r in d["rows"]] == [twin] and store.status(twin) == "complete"
    eff = lambda run: run.metrics[(run.metrics.split == "optim") & (run.metrics.metric == "effective_shrink")]
    np.testing.assert_allclose(eff(store.load(twin)).value, eff(src).value, rtol=1e-6)
    row = d["rows"][0]
    assert row["source"] == src.run_id and np.isfinite(row["intervention_ood"]) and row["schedule"] == "0:40@0.5"
    assert main(argv + ["--no-train"]) == 0 and json.loads(capsys.readouterr().out)["rows"] == d["rows"]
    assert main(["bridge", "intervene", "--store", str(store.root), "--match", "5000:10000@0.004", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == []
    assert main(["bridge", "intervene", "--store", str(store.root), "--match", "0:40@0.5", "--kind", "frozen-v"]) != 0
    assert "from_step=None is invalid" in capsys.readouterr().err


def test_adam_scaled_decay_against_a_hand_computed_first_step():
    """After one AdamW step v_hat = g^2 exactly, so the adam_scaled step is lr lam theta /
    (sqrt(g^2 + (lam theta)^2) + eps), computed here from the gradient, not from the optimizer's
    state; held and AMSGrad divisors too. It never moves a coordinate by more than lr."""
    from critwin.empirical.interventions import apply_adam_scaled_decay
    from critwin.empirical.interventions.second_moment import AdamFrozenSecondMoment
    torch.manual_seed(0)
    g = torch.randn(4, 3)
    for make in (lambda p: torch.optim.AdamW([p], lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0),
                 lambda p: torch.optim.AdamW([p], lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0, amsgrad=True),
                 lambda p: AdamFrozenSecondMoment([p], lr=1e-2, betas=(0.9, 0.98), freeze_from=10**9)):
        p = torch.nn.Parameter(torch.randn(4, 3))
        opt = make(p)
        p.grad = g.clone()
        opt.step()
        after = p.detach().clone()
        frozen = torch.nn.Parameter(after.clone())
        apply_adam_scaled_decay([p, frozen], opt, 1e-2, 0.5, skip=[frozen])
        pen = 0.5 * after
        torch.testing.assert_close(p.detach(), after - 1e-2 * pen / ((g ** 2 + pen ** 2).sqrt() + 1e-8), rtol=1e-5,
                                   atol=1e-7)
        assert ((p.detach() - after).abs() <= 1e-2).all()
        assert torch.equal(frozen.detach(), after)          # skipped, and without Adam state it would be left too


def test_adam_scaled_runs_log_their_shrink_and_need_adam():
    w = ((0.0, 40.0, 0.5),)
    runs = {f: train(TrainConfig(**TINY, wd_windows=w, decay_form=f, decay_set="non_embedding"), progress=False)
            for f in ("adam_scaled", "l2", "decoupled")}
    again = train(TrainConfig(**TINY, wd_windows=w, decay_form="adam_scaled", decay_set="non_embedding"), progress=False)
    pd.testing.assert_frame_equal(runs["adam_scaled"].metrics, again.metrics)
    finals = {f: r.summary["final"]["train_loss"] for f, r in runs.items()}
    assert len(set(finals.values())) == 3
    m = runs["adam_scaled"].metrics
    get = lambda k: m[(m.split == "optim") & (m.metric == k)].set_index("step").value
    eff, bound = get("effective_shrink"), 0.5 * get("adam_gain")      # g^2 in its divisor: at most the l2 form's
    assert (eff[eff.index <= 40] > 0).all() and (eff <= bound * (1 + 1e-12)).all() and (eff < bound).any()
    with pytest.raises(ConfigError, match="decay_form"):
        TrainConfig(**TINY, wd_windows=w, decay_form="adam_scaled", optimizer="sgd")
    from critwin.bridge.mechanism import intervention_config
    cfg = TrainConfig(**TINY, wd_windows=w, decay_form="l2", decay_set="non_embedding")
    s = intervention_config(cfg, runs["l2"].metrics, "adam-scaled")
    assert s.decay_form == "adam_scaled" and s.wd_windows == cfg.wd_windows and s.run_id() == runs["adam_scaled"].run_id


def test_ranking_uses_only_rows_measured_under_every_reading():
    rows = [("W2", "no decay"), ("W2", "window [0,5000) 4e-3"), ("W1", "window [5000,10000) 4e-3")]
    vals = {"a": {"no decay": 0.15, "window [0,5000) 4e-3": 0.6, "window [5000,10000) 4e-3": 0.93},
            "b": {"no decay": 0.15, "window [0,5000) 4e-3": float("nan"), "window [5000,10000) 4e-3": 0.93}}
    recs = [{"reading": r, "claim": c, "variant": v, "task_seed": 0, "seed": 0, "run_id": f"{r}{v}",
             "window_at_0": v.startswith("window [0,"), "measured": vals[r][v]} for r in vals for c, v in rows]
    _, rank = score(pd.DataFrame(recs))
    m = rank[rank.hypothesis == "as measured"].set_index("reading")
    assert m.loc["a", "common_rows"] == 2 and m.loc["b", "common_rows"] == 2
    assert m.loc["a", "score"] == pytest.approx(m.loc["b", "score"]) == pytest.approx((0.001 + 0.001) / 2)
    assert m.loc["a", "score_all"] == pytest.approx((0.001 + 0.449 + 0.001) / 3)


def test_amsgrad_holds_the_divisor_and_the_mechanism_reads_it():
    """AMSGrad's divisor never falls, so with shrinking gradients its Adam gain stays below plain
    Adam's; the mechanism metric must read the max (torch's own state is the reference)."""
    from critwin.bridge.mechanism import max_second_moment
    from critwin.empirical.metrics.optim import decay_mechanism
    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(6, 4))
    b = torch.nn.Parameter(a.detach().clone())
    oa = torch.optim.AdamW([a], lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0)
    ob = torch.optim.AdamW([b], lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0, amsgrad=True)
    for i in range(300):
        g = torch.randn(6, 4) * (10.0 if i < 20 else 0.01)     # large gradients, then a fitted model
        for p, o in ((a, oa), (b, ob)):
            p.grad = g.clone()
            o.step()
    ma = decay_mechanism(oa, [a], 1e-2, 1e-3, "l2", 1.0)
    mb = decay_mechanism(ob, [b], 1e-2, 1e-3, "l2", 1.0)
    st = ob.state[b]
    v_max = st["max_exp_avg_sq"].double() / (1 - 0.98 ** float(st["step"]))
    gain = float(1e-2 * torch.linalg.norm(b.double()) / torch.linalg.norm((v_max.sqrt() + 1e-8) * b.double()))
    assert mb["adam_gain"] == pytest.approx(gain, rel=1e-9)
    assert mb["adam_gain"] < ma["adam_gain"] / 10             # plain Adam's v fell ~300x
    cfg = TrainConfig(**TINY, wd_windows=((0.0, 40.0, 0.5),), decay_form="l2", decay_set="non_embedding")
    m = max_second_moment(cfg)
    assert m.amsgrad and m.run_id() != cfg.run_id() and not cfg.identity().get("amsgrad", False)
    assert train(m, progress=False).summary["status"] == "complete"
    for bad in ({"amsgrad": 1}, {"amsgrad": True, "optimizer": "sgd"}, {"amsgrad": True, "freeze_second_moment": 3}):
        with pytest.raises(ConfigError, match="amsgrad"):
            TrainConfig(**TINY, **bad)


def test_mechanism_table_reads_each_variant_at_the_nearest_evaluation(tmp_path, capsys):
    from critwin.bridge.mechanism import max_second_moment
    from critwin.empirical import RunStore
    store = RunStore(tmp_path / "s")
    l2 = TrainConfig(**TINY, wd_windows=((20.0, 40.0, 0.5),), decay_form="l2", decay_set="non_embedding")
    cfgs = {"l2": l2, "ams": max_second_moment(l2), "none": TrainConfig(**TINY)}
    runs = {k: train(c, progress=False) for k, c in cfgs.items()}
    for r in runs.values():
        store.save(r)
    code = main(["bridge", "mechanism", "--store", str(store.root), "--steps", "19", "40", "--json",
                 "--out-csv", str(tmp_path / "m.csv")])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    by = {(r["variant"], r["step"]): r for r in rows}
    assert sorted({r["variant"] for r in rows}) == ["l2/non_embedding 20:40@0.5", "l2/non_embedding 20:40@0.5 amsgrad",
                                                    "no decay"]
    for key, label in (("l2", "l2/non_embedding 20:40@0.5"), ("ams", "l2/non_embedding 20:40@0.5 amsgrad")):
        m = runs[key].metrics
        pick = lambda split, metric, step: float(m[(m.split == split) & (m.metric == metric) & (m.step == step)].value.iloc[0])  # noqa: E731
        assert by[(label, 19)]["ood_acc"] == pytest.approx(pick("ood", "acc", 20))     # nearest evaluation: 20
        assert by[(label, 40)]["weight_norm"] == pytest.approx(pick("model", "weight_norm", 40))
        assert by[(label, 40)]["effective_shrink"] == pytest.approx(pick("optim", "effective_shrink", 40))
    assert pd.read_csv(tmp_path / "m.csv").shape[0] == 6
    assert main(["bridge", "mechanism", "--store", str(store.root), "--match", "nothing like this"]) == 0
    assert "no runs matching" in capsys.readouterr().out


def _curve_run(store, gamma: float, onset: int, norms: list, train_acc: list, ood: float):
    """A run of 100 steps (evaluations every 20) with hand-set curves and one window [onset, onset + 40)."""
    from critwin.empirical import Run
    cfg = TrainConfig(model=ModelConfig(d=16, gamma=gamma), steps=100, batch_size=32, eval_every=20,
                      wd_windows=((float(onset), float(onset + 40), 0.5),), decay_form="l2",
                      decay_set="non_embedding")
    steps = [0, 20, 40, 60, 80, 100]
    rows = [(s, "model", "weight_norm", n) for s, n in zip(steps, norms)]
    rows += [(s, "train", "acc", a) for s, a in zip(steps, train_acc)]
    rows += [(s, "ood", "acc", 0.1 if s < 100 else ood) for s in steps]
    metrics = pd.DataFrame(rows, columns=["step", "split", "metric", "value"])
    store.save(Run(cfg.resolved(), metrics, {"status": "complete", "final": {"ood_acc": ood}}, {}))


def test_arrival_norms_and_the_held_out_threshold(tmp_path, capsys):
    """Arrival = norm at the first evaluation >= max(onset, memorisation), end = the last at or
    before the window's end; the threshold rule is fitted at one gamma and scored on the others."""
    from critwin.bridge.mechanism import arrival_table, fit_threshold
    from critwin.empirical import RunStore, load_runs
    store = RunStore(tmp_path / "s")
    fit = [0.2, 0.6, 0.95, 1.0, 1.0, 1.0]                       # memorised at step 40
    _curve_run(store, 0.8, 0, [10, 9, 8, 6, 5, 5], fit, 0.2)      # arrives at 40 (norm 8), ends 40 (8): ratio 1
    _curve_run(store, 0.8, 60, [10, 20, 30, 40, 10, 9], fit, 0.9)  # arrives at 60 (40), ends 100 (9)
    _curve_run(store, 0.5, 0, [10, 30, 9, 9, 9, 9], [0.2, 0.95, 1, 1, 1, 1], 0.9)   # memorised at 20 (30), ends 40 (9)
    _curve_run(store, 0.5, 20, [10, 11, 12, 10, 10, 10], fit, 0.2)   # memorised at 40 (12), ends 60 (10)
    table = arrival_table(load_runs(store.root)).set_index(["gamma", "onset"])
    assert table.loc[(0.8, 0.0)].memorization_step == 40
    assert (table.loc[(0.8, 0.0)].arrival_norm, table.loc[(0.8, 0.0)].end_norm) == (8, 8)
    assert (table.loc[(0.8, 60.0)].arrival_norm, table.loc[(0.8, 60.0)].end_norm) == (40, 9)
    assert table.loc[(0.5, 0.0)].norm_ratio == pytest.approx(30 / 9)
    assert table.loc[(0.5, 20.0)].norm_ratio == pytest.approx(12 / 10)
    # brute force: the best rule 'x >= t' over every observed value as t (and t above all)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, ok = rng.normal(size=9), rng.random(9) < 0.5
        best = max(np.mean((x >= t) == ok) for t in [*x, np.inf])
        t, acc = fit_threshold(x, ok)
        assert acc == pytest.approx(best) and np.mean((x >= t) == ok) == pytest.approx(best)
    assert main(["bridge", "arrival", "--store", str(store.root), "--fit-gamma", "0.8", "--json", "--no-figure"]) == 0
    hold = {(h["feature"], h["gamma"]): h for h in json.loads(capsys.readouterr().out)["holdout"]}
    # both features separate gamma 0.8 (thresholds 30 steps, ratio 2.72); at the held-out gamma 0.5 the
    # onset-0 run composes (ratio 3.33) and the onset-20 run does not (1.2): the ratio is right twice
    assert hold[("onset", 0.8)]["accuracy"] == 1 and not hold[("onset", 0.8)]["held_out"]
    assert hold[("onset", 0.8)]["threshold"] == 30 and hold[("norm_ratio", 0.8)]["threshold"] == pytest.approx((1 + 40 / 9) / 2)
    assert hold[("onset", 0.5)]["accuracy"] == 0.5 and hold[("onset", 0.5)]["held_out"]
    assert hold[("norm_ratio", 0.5)]["accuracy"] == 1
    from critwin.bridge.mechanism import threshold_holdout
    with pytest.raises(ConfigError, match="fit_gamma"):
        threshold_holdout(arrival_table(load_runs(store.root)), 1.3)
