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
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from pathlib import Path

import torch

from critwin.empirical.store import write_atomic
from critwin.paper_checks.claims import CHECKS

RUN_ID = "4fd235a0283b7550"            # train_long.sh's run (seed 0); its id is its config's hash
KEEP = tuple(CHECKS["S6"].plan("authors", points=3)[1])   # S6's 3-point grid at the authors' size: epochs 10, 80, 140
HERE = Path(__file__).resolve().parent / "carry"


def _sha(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()[:16]


def save(store: Path, run_id: str = RUN_ID, keep=KEEP, out: Path = HERE) -> dict:
    """Split the store's resume state of `run_id` into out/state.pt and one file per kept checkpoint."""
    src = store / f".resume-{run_id}.pt"
    if not src.is_file():
        raise SystemExit(f"carry: no resume state at {src}")
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


def restore(store: Path, run_id: str = RUN_ID, src: Path = HERE) -> dict:
    """Reassemble the resume state from src/ into the store (refused if the store's own is further on)."""
    manifest = json.loads((src / "manifest.json").read_text())
    if manifest["run_id"] != run_id:
        raise SystemExit(f"carry: the carried state is of run {manifest['run_id']}, not {run_id}")
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
