"""End-to-end wall time of paper checks from a clean store (the target: W1 + W2 at
paper size, 4 schedules x 3 seeds x 20k steps, with every evaluation the checks log).

Run: python benchmarks/bench_checks.py [--checks W1 W2] [--workers 2] [--seeds 3] [--task-seeds 1]
                                       [--pack 1 auto] [--together] [--store DIR]
Each --pack setting (1: the plain loop, one run per process; auto: the engine's packs of the
device's default size; N: packs of up to N) trains the checks from its own fresh store (a
temporary folder, deleted afterwards; with --store, DIR/pack_<setting>, kept), one setting after
the other in this one run. Prints per setting and check: runs, training steps, wall time, ms
per step per worker (wall x workers / steps: the figure to set against a bare single-thread
step, benchmarks/bench_training.py), the speed-up over the first setting, and the verdict.
--together trains every check's runs as one sweep first (what `critwin check W1 W2` does, so
runs of both checks share packs) and times only the whole.
Run it on an otherwise idle machine: other processes on the cores change the figures.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from critwin.table import format_table
from critwin.empirical import RunStore
from critwin.empirical.sweep import LocalExecutor
from critwin.paper_checks import CHECKS, train_checks


def row(setting: str, check: str, runs: int, steps: int, wall: float | None, verdict: str, workers: int) -> dict:
    """One line of the table; wall None: trained with the others (only the whole is timed)."""
    wall = float("nan") if wall is None else wall
    return {"pack": setting, "check": check, "runs": runs, "steps": steps, "wall_min": wall / 60,
            "ms_per_step_per_worker": wall * workers / max(1, steps) * 1000, "verdict": verdict}



def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checks", nargs="+", default=["W1", "W2"])
    ap.add_argument("--size", default="paper")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--task-seeds", type=int, default=1, help="1: the issue's 4 x 3 runs (the protocol has 3)")
    ap.add_argument("--pack", nargs="+", default=["1", "auto"],
                    help="settings to time, in order: 1 (plain loop), auto (the device's default), or N")
    ap.add_argument("--together", action="store_true",
                    help="train every check's runs as one sweep (critwin check W1 W2) and time only the whole")
    ap.add_argument("--store", default=None, help="keep the stores under DIR/pack_<setting> (default: temporary)")
    args = ap.parse_args()
    rows, first = [], {}
    for setting in args.pack:
        pack = None if setting == "auto" else int(setting)
        with tempfile.TemporaryDirectory(prefix="critwin-bench-") as tmp:
            store = RunStore(Path(args.store) / f"pack_{setting}" if args.store else tmp)
            ex, total, done = LocalExecutor(args.workers, pack=pack), time.perf_counter(), []
            if args.together:       # what `critwin check W1 W2` does: one sweep, then each check only reads
                train_checks([CHECKS[c] for c in args.checks], args.size, store, ex, progress=False,
                             seeds=args.seeds, task_seeds=args.task_seeds)
            for cid in args.checks:
                chk = CHECKS[cid]
                cfgs = list(chk.configs(args.size, seeds=args.seeds, task_seeds=args.task_seeds).values())
                t0 = time.perf_counter()
                res = chk.run(args.size, store, ex, progress=False, seeds=args.seeds, task_seeds=args.task_seeds)
                done.append(row(setting, cid, len(cfgs), sum(c.steps for c in cfgs),
                                None if args.together else time.perf_counter() - t0, res["verdict"], args.workers))
            done.append(row(setting, "all", sum(r["runs"] for r in done), sum(r["steps"] for r in done),
                            time.perf_counter() - total, "", args.workers))
            for r in done:
                first.setdefault(r["check"], r["wall_min"])
                r["speedup"] = first[r["check"]] / r["wall_min"]
            rows += done
    print(format_table(rows))
    print(f"workers {args.workers}, seeds {args.seeds}, task instances {args.task_seeds}, size {args.size}")


if __name__ == "__main__":
    main()
