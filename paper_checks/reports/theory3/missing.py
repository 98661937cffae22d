"""The `critwin sweep run` commands that train only a cell's runs not yet in measured/<cell id>.csv, as few
Cartesian grids as cover them exactly (a store does not outlive its machine, so a cell measured in part on an
earlier machine goes on from its CSV). Prints one command per line; none when the cell is complete.

With WORKERS, each command also names the pack size that fills every round on that many workers (`pack_count`),
so a sweep at an older commit packs the same way; never smaller than a pack killed midway in STORE whose members
are all still to train, since a sweep trains such a pack afresh when --pack is below its size. With DEVICE cuda
the runs train on the GPU (`--set device=cuda`), packed up to the GPU's default size (64: a whole cell in one pack).

Run: python3 paper_checks/reports/theory3/missing.py CELL_ID [STORE [WORKERS [DEVICE]]]
     ($REGISTRATION: the registration holding the cell, relative to this folder; default registration.json)
"""
import json
import os
import shlex
import sys
from pathlib import Path

import pandas as pd
from critwin.empirical.config import DEVICES
from critwin.empirical.engine import default_pack_size, pack_count
from critwin.empirical.store import RunStore

HERE = Path(__file__).parent
GRID = ("wd_window_start", "task_seed", "seed")


def grid_of(measure: str) -> tuple[list[str], dict]:
    """A cell's measuring command split into its fixed words and its grid (onsets, task instances, seeds)."""
    words, grid, out = shlex.split(measure), {}, []
    i = 0
    while i < len(words):
        if words[i] == "--set" and words[i + 1].split("=")[0] in GRID:
            key, values = words[i + 1].split("=", 1)
            grid[key] = [int(float(v)) for v in values.split(",")]
            i += 2
            continue
        out.append(words[i])
        i += 1
    return out, grid


def missing_grids(grid: dict, done: set) -> list[dict]:
    """Cartesian grids covering exactly the (onset, task_seed, seed) runs of `grid` not in `done`: pairs
    (task_seed, seed) grouped by their missing onsets, then task instances grouped by their seeds."""
    by_onsets: dict[tuple, dict] = {}
    for t in grid["task_seed"]:
        for s in grid["seed"]:
            onsets = tuple(o for o in grid["wd_window_start"] if (o, t, s) not in done)
            if onsets:
                by_onsets.setdefault(onsets, {}).setdefault(t, []).append(s)
    out = []
    for onsets, tasks in by_onsets.items():
        by_seeds: dict[tuple, list] = {}
        for t, seeds in tasks.items():
            by_seeds.setdefault(tuple(seeds), []).append(t)
        out += [{"wd_window_start": list(onsets), "task_seed": ts, "seed": list(seeds)} for seeds, ts in by_seeds.items()]
    return out


def even_pack(n: int, workers: int, device: str = "cpu") -> int:
    """The pack size (members) that splits `n` runs on `device` into a multiple of `workers` packs."""
    return -(-n // pack_count(n, default_pack_size(device), workers))


def resumable(store: str | None) -> int:
    """Members of the largest pack killed midway in `store` whose members are all still to train (0: none)."""
    if store is None or not Path(store).is_dir():
        return 0
    s = RunStore(store)
    return max((len(ids) for _, ids, _ in s.pack_resumes() if ids and all(s.status(r) != "complete" for r in ids)),
               default=0)


def commands(cell: dict, done: set, store: str | None = None, workers: int | None = None,
             device: str = "cpu") -> list[str]:
    if device not in DEVICES:
        raise SystemExit(f"DEVICE: {device!r} is not one of {', '.join(DEVICES)}")
    words, grid = grid_of(cell["measure"])
    if store is not None:
        words[words.index("--store") + 1] = store
    if device != "cpu":
        words += ["--set", f"device={device}"]
    out, least = [], resumable(store) if workers else 0
    for g in missing_grids(grid, done):
        n = len(g["wd_window_start"]) * len(g["task_seed"]) * len(g["seed"])
        pack = ["--pack", str(max(even_pack(n, workers, device), least))] if workers else []
        out.append(shlex.join(words + [w for k in GRID for w in ("--set", f"{k}={','.join(map(str, g[k]))}")] + pack))
    return out


if __name__ == "__main__":
    cid = sys.argv[1]
    reg = json.loads((HERE / os.environ.get("REGISTRATION", "registration.json")).read_text())
    (cell,) = [c for c in reg["cells"] if c["id"] == cid]
    path = Path(os.environ.get("MEASURED", HERE / "measured")) / f"{cid}.csv"
    done = set()
    if path.is_file():
        done = {(int(r.onset), int(r.task_seed), int(r.seed)) for r in pd.read_csv(path).itertuples()}
    store, workers, device = (sys.argv[2:] + [None, None, None])[:3]
    for line in commands(cell, done, store, int(workers) if workers else None, device or "cpu"):
        print(line)
