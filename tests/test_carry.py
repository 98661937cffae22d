"""The long Alchemy run's carry (paper_checks/reports/alchemy_authors/carry.py): a resume state split
into the repository and put back on a new machine continues exactly as the uninterrupted run."""
import importlib.util
import io
from pathlib import Path

import pandas as pd
import pytest
import torch

from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import train
from helpers import Killed, kill_after

ROOT = Path(__file__).resolve().parents[1]
CFG = {"d": 16, "steps": 60, "batch_size": 32, "eval_every": 10, "dropout": 0.1, "checkpoints": [10, 20]}


def _carry():
    spec = importlib.util.spec_from_file_location("carry", ROOT / "paper_checks/reports/alchemy_authors/carry.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_carried_state_resumes_exactly_and_keeps_only_the_chosen_checkpoints(tmp_path):
    carry = _carry()
    cfg = config_from_flat(CFG)
    whole = train(cfg, progress=False)
    old, new, repo = tmp_path / "old", tmp_path / "new", tmp_path / "carry"
    old.mkdir()
    rid = cfg.run_id()
    with pytest.raises(Killed):
        train(cfg, progress=False, on_steps=kill_after(35), resume=old / f".resume-{rid}.pt", save_every=0)
    m = carry.save(old, rid, keep=(20,), out=repo)
    assert m["step"] == 30 and list(m["checkpoints_kept"]) == [20] and m["checkpoints_dropped"] == [10]
    carry.restore(new, rid, src=repo)
    resumed = train(cfg, progress=False, resume=new / f".resume-{rid}.pt", save_every=0)
    assert resumed.summary["resumed_from_step"] == 30
    pd.testing.assert_frame_equal(resumed.metrics, whole.metrics)
    assert sorted(resumed.checkpoints) == [20]        # the dropped one is not invented
    a, b = (torch.load(io.BytesIO(r.checkpoints[20]), weights_only=False) for r in (whole, resumed))
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    with pytest.raises(SystemExit, match="already at step"):       # a store further on is never overwritten
        carry.restore(new, rid, src=repo)
    with pytest.raises(SystemExit, match="not"):
        carry.restore(new, "0" * 16, src=repo)
