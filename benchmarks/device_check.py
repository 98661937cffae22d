"""The engine's checks on an accelerator, as one prepared script (for a session that has one).

1. parity: a pack of 3 members (seeds, task instances, an l2 and a decoupled window) trained
   on the device against each member trained alone on the same device; prints the largest
   relative difference per split (the CPU tests bound them by 1e-4, Adam's gain by 0.25);
2. speed: benchmarks/bench_engine.py's table on the device;
3. a real job: W1 and W2 under the l2 reading (3 task instances x 3 seeds, 27 runs of 20k
   steps) trained in packs into a fresh store, with its wall time and the mean final OOD per
   schedule (the device is part of a run's identity, so `critwin check` on CPU does not read them).

Alchemy's packs on the device (the paper-size protocol's first steps and its estimated hours):
benchmarks/device_check_alchemy.py.

Run: python benchmarks/device_check.py --device cuda --out DIR [--quick]
(--quick: 60-step runs and small packs, to exercise the script on a CPU.)
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from critwin.empirical import RunStore, TrainConfig, train
from critwin.empirical.engine import train_pack
from critwin.empirical.models import ModelConfig
from critwin.empirical.sweep import LocalExecutor


def parity(device: str, steps: int) -> list[dict]:
    base = TrainConfig(model=ModelConfig(d=16), steps=steps, batch_size=32, eval_every=max(1, steps // 3), device=device)
    cfgs = [base, replace(base, seed=1, task_seed=1, wd_windows=((steps / 6, steps / 2, 0.5),), decay_form="l2",
                          decay_set="non_embedding"),
            replace(base, seed=2, wd_windows=((0.0, float(steps), 0.3),))]
    rows = []
    for c, r in zip(cfgs, train_pack(cfgs, progress=False)):
        a, b = train(c, progress=False).metrics, r.metrics
        rel = (a.value - b.value).abs() / a.value.abs().clip(lower=1e-6)
        for (split, metric), v in a.assign(rel=rel).groupby(["split", "metric"]).rel.max().items():
            rows.append({"run": c.run_id(), "split": split, "metric": metric, "max_rel_diff": float(v)})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="critwin-out/device")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"[1/3] parity on {args.device}", flush=True)
    rows = parity(args.device, 60 if args.quick else 300)
    worst = max(rows, key=lambda r: r["max_rel_diff"] if np.isfinite(r["max_rel_diff"]) else -1)
    gain = max((r["max_rel_diff"] for r in rows if r["metric"] == "adam_gain" and np.isfinite(r["max_rel_diff"])),
               default=float("nan"))
    others = max(r["max_rel_diff"] for r in rows if r["metric"] not in ("adam_gain", "effective_shrink")
                 and np.isfinite(r["max_rel_diff"]))
    print(f"  largest relative difference: {worst}; every metric but Adam's gain and shrink: {others:.2e};"
          f" Adam's gain: {gain:.2e}", flush=True)
    print(f"[2/3] bench_engine on {args.device}", flush=True)
    members = ["1", "4"] if args.quick else ["1", "8", "32", "64", "128", "256"]
    subprocess.run([sys.executable, str(Path(__file__).with_name("bench_engine.py")), "--device", args.device,
                    "--steps", "20" if args.quick else "200", "--members", *members], check=True)
    print("[3/3] W1 + W2 under l2, 3 task instances x 3 seeds, in packs", flush=True)
    from critwin.paper_checks import CHECKS
    from critwin.empirical.sweep import run_sweep
    reading = {"decay_form": "l2", "decay_set": "non_embedding"}
    cfgs = {}
    for cid in ("W1", "W2"):
        for (name, *_), c in CHECKS[cid].configs("paper", 1.0, 3, 3, reading).items():
            c = replace(c, device=args.device)
            if args.quick:
                c = replace(c, steps=60, wd_windows=(), eval_every=30)
            cfgs.setdefault(name, {})[c.run_id()] = c
    store = RunStore(out / "store")
    t = time.perf_counter()
    todo = [c for group in cfgs.values() for c in group.values()]
    res = run_sweep(todo, store, LocalExecutor(1, pack=4 if args.quick else 64), progress=False)
    print(f"  {res.describe()} in {time.perf_counter() - t:.0f} s", flush=True)
    for name, group in cfgs.items():
        ood = [store.load(rid).summary["final"]["ood_acc"] for rid in group]
        print(f"  {name}: final OOD {np.mean(ood):.3f} +- {np.std(ood, ddof=1) if len(ood) > 1 else 0:.3f}"
              f" over {len(ood)} runs", flush=True)


if __name__ == "__main__":
    main()
