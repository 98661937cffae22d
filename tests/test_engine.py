"""The batched engine: members trained as one stacked model match training each alone."""
from dataclasses import replace

import numpy as np
import pytest

from critwin.empirical import RunStore, TrainConfig, train
from critwin.empirical.engine import pack_key, packs, train_pack
from critwin.empirical.models import ModelConfig
from critwin.empirical.sweep import LocalExecutor, run_sweep
from critwin.errors import ConfigError
from helpers import Killed, kill_after

BASE = TrainConfig(model=ModelConfig(d=16), steps=60, batch_size=32, eval_every=20)
# Stated tolerance (relative), every metric: 1e-4 (measured: losses and accuracies ~1e-7, weight
# norms ~3e-6; batched matmuls round differently). Adam's gain is weighted so that coordinates whose
# exact gradient is 0 cannot carry it (metrics/optim.py), so it holds to the same tolerance.
RTOL = 1e-4


def assert_matches_alone(cfg, run):
    alone = train(cfg, progress=False)
    assert run.run_id == alone.run_id == cfg.run_id()
    assert run.summary["status"] == alone.summary["status"]
    a, b = alone.metrics, run.metrics
    assert list(a[["step", "split", "metric"]].itertuples(index=False)) == \
        list(b[["step", "split", "metric"]].itertuples(index=False))
    for (split, metric), g in a.groupby(["split", "metric"]):
        vb = b.value.to_numpy()[g.index]
        rtol = RTOL
        assert np.allclose(vb, g.value, rtol=rtol, atol=1e-7, equal_nan=True), (split, metric)


MIXED = [replace(BASE, seed=0),
         replace(BASE, seed=1, task_seed=1, wd_windows=((10.0, 40.0, 0.5),), decay_form="l2", decay_set="non_embedding"),
         replace(BASE, seed=2, wd_windows=((0.0, 60.0, 0.3),)).with_model(gamma=0.5),
         replace(BASE, seed=3, wd_windows=((30.0, 60.0, 0.2),), decay_form="l2", decay_set="all")]


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_each_member_matches_training_it_alone(optimizer):
    cfgs = [replace(c, optimizer=optimizer, lr=3e-3 if optimizer == "adamw" else 0.1) for c in MIXED]
    runs = train_pack(cfgs, progress=False)
    assert len(runs) == len(cfgs) and runs[0].summary["pack"]["members"] == 4
    for c, r in zip(cfgs, runs):
        assert_matches_alone(c, r)


@pytest.mark.parametrize("task", ["anchor_shift", "modarith"])
def test_other_tasks_match_alone(task):
    cfgs = [replace(c, task=task, eval_max=200) for c in MIXED[:2]]
    for c, r in zip(cfgs, train_pack(cfgs, progress=False)):
        assert_matches_alone(c, r)


@pytest.mark.parametrize("optimizer,lrs", [("adamw", (3e-3, 1e-3)), ("sgd", (0.1, 0.03))])
def test_members_with_their_own_learning_rates_match_alone(optimizer, lrs):
    cfgs = [replace(c, optimizer=optimizer, lr=lr, lr_schedule="cosine", lr_final=lr / 10)
            for c, lr in zip(MIXED[1:3], lrs)]
    assert pack_key(cfgs[0]) == pack_key(cfgs[1])
    for c, r in zip(cfgs, train_pack(cfgs, progress=False)):
        assert_matches_alone(c, r)


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_members_with_freezes_match_alone(optimizer):
    cfgs = [replace(MIXED[1], freeze=(("layer0", 20),)), replace(MIXED[2], freeze=(("embedding", 0), ("layer1.mlp", 35))),
            MIXED[0]]
    cfgs = [replace(c, optimizer=optimizer, lr=3e-3 if optimizer == "adamw" else 0.1) for c in cfgs]
    assert pack_key(cfgs[0]) == pack_key(cfgs[2])
    for c, r in zip(cfgs, train_pack(cfgs, progress=False)):
        assert_matches_alone(c, r)


