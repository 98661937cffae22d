"""End-to-end wall time of paper checks from a clean store (issue #13's target: W1 + W2 at
paper size, 4 schedules x 3 seeds x 20k steps, with every evaluation the checks log).

Run: python benchmarks/bench_checks.py [--checks W1 W2] [--workers 2] [--seeds 3] [--task-seeds 1]
                                       [--pack N] [--store DIR]
The store defaults to a fresh temporary folder (deleted afterwards), so nothing is reused. Prints
per check: runs, training steps, wall time, and ms per step per worker (wall x workers / steps:
the figure to set against a bare single-thread step, benchmarks/bench_training.py).
Run it on an otherwise idle machine: other processes on the cores change the figures.
"""
from __future__ import annotations

import argparse
import tempfile
import time

from critwin.bridge.table import format_table
from critwin.empirical import RunStore
from critwin.empirical.sweep import LocalExecutor
from critwin.paper_checks import CHECKS


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checks", nargs="+", default=["W1", "W2"])
    ap.add_argument("--size", default="paper")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--task-seeds", type=int, default=1, help="1: the issue's 4 x 3 runs (the protocol has 3)")
    ap.add_argument("--pack", type=int, default=None, help="members per stacked pack (default: the executor's)")
    ap.add_argument("--store", default=None, help="default: a fresh temporary folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="critwin-bench-") as tmp:
        store = RunStore(args.store or tmp)
        ex = LocalExecutor(args.workers, pack=args.pack)
        rows, total = [], time.perf_counter()
        for cid in args.checks:
            chk = CHECKS[cid]
            cfgs = list(chk.configs(args.size, seeds=args.seeds, task_seeds=args.task_seeds).values())
            t0 = time.perf_counter()
            res = chk.run(args.size, store, ex, progress=False, seeds=args.seeds, task_seeds=args.task_seeds)
            wall = time.perf_counter() - t0
            steps = sum(c.steps for c in cfgs)
            rows.append({"check": cid, "runs": len(cfgs), "steps": steps, "wall_min": wall / 60,
                         "ms_per_step_per_worker": wall * args.workers / steps * 1000,
                         "verdict": res["verdict"]})
        rows.append({"check": "all", "runs": sum(r["runs"] for r in rows), "steps": sum(r["steps"] for r in rows),
                     "wall_min": (time.perf_counter() - total) / 60,
                     "ms_per_step_per_worker": (time.perf_counter() - total) * args.workers
                     / max(1, sum(r["steps"] for r in rows)) * 1000, "verdict": ""})
    print(format_table(rows))
    print(f"workers {args.workers}, pack {ex.pack}, seeds {args.seeds}, task instances {args.task_seeds}")


if __name__ == "__main__":
    main()
