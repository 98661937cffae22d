"""Carry the long Alchemy run's resume state across machines that do not keep their disks.

The run takes ~20 CPU-hours and each working machine lives a few hours, so its state travels
in the repository (`carry/`): `state.pt` is the resume state without its checkpoints, and
each kept checkpoint is a file of its own (`checkpoint-STEP.pt`), written once. Only the
checkpoints S6's 3-point grid branches from are kept by default (epochs 10, 80, 140); each
is 26 MB. The reassembled file is the very resume state the run wrote, minus the dropped
checkpoints, so a resumed run continues bit for bit.

    python3 carry.py save    STORE_DIR   # after a stretch of training: store -> carry/
    python3 carry.py restore STORE_DIR   # on a new machine, before train_long.sh
    python3 carry.py save STORE_DIR --run-id ID --dir carry_tiny   # another run (train_long.sh with SIZE=authors_tiny)

Once the run is stored complete it has no resume state: `save` then carries its folder (`ID/`: config, summary,
environment and metrics, as the store wrote them) and the kept checkpoints, and `restore` rebuilds the stored run
from them (the checkpoints back in its `checkpoints/` folder, where S6's branches read them).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch

from critwin.empirical.store import FILES as RUN_FILES, RunStore, read_run, write_atomic   # a stored run's files
from critwin.paper_checks.claims import CHECKS

RUN_ID = "4fd235a0283b7550"            # train_long.sh's run (seed 0); its id is its config's hash
KEEP = tuple(CHECKS["S6"].plan("authors", points=3)[1])   # S6's 3-point grid at the authors' size: epochs 10, 80, 140
HERE = Path(__file__).resolve().parent / "carry"


def _sha(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()[:16]


def save(store: Path, run_id: str = RUN_ID, keep=KEEP, out: Path = HERE) -> dict:
    """Split the store's resume state of `run_id` into out/state.pt and one file per kept checkpoint; a run
    stored complete (no resume state any more) goes as its folder's files and its kept checkpoints."""
    src = store / f".resume-{run_id}.pt"
    if not src.is_file():
        if (store / run_id / "summary.json").is_file():
            return _save_complete(store / run_id, run_id, keep, out)
        raise SystemExit(f"carry: no resume state at {src} and no stored run {store / run_id}")
    state = torch.load(src, map_location="cpu", weights_only=False)
    ckpts = state.pop("checkpoints", {}) or {}
    out.mkdir(parents=True, exist_ok=True)
    kept = {}
    for step, blob in sorted(ckpts.items()):
        if int(step) in keep:
            path = out / f"checkpoint-{int(step)}.pt"
            if not path.is_file():
                write_atomic(path, blob)
            kept[int(step)] = _sha(path.read_bytes())
    buf = io.BytesIO()
    torch.save(state, buf)
    write_atomic(out / "state.pt", buf.getvalue())
    manifest = {"run_id": run_id, "step": int(state["step"]), "wall_s": round(float(state.get("wall", 0.0)), 1),
                "checkpoints_kept": kept, "checkpoints_dropped": sorted(int(s) for s in ckpts if int(s) not in keep),
                "state_sha": _sha(buf.getvalue())}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _save_complete(folder: Path, run_id: str, keep, out: Path) -> dict:
    summary = json.loads((folder / "summary.json").read_text())
    if summary.get("status") != "complete":
        raise SystemExit(f"carry: {folder} is {summary.get('status')}, not complete, and has no resume state")
    (out / run_id).mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:
        write_atomic(out / run_id / name, (folder / name).read_bytes())
    steps = sorted(int(p.stem.split("_")[1]) for p in (folder / "checkpoints").glob("step_*.pt"))
    kept = {}
    for step in steps:
        if step in keep:
            path = out / f"checkpoint-{step}.pt"
            blob = (folder / "checkpoints" / f"step_{step}.pt").read_bytes()
            if not path.is_file() or path.read_bytes() != blob:
                write_atomic(path, blob)
            kept[step] = _sha(blob)
    (out / "state.pt").unlink(missing_ok=True)          # the resume state it came from is gone with the run's end
    manifest = {"run_id": run_id, "complete": True, "step": int(summary["steps_done"]),
                "wall_s": round(float(summary.get("wall_seconds", 0.0)), 1), "checkpoints_kept": kept,
                "checkpoints_dropped": [s for s in steps if s not in keep],
                "files": {name: _sha((out / run_id / name).read_bytes()) for name in RUN_FILES}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _restore_complete(store: Path, run_id: str, src: Path, manifest: dict) -> dict:
    """Store the run read from src/ID/ with the kept checkpoints (the store's own atomic save: never half a run)."""
    if (store / run_id / "summary.json").is_file():
        raise SystemExit(f"carry: {store / run_id} is already stored; left as is")
    for name in RUN_FILES:
        if _sha((src / run_id / name).read_bytes()) != manifest["files"][name]:
            raise SystemExit(f"carry: {src / run_id / name} differs from what the manifest records")
    run = replace(read_run(src / run_id), checkpoints={int(s): (src / f"checkpoint-{int(s)}.pt").read_bytes()
                                                        for s in manifest["checkpoints_kept"]})
    target = RunStore(store)
    target.save(run)
    target.drop_resume(run_id)          # a part-way state here is behind the finished run
    return manifest


def restore(store: Path, run_id: str = RUN_ID, src: Path = HERE) -> dict:
    """Reassemble the resume state from src/ into the store (refused if the store's own is further on), or
    the stored run itself when it was carried complete."""
    manifest = json.loads((src / "manifest.json").read_text())
    if manifest["run_id"] != run_id:
        raise SystemExit(f"carry: the carried state is of run {manifest['run_id']}, not {run_id}")
    if manifest.get("complete"):
        return _restore_complete(store, run_id, src, manifest)
    state = torch.load(src / "state.pt", map_location="cpu", weights_only=False)
    state["checkpoints"] = {int(s): (src / f"checkpoint-{int(s)}.pt").read_bytes()
                            for s in manifest["checkpoints_kept"]}
    dst = store / f".resume-{run_id}.pt"
    if dst.is_file():
        have = torch.load(dst, map_location="cpu", weights_only=False)["step"]
        if have >= state["step"]:
            raise SystemExit(f"carry: {dst} is already at step {have} >= the carried {state['step']}; left as is")
    store.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(state, buf)
    write_atomic(dst, buf.getvalue())       # the store's own atomic write: a kill leaves no half file
    return manifest


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=["save", "restore"])
    p.add_argument("store", type=Path, help="the run store (train_long.sh's $STORE/store)")
    p.add_argument("--run-id", default=RUN_ID, help=f"the run to carry (default: the long run, {RUN_ID})")
    p.add_argument("--dir", type=Path, default=HERE, help="where its state travels (default: carry/)")
    a = p.parse_args(argv)
    m = save(a.store, a.run_id, out=a.dir) if a.action == "save" else restore(a.store, a.run_id, src=a.dir)
    print(f"carry {a.action}: run {m['run_id']} at step {m['step']} ({m['wall_s'] / 3600:.2f} training hours); "
          f"checkpoints carried {sorted(m['checkpoints_kept'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
