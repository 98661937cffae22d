"""Carry a store's runs across machines that do not keep their disks: its run folders (finished or
paused; tens of KB each) and the resume states of runs cut short with no folder yet.

    python3 carry_store.py save    STORE_DIR CARRY_DIR [--branches-of RUN_ID]   # store -> CARRY_DIR (commit it)
    python3 carry_store.py restore STORE_DIR CARRY_DIR                          # before training on a new machine

CARRY_DIR holds one folder per run and `resume/.resume-ID.pt`. A carried folder is replaced when the
store's differs (a paused run trained on); a run with a folder carries no resume state (a paused one
is settled where its pause left it). Restoring never overwrites what the store has. `--branches-of`
carries only the runs that branch from that run (S6's frozen runs beside the long run in one store).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

RESUME = "resume"


def _branch_source(config: dict) -> str | None:
    return (config.get("branch") or "").split("@")[0] or None


def _state_source(path: Path) -> str | None:
    import torch
    try:
        return _branch_source(torch.load(path, map_location="cpu", weights_only=False)["config"])
    except Exception:  # noqa: BLE001 - an unreadable state is not carried
        return None


def save(store: Path, carry: Path, branches_of: str | None = None) -> dict:
    """Copy the store's run folders (new or changed) and the resume states of runs without a folder into `carry`."""
    (carry / RESUME).mkdir(parents=True, exist_ok=True)
    folders = states = 0
    for run in sorted(p for p in store.iterdir() if (p / "summary.json").is_file()):
        if branches_of and _branch_source(json.loads((run / "config.json").read_text())) != branches_of:
            continue
        have = carry / run.name
        if not (have / "summary.json").is_file() or (have / "summary.json").read_bytes() != (run / "summary.json").read_bytes():
            shutil.rmtree(have, ignore_errors=True)
            shutil.copytree(run, have)
        (carry / RESUME / f".resume-{run.name}.pt").unlink(missing_ok=True)
        folders += 1
    for state in sorted(store.glob(".resume-*.pt")):
        rid = state.name[len(".resume-"):-len(".pt")]
        if (store / rid / "summary.json").is_file() or (branches_of and _state_source(state) != branches_of):
            continue
        shutil.copy2(state, carry / RESUME / state.name)
        states += 1
    return {"folders": folders, "resume_states": states, "carry": str(carry)}


def restore(store: Path, carry: Path) -> dict:
    """Put carried folders and resume states into `store` where it has neither of that run."""
    store.mkdir(parents=True, exist_ok=True)
    folders = states = 0
    for run in sorted(p for p in carry.iterdir() if p.is_dir() and p.name != RESUME) if carry.is_dir() else []:
        if not (store / run.name).exists():
            shutil.copytree(run, store / run.name)
            folders += 1
    for state in sorted((carry / RESUME).glob(".resume-*.pt")):
        rid = state.name[len(".resume-"):-len(".pt")]
        if not (store / rid).exists() and not (store / state.name).exists():
            shutil.copy2(state, store / state.name)
            states += 1
    return {"folders": folders, "resume_states": states, "store": str(store)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["save", "restore"])
    ap.add_argument("store", type=Path)
    ap.add_argument("carry", type=Path)
    ap.add_argument("--branches-of", default=None, help="save: only the runs that branch from this run id")
    a = ap.parse_args(argv)
    out = save(a.store, a.carry, a.branches_of) if a.action == "save" else restore(a.store, a.carry)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
