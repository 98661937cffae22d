"""Wall-clock timings of the theory module at the paper's sizes (d=64, K=16, M=8, |P|=45).

Run: python benchmarks/bench_theory.py [--quick]. Prints one table; nothing is asserted.
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from critwin.table import format_table
from critwin.theory import (Schedule, StylisedSetting, basin, build_problem, derive, init_params,
                            integrate_flow, predict, run_discrete)
from critwin.theory.derive import derive as derive_uncached
from critwin.theory.windows import default_onsets, window_schedules


def timed(label, fn, rows, **info):
    t0 = time.perf_counter()
    fn()
    rows.append({"what": label, "seconds": time.perf_counter() - t0, **info})


def adamw_sweep(s, p, q, rows, total=4000, width=1000):
    """The adamw onset sweep (11 onsets + baseline, decay l2) at a fifth of the default length, against
    its floor measured here: one no-decay run of the same length (the baseline a sweep must run
    anyway), and against the same 12 schedules run one by one (what sharing the no-decay prefix saves)."""
    scheds = [Schedule.none(total)] + window_schedules(default_onsets(width, total), width, 4e-3, total)
    first = len(rows)
    timed(f"  floor: one AdamW run, {total // 1000}k steps, no decay", lambda: run_discrete(
        p, q, Schedule.none(total), s.eta, "adamw", eval_every=total, decay_form="l2"), rows)
    timed(f"adamw onset sweep (11 onsets + baseline), 1 gamma, {total // 1000}k steps",
          lambda: predict(s, [0.8], "adamw", width=width, total=total, decay_form="l2"), rows)
    timed("  the same 12 schedules run one by one", lambda: [run_discrete(
        p, q, sc, s.eta, "adamw", eval_every=total, decay_form="l2") for sc in scheds], rows)
    for r in rows[first:]:
        r["vs_floor"] = r["seconds"] / rows[first]["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="skip the minute-long items")
    args = ap.parse_args()
    s = StylisedSetting()
    grid = np.geomspace(0.05, 3, 50)
    p = build_problem(s)
    q = init_params(p, 0.8, [0])
    rows = []
    derive_uncached.cache_clear()
    timed("derive (sympy, uncached)", derive, rows)
    timed("recipe, 50 gammas", lambda: predict(s, grid, "recipe"), rows)
    timed("reduced delta-window + onset sweep (11 onsets), 50 gammas",
          lambda: predict(s, grid, "reduced"), rows)
    timed("full flow, one 20k-step run (window 5000:10000)",
          lambda: integrate_flow(p, q, Schedule.window(5000, 10000, 4e-3, 20000), s.eta, [20000]), rows)
    timed("  the same in d x K coordinates (subspace=False, before)",
          lambda: integrate_flow(p, q, Schedule.window(5000, 10000, 4e-3, 20000), s.eta, [20000],
                                 subspace=False), rows)
    timed("GD on full parameters, 1000 steps", lambda: run_discrete(
        p, q, Schedule.none(1000), s.eta, "gd", eval_every=1000), rows)
    timed("AdamW on full parameters, 1000 steps", lambda: run_discrete(
        p, q, Schedule.none(1000), s.eta, "adamw", eval_every=1000), rows)
    if not args.quick:
        timed("full onset sweep (11 onsets + baseline), 1 gamma",
              lambda: predict(s, [0.8], "full"), rows)
        timed("  the same with permutation targets", lambda: predict(s.with_(targets="permutation"), [0.8], "full"),
              rows)
        timed("basin, 8 seeds x 1 gamma, 20k steps", lambda: basin(s, [0.8], 8, 20000), rows)
        adamw_sweep(s, p, q, rows)
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}; numpy {np.__version__}")
    print(format_table(rows, list(dict.fromkeys(k for r in rows for k in r))))


if __name__ == "__main__":
    main()
