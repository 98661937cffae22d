"""The critical-windows paper's core contrast (claims W1, W2) at full paper size.

gamma = 0.8, 20,000 steps, AdamW lr 3e-3, batch 128; schedules: no decay, window [0, 5000)
at 4e-3, window [5000, 10000) at 4e-3, constant 1e-3; seeds 0..N-1. Runs go to the store
(already stored runs are skipped); the table reports final OOD accuracy mean and sd.

    python paper_checks/core_contrast.py --store runs --seeds 3 --workers 2 [--wd-scale 1]

`critwin check W1` / `W2` decide verdicts on the same runs; this script prints the four
schedules side by side.
"""
from __future__ import annotations

import argparse

from critwin.empirical import RunStore, TrainConfig, load_summaries
from critwin.empirical.sweep import LocalExecutor, run_sweep

PAPER = {"none": 0.151, "early [0,5000)": 0.151, "middle [5000,10000)": 0.931, "constant 1e-3": 0.912}


def schedules(scale: float, steps: int) -> dict:
    lw, lc = 4e-3 * scale, 1e-3 * scale
    return {"none": (), "early [0,5000)": ((0, 5000, lw),),
            "middle [5000,10000)": ((5000, 10000, lw),), "constant 1e-3": ((0, steps, lc),)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default="runs")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--wd-scale", type=float, default=1.0, help="multiply every decay value")
    args = ap.parse_args()
    named = {(name, s): TrainConfig(steps=args.steps, wd_windows=w, seed=s)
             for name, w in schedules(args.wd_scale, args.steps).items() for s in range(args.seeds)}
    run_sweep(list(named.values()), RunStore(args.store), LocalExecutor(args.workers))
    df = load_summaries(args.store).set_index("run_id")
    print(f"\n{'schedule':22s} {'paper':>6s} {'mean':>6s} {'sd':>6s}  per seed (final OOD acc)")
    for name in schedules(args.wd_scale, args.steps):
        ids = [c.run_id() for (n, _), c in named.items() if n == name]
        v = df.loc[ids, "final_ood_acc"].to_numpy()
        print(f"{name:22s} {PAPER[name]:6.3f} {v.mean():6.3f} {v.std(ddof=1) if len(v) > 1 else 0:6.3f}  "
              + " ".join(f"{x:.3f}" for x in v))


if __name__ == "__main__":
    main()