def test_amsgrad_and_cosine_schedule_match_alone():
    cfgs = [replace(c, amsgrad=True, lr_schedule="cosine", lr_final=1e-4) for c in MIXED[:2]]
    for c, r in zip(cfgs, train_pack(cfgs, progress=False)):
        assert_matches_alone(c, r)


def test_a_member_does_not_depend_on_its_pack_mates():
    a = MIXED[1]
    m1 = train_pack([a, MIXED[0]], progress=False)[0].metrics
    m2 = train_pack([MIXED[2], MIXED[3], a], progress=False)[2].metrics
    m3 = train_pack([a], progress=False)[0].metrics
    assert m1.equals(m2) and m1.equals(m3)


def test_a_diverging_member_is_recorded_and_the_others_go_on():
    blow = replace(BASE, seed=5, wd_windows=((5.0, 60.0, 1e4),))     # shrink factor 1 - 3e-3 * 1e4 = -29 per step
    runs = train_pack([MIXED[0], blow], progress=False)
    assert runs[1].summary["status"] == "diverged" and "non-finite" in runs[1].summary["error"]
    assert runs[1].summary["steps_done"] < BASE.steps
    assert runs[0].summary["status"] == "complete"
    assert_matches_alone(MIXED[0], runs[0])


def test_pack_keys_and_packing():
    assert pack_key(MIXED[0]) == pack_key(MIXED[3]) is not None
    assert pack_key(replace(BASE, lr=1e-3)) == pack_key(BASE) != pack_key(replace(BASE, batch_size=16))
    for alone in (replace(BASE, checkpoints=(10,)), replace(BASE, task="scan_length"),
                  replace(BASE, freeze_second_moment=10)):
        assert pack_key(alone) is None
    assert pack_key(replace(BASE, clip=1.0)) not in (None, pack_key(BASE))    # clipping packs (per member)
    rebuild = replace(BASE, freeze=(("layer0", 10),), freeze_optimizer="rebuild")
    assert pack_key(rebuild) is not None and pack_key(rebuild) != pack_key(BASE)     # rebuilds pack among themselves
    other = replace(BASE, batch_size=16)
    frozen = replace(BASE, freeze=(("layer0", 10),), freeze_optimizer="rebuild")
    cfgs = [*MIXED, other, frozen]
    got = packs(cfgs, size=3)
    assert sorted(len(p) for p in got) == [1, 1, 2, 2]          # 4 compatible -> 2 + 2, then batch 16 and the rebuild
    assert sorted(c.run_id() for p in got for c in p) == sorted(c.run_id() for c in cfgs)
    assert [len(p) for p in packs(MIXED, size=8, workers=2)] == [2, 2]   # every worker gets a pack
    assert [len(p) for p in packs(MIXED, size=8)] == [4]
    assert [len(p) for p in packs(MIXED, size=3, workers=2)] == [2, 2]      # 2 packs, not 2 + 1 + 1 over 2 workers
    assert [len(p) for p in packs(MIXED, size=1, workers=3)] == [1, 1, 1, 1]
    assert [len(p) for p in packs(MIXED, size=1)] == [1, 1, 1, 1]
    with pytest.raises(ConfigError, match="pack"):
        packs(MIXED, size=0)
    with pytest.raises(ConfigError, match="configs"):
        train_pack([BASE, other])
    with pytest.raises(ConfigError, match="pack"):
        LocalExecutor(1, pack=0)


def test_device_path_without_a_gpu():
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the cuda path is exercised for real elsewhere")
    with pytest.raises(ConfigError, match="device"):
        train_pack([replace(BASE, device="cuda")])


def test_sweep_packs_and_stores_each_member_under_its_own_id(tmp_path):
    store = RunStore(tmp_path)
    res = run_sweep(MIXED, store, LocalExecutor(1), progress=False, pack=4)
    assert sorted(res.done) == sorted(c.run_id() for c in MIXED)
    for c in MIXED:
        run = store.load(c.run_id())
        assert run.summary["pack"]["members"] == 4
        assert_matches_alone(c, run)
    again = run_sweep(MIXED, store, LocalExecutor(1), progress=False, pack=4)
    assert not again.done and len(again.skipped) == 4


