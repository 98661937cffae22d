"""Claim files a dead writer left empty or unreadable (a kill between creating and writing it, or a
full disk): stale after a few seconds, so the run is trained, not skipped for good; claims are written
whole. Real processes and real files (a real full tmpfs where the machine lets us mount one)."""
import json
import os
import subprocess
import sys
import time

import pytest

from critwin.cli.main import build_parser, main
from critwin.cli.train import config_from_args
from critwin.empirical import RunStore
from critwin.empirical.store import CLAIM_PREFIX
from critwin.empirical.sweep import SweepSpec

CRITWIN = [sys.executable, "-m", "critwin.cli"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TRAIN = ["train", "anchor", "--d", "16", "--steps", "40", "--batch-size", "32", "--eval-every", "20", "--no-progress"]
SWEEP = ["sweep", "run", "--set", "d=16", "--set", "steps=40", "--set", "batch_size=32", "--set", "eval_every=20",
         "--no-progress", "--json", "--workers", "1"]


def train_id(argv) -> str:
    args = build_parser(argv).parse_args(argv)
    return config_from_args(args, "anchor_permutation").run_id()


def old_empty_claim(store, run_id: str, age: float = 60.0):
    """The claim file a writer killed before writing it leaves: 0 bytes, `age` seconds old."""
    store.mkdir(parents=True, exist_ok=True)
    path = store / f"{CLAIM_PREFIX}{run_id}"
    path.write_bytes(b"")
    os.utime(path, (time.time() - age, time.time() - age))
    return path


def test_critwin_train_takes_over_an_old_empty_claim_with_one_warning(tmp_path):
    store = tmp_path / "s"
    claim = old_empty_claim(store, train_id(TRAIN + ["--store", str(store)]))
    r = subprocess.run(CRITWIN + TRAIN + ["--store", str(store)], env=ENV, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    warned = [ln for ln in r.stderr.splitlines() if "claim" in ln]
    assert len(warned) == 1 and "taking over the claim file" in warned[0] and "empty" in warned[0], r.stderr
    assert not claim.exists() and RunStore(store).status(claim.name[len(CLAIM_PREFIX):]) == "complete"


def test_a_sweep_trains_a_run_whose_claim_was_left_empty(tmp_path):
    store = tmp_path / "s"
    rid = SweepSpec().with_sets(SWEEP[3:10:2]).expand()[0].run_id()
    claim = old_empty_claim(store, rid)
    r = subprocess.run(CRITWIN + SWEEP + ["--store", str(store)], env=ENV, capture_output=True, text=True, timeout=300)
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["done"] == 1 and res["busy"] == 0, (res, r.stderr)
    assert sum("taking over the claim file" in ln for ln in r.stderr.splitlines()) == 1, r.stderr
    assert not claim.exists() and RunStore(store).status(rid) == "complete"


def test_runs_progress_lists_an_old_empty_claim_and_clean_removes_it(tmp_path, capsys):
    store = tmp_path / "s"
    claim = old_empty_claim(store, "a" * 16)
    young = old_empty_claim(store, "b" * 16, age=0.0)      # may be a writer between create and write
    assert main(["runs", "progress", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "a" * 16 in out and "claim file empty" in out and "b" * 16 not in out
    assert main(["runs", "progress", "--store", str(store), "--clean"]) == 0
    assert "removed 1 unusable" in capsys.readouterr().out
    assert not claim.exists() and young.exists()


def test_a_young_empty_claim_is_left_alone_and_an_old_one_is_taken_over(tmp_path):
    store = RunStore(tmp_path)
    old_empty_claim(tmp_path, "young", age=1.0)
    old_empty_claim(tmp_path, "old", age=7.0)    # "a few seconds": stale
    assert not store.claim("young")
    with pytest.warns(UserWarning, match="taking over the claim file .*empty"):
        assert store.claim("old")
    assert json.loads((tmp_path / f"{CLAIM_PREFIX}old").read_text())["pid"] == os.getpid()
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]        # written whole, no temporary left


def test_a_full_disk_leaves_no_claim_file_and_the_run_trains_once_space_is_freed(small_disk):
    store = small_disk / "s"
    store.mkdir()
    st = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (st.f_bavail * st.f_frsize))
    cmd = CRITWIN + TRAIN + ["--store", str(store)]
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "No space left" in r.stderr, r.stderr
    assert f"({store / CLAIM_PREFIX}" in r.stderr, r.stderr            # names the claim that did not fit
    assert len(r.stderr.strip().splitlines()) == 1
    assert not [p.name for p in store.iterdir()], "a full disk left files in the store"
    filler.unlink()
    again = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
