import json

import numpy as np
import pandas as pd
import pytest
import torch

from critwin.empirical import CorruptRunError, RunStore, TrainConfig, load_runs, load_summaries, train
from critwin.empirical.interventions import apply_decay
from critwin.empirical.metrics import ov_qk_alignment, participation_ratio
from critwin.empirical.models import ModelConfig, Transformer
from critwin.empirical.train import build_model, build_optimizer
from critwin.errors import ConfigError

TINY = dict(model=ModelConfig(d=16), steps=30, batch_size=32, eval_every=10)


@pytest.fixture(scope="module")
def tiny_run():
    return train(TrainConfig(**TINY), progress=False)


def test_run_shapes_and_metrics(tiny_run):
    m = tiny_run.metrics
    assert list(m.columns) == ["step", "split", "metric", "value"]
    assert sorted(m.step.unique()) == [0, 10, 20, 30]
    assert {"train", "ood", "model", "optim"} == set(m.split)
    assert {"loss", "acc", "weight_norm", "condensation", "ov_qk_alignment"} <= set(m.metric)
    assert tiny_run.summary["status"] == "complete"
    assert {"train_acc", "ood_acc"} <= set(tiny_run.summary["final"])
    env = tiny_run.environment
    assert {"torch", "numpy", "python", "git_commit", "device"} <= set(env)


def test_same_config_same_numbers(tiny_run):
    again = train(TrainConfig(**TINY), progress=False)
    pd.testing.assert_frame_equal(tiny_run.metrics, again.metrics)
    other = train(TrainConfig(**{**TINY, "seed": 1}), progress=False)
    assert not tiny_run.metrics["value"].equals(other.metrics["value"])


def test_shift_task_logs_id_and_symmetric_rate():
    run = train(TrainConfig(task="anchor_shift", **{**TINY, "steps": 10}), progress=False)
    assert {"id_test_acc", "ood_symmetric_rate"} <= set(run.summary["final"])


@pytest.mark.parametrize("init,gamma", [("multiplier", 0.8), ("exponent", 0.5)])
def test_init_conventions(init, gamma):
    torch.manual_seed(0)
    m = Transformer(ModelConfig(d=64, mlp_ratio=4, init=init, gamma=gamma), 24, 3)
    w = m.blocks[0].mlp[2].weight          # fan-in 256
    expect = gamma / 16 if init == "multiplier" else 256 ** -gamma
    assert w.std().item() == pytest.approx(expect, rel=0.05)


def test_frozen_component_does_not_move_under_adam():
    """Adam's moments are non-zero when the freeze starts: the weight must still not move."""
    from critwin.empirical.tasks import make_task
    cfg = TrainConfig(**TINY)
    data = make_task(cfg.task).generate()
    torch.manual_seed(0)
    model = build_model(cfg, data.vocab_size, data.seq_len)
    opt = build_optimizer(cfg, model.parameters())
    x = torch.as_tensor(data.splits["train"].inputs[:32])
    y = torch.as_tensor(data.splits["train"].targets[:32])
    layer0 = model.components()["layer0"]
    other = model.blocks[1].mlp[0].weight
    for step in range(10):
        frozen = layer0 if step >= 5 else []
        if step == 5:
            snap, other_snap = [p.detach().clone() for p in layer0], other.detach().clone()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in frozen:
            p.grad = None
        opt.step()
        apply_decay(model.decayed_weights(), cfg.lr, 1.0, skip=frozen)
    assert all(torch.equal(p, s) for p, s in zip(layer0, snap))
    assert not torch.equal(other, other_snap)


def test_frozen_layer_is_bit_identical_in_training_loop(monkeypatch):
    import importlib
    tr = importlib.import_module("critwin.empirical.steppers.model")       # where the training step reads it
    seen = {}
    real = tr.frozen_parameters

    def spy(freezes, comps, step):
        out = real(freezes, comps, step)
        if out:
            key = [p.detach().clone() for p in out]
            seen.setdefault("first", key)
            seen["last"] = out
        return out
    monkeypatch.setattr(tr, "frozen_parameters", spy)
    train(TrainConfig(**{**TINY, "steps": 30, "freeze": (("embedding", 10),)}), progress=False)
    for a, b in zip(seen["first"], seen["last"]):
        assert torch.equal(a, b)


def test_decay_touches_weights_not_embeddings():
    m = Transformer(ModelConfig(d=16), 24, 3)
    ids = {id(w) for w in m.decayed_weights()}
    assert id(m.tok.weight) not in ids and id(m.pos.weight) not in ids and id(m.unembed.weight) in ids
    w = m.decayed_weights()[0]
    before = w.detach().clone()
    apply_decay(m.decayed_weights(), lr=3e-3, lam=2.0)
    assert torch.allclose(w, before * (1 - 6e-3))


def test_weight_metrics():
    assert participation_ratio(torch.eye(5)) == pytest.approx(5.0)
    m = Transformer(ModelConfig(d=16), 24, 3)
    assert 0.0 <= ov_qk_alignment(m) <= 1.0 + 1e-9


def test_store_roundtrip_and_tidy_frames(tmp_path, tiny_run):
    store = RunStore(tmp_path)
    path = store.save(tiny_run)
    assert path.name == tiny_run.run_id and store.has(tiny_run.run_id)
    assert {p.name for p in path.iterdir()} == {"config.json", "summary.json", "environment.json", "metrics.parquet"}
    again = store.load(tiny_run.run_id)
    pd.testing.assert_frame_equal(again.metrics, tiny_run.metrics)
    df = load_runs(tmp_path)
    assert {"run_id", "step", "split", "metric", "value", "gamma", "wd_windows"} <= set(df.columns)
    assert len(df) == len(tiny_run.metrics)
    s = load_summaries(tmp_path)
    assert len(s) == 1 and s.loc[0, "final_train_acc"] == tiny_run.summary["final"]["train_acc"]
    # saving the same run again keeps the stored one untouched
    mtime = (path / "summary.json").stat().st_mtime_ns
    store.save(tiny_run)
    assert (path / "summary.json").stat().st_mtime_ns == mtime