def test_sweep_packs_on_two_workers(tmp_path):
    res = run_sweep(MIXED, RunStore(tmp_path), LocalExecutor(2, pack=8), progress=False)
    assert len(res.done) == 4
    for c in MIXED:
        assert RunStore(tmp_path).load(c.run_id()).summary["pack"]["members"] == 2


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_members_whose_freezes_rebuild_the_optimizer_match_alone(optimizer):
    """The paper's freezing protocol (a fresh optimizer over the trainable parameters at each
    freeze), members rebuilding at different steps, one twice, beside one that never freezes."""
    cfgs = [replace(MIXED[1], freeze=(("layer0", 20),)), replace(MIXED[2], freeze=(("embedding", 0), ("layer1.mlp", 35))),
            replace(MIXED[0], lr=1e-3 if optimizer == "adamw" else 0.03)]
    cfgs = [replace(c, optimizer=optimizer, freeze_optimizer="rebuild",
                    lr=c.lr if c is cfgs[2] else (3e-3 if optimizer == "adamw" else 0.1)) for c in cfgs]
    assert pack_key(cfgs[0]) == pack_key(cfgs[2]) is not None
    for c, r in zip(cfgs, train_pack(cfgs, progress=False)):
        assert_matches_alone(c, r)


def test_rebuild_with_amsgrad_matches_alone():
    """Every metric, Adam's logged gain included: 20 steps after a rebuild the second moment of
    entries whose exact gradient is 0 restarted from float noise (layer0.attn frozen at 40); the
    old unweighted gain followed it (63 alone against 30 in a pack of one)."""
    cfgs = [replace(c, amsgrad=True, freeze_optimizer="rebuild", freeze=f)
            for c, f in zip(MIXED[:2], ((("layer1", 25),), (("layer0.attn", 40),)))]
    for c, r in zip(cfgs, train_pack(cfgs, progress=False)):
        assert_matches_alone(c, r)


@pytest.mark.parametrize("model", [
    ModelConfig(d=16),
    ModelConfig(d=24, heads=3, layers=3, mlp_ratio=2, norm="post", positions="sinusoidal", embed_scale=True,
                activation="relu", head_bias=True),
    ModelConfig(d=16, layers=1, gamma=2.0)])
def test_stacked_forward_and_gradients_equal_the_module(model):
    """The engine's written-out forward against nn.Module Transformers, one per member."""
    import torch

    from critwin.empirical.models import Transformer
    from critwin.empirical.models.stacked import stacked_logits
    torch.manual_seed(0)
    members = [Transformer(model, 11, 5, 7) for _ in range(3)]
    idx = torch.randint(0, 11, (3, 6, 5))
    params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in members]).requires_grad_()
              for n, _ in members[0].named_parameters()}
    got = stacked_logits(model, params, idx)
    want = torch.stack([m(idx[e]) for e, m in enumerate(members)])
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    w = torch.randn_like(want)
    (got * w).sum().backward()
    (want * w).sum().backward()
    for n, p in params.items():
        for e, m in enumerate(members):
            torch.testing.assert_close(p.grad[e], dict(m.named_parameters())[n].grad, rtol=1e-5, atol=1e-6)


def test_a_run_s_numbers_do_not_depend_on_its_sweep(tmp_path):
    """With packs on (the default), a packable config trains on the engine even alone: the same
    numbers whether its sweep held it alone or with others; --pack 1 is the plain loop."""
    alone = run_sweep([MIXED[1]], RunStore(tmp_path / "alone"), LocalExecutor(1), progress=False)
    run_sweep(MIXED[:3], RunStore(tmp_path / "three"), LocalExecutor(1), progress=False)
    run_sweep([MIXED[1]], RunStore(tmp_path / "plain"), LocalExecutor(1, pack=1), progress=False)
    a = RunStore(tmp_path / "alone").load(MIXED[1].run_id())
    b = RunStore(tmp_path / "three").load(MIXED[1].run_id())
    plain = RunStore(tmp_path / "plain").load(MIXED[1].run_id())
    assert alone.done == [MIXED[1].run_id()]
    assert a.summary["pack"]["members"] == 1 and b.summary["pack"]["members"] == 3 and "pack" not in plain.summary
    assert a.metrics.equals(b.metrics)
    assert plain.metrics.equals(train(MIXED[1], progress=False).metrics)
    assert_matches_alone(MIXED[1], a)


