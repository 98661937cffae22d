"""Wall-clock timings of the bridge on an existing run store (reading runs, predicting,
fitting, reporting); nothing is trained.

Run: python benchmarks/bench_bridge.py --store runs. Prints one table; nothing is asserted.
"""
from __future__ import annotations

import argparse
import platform
import tempfile
import time

from critwin.bridge.compare import compare
from critwin.bridge.fit import fit_store
from critwin.bridge.observed import QUANTITIES
from critwin.paper_checks.report import build_report
from critwin.table import format_table
from critwin.empirical import load_runs, load_summaries


def timed(label, fn, rows):
    t0 = time.perf_counter()
    out = fn()
    rows.append({"what": label, "seconds": time.perf_counter() - t0})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--store", default="runs")
    ap.add_argument("--wd-scale", type=float, nargs="+", default=[1.0])
    args = ap.parse_args()
    rows = []
    summ = timed("load_summaries", lambda: load_summaries(args.store, on_corrupt="skip"), rows)
    metrics = timed("load_runs (all metrics)", lambda: load_runs(args.store, on_corrupt="skip"), rows)
    timed("compare (recipe, recipe_run, reduced)", lambda: compare(args.store), rows)
    for q in QUANTITIES:
        timed(f"fit_store {q}", lambda q=q: fit_store(args.store, q), rows)
    with tempfile.TemporaryDirectory() as out:
        timed("build_report", lambda: build_report(args.store, out, wd_scales=tuple(args.wd_scale)), rows)
    print(f"store {args.store}: {len(summ)} runs, {len(metrics):,} metric rows; {platform.processor() or platform.machine()}")
    print(format_table(rows))


if __name__ == "__main__":
    main()