@pytest.mark.parametrize("damage", ["missing", "tmp", "garbage", "renamed"])
def test_corrupt_run_folders_are_reported(tmp_path, tiny_run, damage):
    store = RunStore(tmp_path)
    path = store.save(tiny_run)
    if damage == "missing":
        (path / "metrics.parquet").unlink()
    elif damage == "tmp":
        (tmp_path / ".tmp-abc-123").mkdir()
    elif damage == "garbage":
        (path / "summary.json").write_text("{not json")
    else:
        path.rename(tmp_path / "0123456789abcdef")
    with pytest.raises(CorruptRunError):
        load_runs(tmp_path)
    with pytest.warns(UserWarning):
        df = load_runs(tmp_path, on_corrupt="skip")
    assert len(df) == (len(tiny_run.metrics) if damage == "tmp" else 0)


@pytest.mark.parametrize("kwargs,field", [
    ({"model": {"gamma": 0.0}}, "gamma"), ({"task": "modarith9"}, "task"), ({"optimizer": "lion"}, "optimizer"),
    ({"wd_windows": ((5000, 4000, 1e-3),)}, "wd_window"), ({"wd_windows": ((0, 30000, 1e-3),)}, "wd_window"),
    ({"freeze": (("layer0", 50000),)}, "freeze"), ({"model": {"heads": 3}}, "heads"), ({"device": "tpu"}, "device"),
])
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(ConfigError) as e:
        TrainConfig(**kwargs)
    assert e.value.field == field


def test_unknown_freeze_component_is_rejected():
    with pytest.raises(ConfigError, match="freeze"):
        train(TrainConfig(**{**TINY, "freeze": (("layer7", 5),)}), progress=False)


def test_config_hash_is_stable():
    a, b = TrainConfig(seed=3), TrainConfig.from_dict(json.loads(json.dumps(TrainConfig(seed=3).resolved())))
    assert a == b and a.run_id() == b.run_id() and a.run_id() != TrainConfig(seed=4).run_id()


def test_eval_max_scores_a_fixed_subset_and_leaves_training_alone(tiny_run):
    cut = train(TrainConfig(**{**TINY, "eval_max": 50}), progress=False)
    assert cut.config["eval_max"] == 50 and TrainConfig(**{**TINY, "eval_max": 50}).run_id() != \
        TrainConfig(**TINY).run_id()
    m, full = cut.metrics, tiny_run.metrics
    acc = m[(m.split == "train") & (m.metric == "acc")].value.to_numpy()
    assert np.allclose(acc * 50, np.round(acc * 50))      # scored on 50 examples
    weights = lambda df: df[df.split == "model"].reset_index(drop=True)   # noqa: E731
    pd.testing.assert_frame_equal(weights(m), weights(full))   # same training: evaluation draws no randomness
    with pytest.raises(ConfigError) as e:
        TrainConfig(eval_max=0)
    assert e.value.field == "eval_max"


def test_split_sample_cuts_every_per_example_entry():
    from critwin.empirical.tasks.base import Split
    n = 40
    s = Split(np.arange(n * 3).reshape(n, 3), np.arange(n), {"lengths": np.arange(n) + 100, "vocab": np.arange(5)})
    a = s.sample(10)
    assert len(a) == 10 and np.all(np.diff(a.targets) > 0)               # distinct, in original order
    assert np.array_equal(a.inputs[:, 0] // 3, a.targets) and np.array_equal(a.extra["lengths"] - 100, a.targets)
    assert np.array_equal(a.extra["vocab"], np.arange(5))                 # not per-example: kept whole
    assert np.array_equal(s.sample(10).targets, a.targets) and s.sample(None) is s and s.sample(n) is s


def test_stacked_weight_metrics_equal_each_model_alone():
    """The engine's batched SVDs give what the one-model metrics give, member by member."""
    from critwin.empirical.metrics import (condensation_index, group_norms, stacked_weight_metrics, weight_metrics,
                                           weight_norm)
    models = []
    for seed, gamma in ((0, 0.5), (1, 0.8), (2, 1.1)):
        torch.manual_seed(seed)
        models.append(Transformer(ModelConfig(d=16, heads=2, layers=2, gamma=gamma), vocab_size=20, seq_len=9))
    params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
              for n, _ in models[0].named_parameters()}
    stacked = stacked_weight_metrics(models[0], params)
    for m, got in zip(models, stacked):
        want = {"weight_norm": weight_norm(m.decayed_weights()), "condensation": condensation_index(m),
                "ov_qk_alignment": ov_qk_alignment(m), **group_norms(m)}
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
        assert weight_metrics(m) == pytest.approx(got, rel=1e-12)
    params["blocks.0.attn.v.weight"][1, 0, 0] = float("nan")     # a diverged member: nan metrics, others as before
    again = stacked_weight_metrics(models[0], params)
    assert all(np.isnan(v) for v in again[1].values()) and again[0] == stacked[0] and again[2] == stacked[2]
    one_layer = Transformer(ModelConfig(d=16, heads=2, layers=1), vocab_size=20, seq_len=9)
    assert np.isnan(weight_metrics(one_layer)["ov_qk_alignment"])
