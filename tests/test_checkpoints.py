"""Checkpoints and branches: a run started from another run's checkpoint equals the same
config trained from step 0 (the plasticity protocol branches freezes from a baseline)."""
import json

import pytest

from critwin.cli.main import main
from critwin.empirical import RunStore, TrainConfig, train
from critwin.empirical.models import ModelConfig
from critwin.empirical.sweep import LocalExecutor, run_sweep
from critwin.errors import ConfigError

BASE = dict(model=ModelConfig(d=16, dropout=0.1), steps=40, batch_size=32, eval_every=10, lr=1e-2,
            lr_schedule="cosine", clip=1.0)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("ck") / "s")
    cfg = TrainConfig(**BASE, checkpoints=(13, 20))
    run = train(cfg, progress=False)
    store.save(run)
    return store, cfg, run


@pytest.mark.parametrize("change", [{}, {"freeze": (("layer0", 20),)}, {"wd_windows": ((25.0, 40.0, 0.5),),
                                                                           "decay_form": "l2"}])
def test_branch_equals_training_from_zero(source, change):
    store, src, run = source
    scratch = train(TrainConfig(**BASE, **change), progress=False)
    if "decay_form" in change:      # the decay form is part of the source config: branch from a matching one
        src_l2 = TrainConfig(**BASE, checkpoints=(20,), decay_form="l2", wd_windows=((25.0, 40.0, 0.5),))
        store.save(train(src_l2, progress=False))
        branch_cfg = TrainConfig(**BASE, **change, branch=f"{src_l2.run_id()}@20")
    else:
        branch_cfg = TrainConfig(**BASE, **change, branch=f"{src.run_id()}@20")
    branched = train(branch_cfg, progress=False, start=store.checkpoint(*branch_cfg.branch_point()))
    assert branched.metrics.equals(scratch.metrics)
    assert branched.summary["final"] == scratch.summary["final"]
    assert branch_cfg.run_id() != TrainConfig(**BASE, **change).run_id()


def test_checkpoints_are_stored_and_a_bad_branch_is_refused(source, tmp_path):
    store, src, run = source
    assert sorted(run.checkpoints) == [13, 20]
    assert (store.path(src.run_id()) / "checkpoints" / "step_13.pt").is_file()
    with pytest.raises(ConfigError, match="lr"):          # trained differently before the branch point
        cfg = TrainConfig(**{**BASE, "lr": 5e-3}, branch=f"{src.run_id()}@20")
        train(cfg, progress=False, start=store.checkpoint(src.run_id(), 20))
    with pytest.raises(ConfigError, match="freeze"):
        cfg = TrainConfig(**BASE, freeze=(("layer0", 5),), branch=f"{src.run_id()}@20")
        train(cfg, progress=False, start=store.checkpoint(src.run_id(), 20))
    with pytest.raises(ConfigError, match="has \\[13, 20\\]"):
        store.checkpoint(src.run_id(), 30)
    for bad in ("nope", f"{src.run_id()}@0", f"{src.run_id()}@40", "xyz@5"):
        with pytest.raises(ConfigError, match="branch"):
            TrainConfig(**BASE, branch=bad)
    with pytest.raises(ConfigError, match="checkpoints"):
        TrainConfig(**BASE, checkpoints=(0,))
    with pytest.raises(ConfigError, match="branch"):
        train(TrainConfig(**BASE, branch=f"{src.run_id()}@20"), progress=False)   # no checkpoint given


def test_sweeps_and_the_cli_branch(source, capsys):
    store, src, _ = source
    cfgs = [TrainConfig(**BASE, freeze=(("embedding", 20),), branch=f"{src.run_id()}@20"),
            TrainConfig(**BASE, branch=f"{src.run_id()}@30")]            # no such checkpoint: refused before training
    with pytest.raises(ConfigError, match=r"branch.*has \[13, 20\]"):
        run_sweep(cfgs, store, LocalExecutor(1), progress=False)
    assert store.status(cfgs[0].run_id()) is None and store.status(cfgs[1].run_id()) is None
    res = run_sweep(cfgs[:1], store, LocalExecutor(1), progress=False)
    assert res.done == [cfgs[0].run_id()]
    code = main(["train", "anchor", "--steps", "40", "--d", "16", "--batch-size", "32", "--eval-every", "10",
                 "--lr", "0.01", "--lr-schedule", "cosine", "--clip", "1", "--dropout", "0.1",
                 "--branch", f"{src.run_id()}@13", "--store", str(store.root), "--no-progress", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["final"] == train(TrainConfig(**BASE), progress=False).summary["final"]


def test_rebuilding_the_optimizer_at_a_freeze(tmp_path):
    """freeze_optimizer='rebuild' (the Alchemy protocol) starts fresh Adam moments for the
    trainable parameters at the freeze: the same numbers before it, different ones after, and
    a branch from after the rebuild still equals training from step 0."""
    freeze = (("layer0", 15),)
    keep = TrainConfig(**BASE, freeze=freeze)
    rebuild = TrainConfig(**BASE, freeze=freeze, freeze_optimizer="rebuild", checkpoints=(25,))
    a, b = train(keep, progress=False), train(rebuild, progress=False)
    assert not a.metrics.equals(b.metrics)
    assert a.metrics[a.metrics.step <= 10].equals(b.metrics[b.metrics.step <= 10])   # identical before it
    store = RunStore(tmp_path / "s")
    store.save(b)
    br = TrainConfig(**BASE, freeze=freeze, freeze_optimizer="rebuild", branch=f"{rebuild.run_id()}@25")
    c = train(br, progress=False, start=store.checkpoint(rebuild.run_id(), 25))
    assert c.metrics.equals(b.metrics)
    with pytest.raises(ConfigError, match="freeze_optimizer"):
        TrainConfig(**BASE, freeze_optimizer="reset")


def test_a_branch_may_change_what_a_freeze_does_only_if_nothing_froze_before():
    """freeze_optimizer acts at freezes: a branch may set it differently when its source had no
    freeze before the branch step (training up to there is the same), not otherwise."""
    from critwin.empirical.config import check_branch
    src = TrainConfig(steps=100, freeze_optimizer="keep")
    check_branch(src, TrainConfig(steps=100, freeze_optimizer="rebuild", freeze=(("layer0", 50),)), 50)
    src = TrainConfig(steps=100, freeze_optimizer="keep", freeze=(("layer1", 20),))
    with pytest.raises(ConfigError, match="freeze_optimizer"):
        check_branch(src, TrainConfig(steps=100, freeze_optimizer="rebuild", freeze=(("layer1", 20), ("layer0", 50))), 50)
    with pytest.raises(ConfigError, match="lr"):
        check_branch(TrainConfig(steps=100), TrainConfig(steps=100, lr=1e-2), 50)
