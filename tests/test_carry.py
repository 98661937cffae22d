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


def _carry(name: str = "carry"):
    spec = importlib.util.spec_from_file_location(name, ROOT / f"paper_checks/reports/alchemy_authors/{name}.py")
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


def test_a_run_carried_after_it_finished_is_the_stored_run_with_the_kept_checkpoints(tmp_path):
    """Once the long run is stored complete it has no resume state: carry.py save takes its folder and the kept
    checkpoints (the state.pt of its training days is dropped), and restore rebuilds the stored run, its metrics
    and the kept checkpoints as the store wrote them, so a branch reads the same state on the new machine."""
    from critwin.empirical import RunStore
    from critwin.empirical.sweep import run_sweep
    carry = _carry()
    cfg = config_from_flat(CFG)
    rid = cfg.run_id()
    old, new, repo = (RunStore(tmp_path / n) for n in ("old", "new", "carry"))
    with pytest.raises(Killed):         # first carried while in training, as the long run was
        train(cfg, progress=False, on_steps=kill_after(35), resume=old.ensure_writable().resume_path(rid), save_every=0)
    carry.save(old.root, rid, keep=(20,), out=repo.root)
    assert (repo.root / "state.pt").is_file()
    run_sweep([cfg], old, progress=False)                      # then it finishes: a folder, no resume state
    assert old.status(rid) == "complete" and not old.resume_path(rid).exists()
    m = carry.save(old.root, rid, keep=(20,), out=repo.root)
    assert m["complete"] and m["step"] == 60 and list(m["checkpoints_kept"]) == [20] and m["checkpoints_dropped"] == [10]
    assert not (repo.root / "state.pt").exists()
    with pytest.raises(Killed):          # the new machine had trained part of it: the finished run supersedes that
        train(cfg, progress=False, on_steps=kill_after(15), resume=new.ensure_writable().resume_path(rid), save_every=0)
    carry.restore(new.root, rid, src=repo.root)
    assert new.status(rid) == "complete" and not new.resume_path(rid).exists()
    pd.testing.assert_frame_equal(new.load(rid).metrics, old.load(rid).metrics)
    assert new.load(rid).summary == old.load(rid).summary and new.checkpoint_steps(rid) == [20]
    a, b = new.checkpoint(rid, 20), old.checkpoint(rid, 20)
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    with pytest.raises(SystemExit, match="already stored"):
        carry.restore(new.root, rid, src=repo.root)
    (repo.root / rid / "summary.json").write_text("{}")
    with pytest.raises(SystemExit, match="differs"):
        carry.restore(RunStore(tmp_path / "third").root, rid, src=repo.root)


def test_train_long_takes_each_seeds_own_carried_state(tmp_path):
    """train_long.sh restores seed 0 from carry/ and seed N from carry_seedN/ (never another seed's state), and
    trains that seed; the script runs beside stand-ins for carry.py and critwin that record their arguments."""
    import os
    import shutil
    import subprocess
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "alchemy_authors" / "train_long.sh"
    here = tmp_path / "reports"
    here.mkdir()
    shutil.copy(src, here / "train_long.sh")
    log = tmp_path / "log"
    (here / "carry.py").write_text(f"import sys\nopen({str(log)!r}, 'a').write('carry ' + ' '.join(sys.argv[1:]) + '\\n')\n")
    for d, rid in (("carry", "zero"), ("carry_seed1", "one")):
        (here / d).mkdir()
        (here / d / "manifest.json").write_text('{"run_id": "%s"}' % rid)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "critwin").write_text(f"#!/bin/sh\necho critwin \"$@\" >> {log}\n")
    (bin_ / "critwin").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "STORE": str(tmp_path / "runs")}
    lines = {}
    for seed in ("0", "1", "2"):
        log.write_text("")
        subprocess.run(["bash", str(here / "train_long.sh"), seed], env=env, check=True, timeout=60)
        lines[seed] = log.read_text().splitlines()
    assert lines["0"][0].endswith(f"--dir {here / 'carry'} --run-id zero")
    assert lines["1"][0].endswith(f"--dir {here / 'carry_seed1'} --run-id one")
    assert len(lines["2"]) == 1                                     # no carried state for seed 2: none restored
    assert all(f"--seed {s}" in lines[s][-1] and lines[s][-1].startswith("critwin train alchemy") for s in lines)


def test_a_carried_store_brings_back_paused_branches_and_cut_runs_but_not_their_source(tmp_path):
    """carry_store.py: a paused branch travels as its folder (no resume state: its pause settles it, so the
    same sweep on the new machine trains nothing), a branch cut short as its resume state (and finishes
    there as the uninterrupted run), and --branches-of leaves the source run itself behind."""
    from critwin.bridge.plasticity import plasticity_configs
    from critwin.empirical import RunStore
    from critwin.empirical.loop import Paused
    from critwin.empirical.sweep import Pause, run_sweep
    carry_store = _carry("carry_store")
    cfgs = plasticity_configs({**CFG, "checkpoints": [20]}, "layer0", [20], [0, 1])
    base = [cfgs[(None, 0)], cfgs[(None, 1)]]
    paused, cut = cfgs[(20, 0)], cfgs[(20, 1)]
    old, new, ref, box = (RunStore(tmp_path / n).ensure_writable() for n in ("old", "new", "ref", "box"))
    with pytest.raises(Paused):         # the source is still in training (its checkpoints in its resume state)
        train(base[0], progress=False, resume=old.resume_path(base[0].run_id()), until=40)
    run_sweep([base[1]], old, progress=False)
    run_sweep([paused], old, progress=False, pause=Pause(until=30))
    with pytest.raises(Paused):
        train(cut, progress=False, start=old.checkpoint(*cut.branch_point()), resume=old.resume_path(cut.run_id()),
              until=30)
    assert carry_store.main(["save", str(old.root), str(box.root), "--branches-of", base[0].run_id()]) == 0
    assert sorted(p.name for p in box.root.iterdir()) == sorted([paused.run_id(), "resume"])   # cut's source differs
    carry_store.save(old.root, box.root)
    assert {p.name for p in (box.root / "resume").iterdir()} == {f".resume-{r.run_id()}.pt" for r in (base[0], cut)}
    carry_store.restore(new.root, box.root)
    assert new.status(paused.run_id()) == "paused" and not new.resume_path(paused.run_id()).exists()
    res = run_sweep([paused], new, progress=False, pause=Pause(until=30))
    assert res.skipped == [paused.run_id()] and not res.paused
    run_sweep([base[1]], ref, progress=False)
    run_sweep([cut], ref, progress=False)
    run_sweep([cut], new, progress=False)
    pd.testing.assert_frame_equal(new.load(cut.run_id()).metrics, ref.load(cut.run_id()).metrics)
    assert new.load(cut.run_id()).summary["resumed_from_step"] == 30
