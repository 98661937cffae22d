"""Alchemy on the packed engine: seeds, freeze branches and learning rates trained as one stacked
model log the rows each run logs trained alone by the plain loop."""
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from critwin.empirical import RunStore, TrainConfig, train
from critwin.empirical.engine import on_engine, pack_key, packs, train_pack
from critwin.empirical.models import ModelConfig
from critwin.empirical.sweep import LocalExecutor, run_sweep
from helpers import Killed, kill_after

# The paper model's kind (post-LN, sinusoidal positions, scaled embedding, head bias, ReLU, dropout
# 0.1) at its smallest: d 16, 2 heads, 2 layers (the alignment metric needs two), one-token stones
# (83-token episodes), 4 chemistries (32 training queries); the paper's clipping and cosine schedule,
# the authors' decoupled decay on every parameter, S6's optimizer rebuilt at a freeze.
TINY = TrainConfig(task="alchemy_withheld", input_format="stone_states", chemistries=4,
                   model=replace(ModelConfig.alchemy_paper(), d=16, heads=2, layers=2), lr=1e-3,
                   lr_schedule="cosine", clip=0.5, batch_size=8, steps=6, eval_every=3, freeze_optimizer="rebuild",
                   wd_windows=((0.0, 6.0, 0.01),), decay_set="all")
# two seeds, a freeze branch of each kind S6 trains (the embedding, a layer), one at its own lr
MEMBERS = [TINY, replace(TINY, seed=1), replace(TINY, freeze=(("embedding", 2),)),
           replace(TINY, seed=1, lr=3e-3, freeze=(("layer1", 4),))]
# Stated tolerance: relative 1e-5 (absolute 1e-7 near zero) on every logged value. fp32 rounds at
# 6e-8; the pack computes with batched matmuls over members, one cross-entropy over all members'
# rows, and scores every query whole where the plain loop computes each episode's support once,
# so sums are taken in another order. Measured: at most 1.1e-7 relative over these four members.
# The dropout masks themselves are equal (drawn from each member's own random state), so no
# difference comes from sampling; a wrong mask, clip or freeze shows at 1e-3 or more (below).
RTOL, ATOL = 1e-5, 1e-7


def rows_agree(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    same_rows = list(a[["step", "split", "metric"]].itertuples(index=False)) == \
        list(b[["step", "split", "metric"]].itertuples(index=False))
    return same_rows and np.allclose(b.value, a.value, rtol=RTOL, atol=ATOL, equal_nan=True)


def test_the_sweep_packs_alchemy_runs_and_their_rows_equal_the_plain_loop(tmp_path):
    assert all(on_engine(c, None) for c in MEMBERS) and [len(p) for p in packs(MEMBERS)] == [4]
    store = RunStore(tmp_path / "runs")
    res = run_sweep(MEMBERS, store, LocalExecutor(1), progress=False)     # the sweep's own path: one pack
    assert len(res.done) == 4
    for c in MEMBERS:
        packed, alone = store.load(c.run_id()), train(c, progress=False)
        assert packed.summary["pack"]["members"] == 4 and "pack" not in alone.summary
        assert packed.summary["status"] == alone.summary["status"] == "complete"
        assert rows_agree(alone.metrics, packed.metrics), c.freeze
    # the test can fail: without dropout (other masks) the same run's rows differ far beyond the tolerance
    other = train(TINY.with_model(dropout=0.0), progress=False).metrics
    rel = ((other.value - store.load(TINY.run_id()).metrics.value).abs() / other.value.abs().clip(lower=1e-6)).max()
    assert rel > 1e-3


def test_what_makes_alchemy_runs_compatible():
    assert pack_key(replace(TINY, task_seed=3, seed=2, lr=1e-4)) == pack_key(TINY)
    for other in (replace(TINY, chemistries=8), replace(TINY, input_format=None), replace(TINY, query_end="potion"),
                  replace(TINY, clip=1.0), TINY.with_model(dropout=0.0), replace(TINY, freeze_optimizer="keep"),
                  replace(TINY, task="alchemy_composition", hops=2)):
        assert pack_key(other) not in (None, pack_key(TINY))
    assert pack_key(replace(TINY, checkpoints=(3,))) is None and pack_key(replace(TINY, precision="bf16")) is None


def test_an_alchemy_pack_killed_midway_resumes_with_the_same_masks(tmp_path):
    cfgs = [replace(c, steps=12, eval_every=4, wd_windows=()) for c in MEMBERS[1:3]]
    whole = train_pack(cfgs, progress=False)
    path = tmp_path / "pack.pt"
    with pytest.raises(Killed):
        train_pack(cfgs, progress=False, on_steps=kill_after(8 * len(cfgs)), resume=path, save_every=0)
    resumed = train_pack(cfgs, progress=False, resume=path, save_every=0)
    for a, b in zip(whole, resumed):
        assert b.summary["resumed_from_step"] == 4
        pd.testing.assert_frame_equal(a.metrics, b.metrics)


def _script(monkeypatch, capsys, *args) -> str:
    """benchmarks/device_check_alchemy.py run in this process with `args`: what it prints."""
    import importlib.util
    import sys
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "device_check_alchemy.py"
    spec = importlib.util.spec_from_file_location("device_check_alchemy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [str(path), *args])
    module.main()
    return capsys.readouterr().out


def test_the_gpu_script_runs_on_a_cpu_at_a_tiny_size(monkeypatch, capsys):
    out = _script(monkeypatch, capsys, "--device", "cpu", "--members", "2", "--steps", "5", "--warmup", "1", "--quick")
    lines = [line.split() for line in out.splitlines()]
    packed = [w for w in lines if w[:3] == ["packed", "engine", "2"]]
    plain = [w for w in lines if w[:3] == ["plain", "loop", "1"]]
    assert packed and plain and float(packed[-1][3]) > 0 and float(packed[-1][6]) > 0     # s a member-step, hours
    # the plain loop's branched and decided hours scale with their epochs, counted here run by run: a baseline
    # and each component (the embedding and the quick model's 2 layers) frozen at 70, 80, ..., 310 (to epoch
    # 1000), or paused as S6 pauses them (a baseline at 302, branches only before epoch 300, each to 312)
    points, comps = range(70, 311, 10), 3
    assert f"(1 + {comps * len(points)} freeze branches)" in out
    branched = sum([1000] + [1000 - e for e in points for _ in range(comps)])
    decided = sum([302] + [312 - e for e in points if e < 300 for _ in range(comps)])
    assert float(plain[-1][7]) / float(plain[-1][8]) == pytest.approx(branched / decided, rel=2e-3)   # 4 digits


def test_the_gpu_script_says_in_one_line_when_there_is_no_gpu(monkeypatch, capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(SystemExit) as stop:
        _script(monkeypatch, capsys, "--device", "cuda", "--members", "8", "--steps", "1")
    message = str(stop.value.code)
    assert "no CUDA GPU" in message and len(message.splitlines()) == 1 and capsys.readouterr().out == ""
