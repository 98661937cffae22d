"""What each difference between the authors' code and the paper's text does: the `authors` recipe with one
difference at a time put back to the toolkit's `paper` choice, every arm trained for the same epochs on the
same seed, read as held-out event A at equal epochs and the epoch A completes (the first of three evaluations in a row at 0.95 or more).

A GPU budget at paper size (an arm is ~17k CPU-steps to epoch 50); `paper_checks/gpu_alchemy.py --ablation`
runs it, and at --size quick on a CPU it exercises the same machinery in seconds.
"""
from __future__ import annotations

import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

# arm -> the options that put one difference back (empty: the authors' recipe itself)
ARMS = {
    "authors": [],
    "init N(0, 1/fan_in)": ["--init", "multiplier"],
    "layers drawn independently": ["--layer-init", "independent"],
    "betas 0.9 0.98": ["--betas", "0.9", "0.98"],
    "no decay": ["--wd", "0"],
    "cosine lr": ["--lr-schedule", "cosine"],
    "query closed by <io>": ["--query-end", "io"],
    "their held-out split": ["--split", "authors"],
}


def arm_command(arm: str, size: str, epochs: int, seed: int, device: str, store, horizon: int | None = None) -> list[str]:
    """The `critwin train alchemy` command line of one arm: a run of `horizon` epochs (default `epochs`) paused
    after `epochs`, so a schedule (the cosine arm's) is the long run's, not one annealed to zero at the pause."""
    if arm not in ARMS:
        raise ValueError(f"arm: {arm!r} is not one of {', '.join(ARMS)}")
    horizon = epochs if horizon is None else horizon
    if horizon < epochs:
        raise ValueError(f"horizon: {horizon} epochs, fewer than the {epochs} to train")
    pause = ["--stop-at-epoch", str(epochs)] if horizon > epochs else []
    return [sys.executable, "-m", "critwin.cli", "train", "alchemy", "--task", "withheld", "--size", size,
            "--epochs", str(horizon), *pause, "--seed", str(seed), "--device", device, "--store", str(store),
            "--no-progress", "--json", *ARMS[arm]]


def arm_store(store, arm: str, seed: int = 0) -> Path:
    """The arm's own store folder under `store`, one per seed (so a run stopped at the deadline is known by its
    resume state)."""
    return Path(store) / (re.sub(r"[^a-z0-9]+", "_", arm.lower()).strip("_") + (f"_seed{seed}" if seed else ""))


def arm_label(arm: str, seed: int) -> str:
    """An arm's name in the tables: the arm, and its seed when not 0."""
    return arm if seed == 0 else f"{arm} (seed {seed})"


def train_arms(arms, size: str, epochs: int, seeds: list[int], device: str, store, workers: int, deadline: float,
               horizon: int | None = None) -> dict:
    """Train the arms at each of `seeds` side by side (`workers` processes), each in its own store folder
    (`arm_store`), for `epochs` of runs `horizon` epochs long; label (`arm_label`) -> (run id or None, status,
    the arm's store). A run paused at `epochs`, or cut by the deadline, keeps its resume state and is read as far
    as it got."""
    from critwin.empirical.store import RunStore
    from critwin.paper_checks.deadline import last_error_line, run_before

    def one(item):
        arm, seed = item
        label = arm_label(arm, seed)
        where = arm_store(store, arm, seed).resolve()
        where.mkdir(parents=True, exist_ok=True)     # run from there: a repository root's critwin/ would shadow the
        r = run_before(arm_command(arm, size, epochs, seed, device, where, horizon), deadline,   # installed one
                       cwd=where)
        if r == "not run":
            return label, None, "not run: deadline reached", where
        if r == "stopped":
            left = [r["run_id"] for r in RunStore(where).in_progress()]    # the arm's one run, by its resume state
            rid = left[0] if len(left) == 1 else None
            return label, rid, "stopped at the deadline" + (" (read from its resume state)" if rid else ""), where
        if r.returncode != 0:
            return label, None, f"error: {last_error_line(r) or f'exit {r.returncode}'}", where
        out = json.loads(r.stdout)
        why = (f"paused at epoch {epochs} of {horizon} (read from its resume state)" if out["status"] == "paused"
               else out["status"])
        return label, out["run_id"], why, where
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return {label: (rid, why, where) for label, rid, why, where in
                pool.map(one, [(arm, seed) for seed in seeds for arm in arms])}


def held_out_curves(ran: dict, per_epoch: int) -> pd.DataFrame:
    """Every held-out metric of every arm (`train_arms`'s result) by epoch, one long table (arm, run_id, epoch,
    metric, value), each run read once, complete or from its resume state so far."""
    from critwin.empirical.store import RunStore
    from critwin.paper_checks.alchemy_checks import InProgressView
    parts = []
    for arm, (rid, _, where) in ran.items():
        run = InProgressView(RunStore(where)).complete(rid) if rid else None
        if run is None:
            continue
        m = run.metrics[run.metrics.split == "test"]
        parts.append(pd.DataFrame({"arm": arm, "run_id": rid, "epoch": m.step / per_epoch,
                                   "metric": m.metric, "value": m.value}))
    cols = ["arm", "run_id", "epoch", "metric", "value"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def a_by_epoch(curves: pd.DataFrame, arm: str) -> pd.Series:
    """Held-out event A per epoch of one arm, from `held_out_curves`' table (empty when it has none)."""
    a = curves[(curves.arm == arm) & (curves.metric == "event_a")]
    return a.set_index("epoch").value.sort_index().astype(float)


def ablation_table(curves: dict, at_epochs) -> pd.DataFrame:
    """One row per arm: A at each of `at_epochs` (nearest evaluation at or before it; nan past the run's
    end) and the epoch A completes."""
    from critwin.empirical.metrics.stages import stage_time
    rows = []
    for arm, a in curves.items():
        row = {"arm": arm}
        for e in at_epochs:
            seen = a[a.index <= e + 1e-9]
            row[f"A@{e:g}"] = float(seen.iloc[-1]) if len(seen) and seen.index[-1] >= e - 1 else float("nan")
        row["A completes (epoch)"] = stage_time(a.index, a.values, "event_a") if len(a) > 1 else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)
