"""End-to-end wall time of paper checks from a clean store (issue #13's target: W1 + W2 at
paper size, 4 schedules x 3 seeds x 20k steps, with every evaluation the checks log).

Run: python benchmarks/bench_checks.py [--checks W1 W2] [--workers 2] [--seeds 3] [--task-seeds 1]
                                       [--pack 1 auto] [--store DIR]
Each --pack setting (1: the plain loop, one run per process; auto: the engine's packs of the
device's default size; N: packs of up to N) trains the checks from its own fresh store (a
temporary folder, deleted afterwards; with --store, DIR/pack_<setting>, kept), one setting after
the other in this one run. Prints per setting and check: runs, training steps, wall time, ms
per step per worker (wall x workers / steps: the figure to set against a bare single-thread
step, benchmarks/bench_training.py), the speed-up over the first setting, and the verdict.
Run it on an otherwise idle machine: other processes on the cores change the figures.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

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
    ap.add_argument("--pack", nargs="+", default=["1", "auto"],
                    help="settings to time, in order: 1 (plain loop), auto (the device's default), or N")
    ap.add_argument("--store", default=None, help="keep the stores under DIR/pack_<setting> (default: temporary)")
    args = ap.parse_args()
    rows, first = [], {}
    for setting in args.pack:
        pack = None if setting == "auto" else int(setting)
        with tempfile.TemporaryDirectory(prefix="critwin-bench-") as tmp:
            store = RunStore(Path(args.store) / f"pack_{setting}" if args.store else tmp)
            ex, total, done = LocalExecutor(args.workers, pack=pack), time.perf_counter(), []
            for cid in args.checks + ["all"]:
                if cid == "all":
                    wall, runs, steps, verdict = time.perf_counter() - total, sum(r["runs"] for r in done), \
                        sum(r["steps"] for r in done), ""
                else:
                    chk = CHECKS[cid]
                    cfgs = list(chk.configs(args.size, seeds=args.seeds, task_seeds=args.task_seeds).values())
                    t0 = time.perf_counter()
                    res = chk.run(args.size, store, ex, progress=False, seeds=args.seeds, task_seeds=args.task_seeds)
                    wall, runs, steps, verdict = time.perf_counter() - t0, len(cfgs), sum(c.steps for c in cfgs), \
                        res["verdict"]
                first.setdefault(cid, wall)
                done.append({"pack": setting, "check": cid, "runs": runs, "steps": steps, "wall_min": wall / 60,
                             "ms_per_step_per_worker": wall * args.workers / max(1, steps) * 1000,
                             "speedup": first[cid] / wall, "verdict": verdict})
            rows += done
    print(format_table(rows))
    print(f"workers {args.workers}, seeds {args.seeds}, task instances {args.task_seeds}, size {args.size}")


if __name__ == "__main__":
    main()