def test_a_bad_config_in_a_pack_fails_alone(tmp_path):
    bad = replace(MIXED[2], freeze=(("layer7", 5),))          # no such component: fails when training starts
    store = RunStore(tmp_path)
    res = run_sweep([MIXED[0], bad, MIXED[3]], store, LocalExecutor(1, pack=3), progress=False)
    assert sorted(res.done) == sorted([MIXED[0].run_id(), MIXED[3].run_id()])
    assert [r for r, _ in res.failed] == [bad.run_id()] and "layer7" in store.load(bad.run_id()).summary["error"]
    assert_matches_alone(MIXED[3], store.load(MIXED[3].run_id()))


def test_a_pack_killed_midway_resumes_with_the_numbers_of_an_uninterrupted_pack(tmp_path):
    """Members with own learning rates, both decay readings and an optimizer rebuilt at a freeze
    (its own Adam step count) continue exactly: equal metrics, bit for bit, to the pack trained
    in one go; a state of another pack (other members or order) is ignored with a warning."""
    import pandas as pd
    cfgs = [replace(MIXED[0], lr=1e-3), replace(MIXED[1], lr=3e-3, freeze=(("layer0", 30),)),
            replace(MIXED[3], freeze=(("layer0", 10),))]
    cfgs = [replace(c, freeze_optimizer="rebuild") for c in cfgs]
    whole = train_pack(cfgs, progress=False)
    path = tmp_path / "pack.pt"
    with pytest.raises(Killed):
        train_pack(cfgs, progress=False, on_steps=kill_after(40 * len(cfgs)), resume=path, save_every=0)
    assert path.is_file()
    resumed = train_pack(cfgs, progress=False, resume=path, save_every=0)
    for a, b in zip(whole, resumed):
        assert b.summary["resumed_from_step"] == 20 and "resumed_from_step" not in a.summary   # saved at 20, killed at 40
        pd.testing.assert_frame_equal(a.metrics, b.metrics)
        assert a.summary["final"] == b.summary["final"]
    with pytest.warns(UserWarning, match="another config"):
        other = train_pack(cfgs[::-1], progress=False, resume=path, save_every=1e9)
    assert all("resumed_from_step" not in r.summary for r in other)


def test_pack_count_fills_every_round():
    """The fewest packs of at most `cap` members whose number is a multiple of the workers (every round full), by
    search; with fewer members than workers, one pack each; where no multiple fits, one member a pack."""
    from critwin.empirical.engine import pack_count
    for n in range(1, 80):
        for cap in (1, 2, 3, 5, 8, 64):
            for workers in (1, 2, 3, 4):
                fits = [k for k in range(1, n + 1) if -(-n // k) <= cap and k >= min(workers, n)]
                full = [k for k in fits if k % workers == 0]
                want = min(full) if full else n
                assert pack_count(n, cap, workers) == want, (n, cap, workers)
    assert pack_count(54, 8, 2) == 8 and pack_count(24, 8, 2) == 4        # a cell, and what was left of one


def test_a_pack_is_built_whole_on_its_device(monkeypatch):
    """Every stacked tensor of a pack, and the template the metrics read, lands on the pack's device. The meta
    device stands in for a GPU: a tensor left on the CPU, or a member moved alone before the stack (Module.to
    moves it in place), fails there as it would on cuda."""
    import torch

    import critwin.empirical.steppers.pack as pack
    meta = torch.device("meta")
    monkeypatch.setattr(pack, "_device", lambda name: meta)
    stepper = pack.build_pack([replace(BASE, seed=s) for s in range(3)])
    tensors = [*stepper.params.values(), *stepper.template.parameters(), stepper.X, stepper.Y, stepper.ar,
               *(t for pair in stepper.evals.values() for t in pair)]
    assert {t.device for t in tensors} == {meta}
    assert all(p.device == meta for g in stepper.opt.param_groups for p in g["params"])
