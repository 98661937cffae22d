"""One training process alone against two side by side, one torch thread each (why a pack
loses most of its gain over the plain loop when a check trains two at once).

For each workload (a 1024^2 matmul; the plain loop; a pack of E members on the engine) measures the
steady-state throughput in one worker process, then in two worker processes started together, and
prints the slowdown of each process side by side. Near 1: the two cores are independent. Near 2:
they share one (SMT siblings, or a host that time-slices the VM). In between: shared cache or memory
bandwidth. A workload whose slowdown exceeds the matmul's loses more than raw compute side by side.

Run: python benchmarks/bench_side_by_side.py [--model anchor|w11] [--members 2 8] [--steps 50]
"""
from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context

import torch

from bench_engine import matmul_peak, per_step
from critwin.table import format_table
from critwin.empirical import TrainConfig, train
from critwin.empirical.engine import train_pack


def config(model: str, steps: int) -> TrainConfig:
    """The default anchor model, or W11's paper-size modular-arithmetic model under the L2 reading."""
    if model == "anchor":
        return TrainConfig(steps=steps, eval_every=10 ** 9)
    from critwin.paper_checks.claims import W11
    cfgs = W11.configs("paper", seeds=1, task_seeds=1, reading={"decay_form": "l2", "decay_set": "non_embedding"})
    return replace(cfgs[("constant 0.01", 0, 0)], steps=steps, eval_every=10 ** 9, wd_windows=((0.0, steps, 0.01),))


def workload(kind: str, model: str, members: int, steps: int) -> float:
    """GFLOP/s for the matmul; milliseconds per member-step for the loop (members 1) and a pack."""
    torch.set_num_threads(1)
    if kind == "matmul":
        return matmul_peak("cpu", reps=200) / 1e9
    cfg = config(model, steps)
    if kind == "loop":
        return 1e3 * per_step(lambda n: train(replace(cfg, steps=n), progress=False), steps, "cpu")
    return 1e3 * per_step(lambda n: train_pack([replace(cfg, seed=s, steps=n) for s in range(members)],
                                               progress=False), steps, "cpu") / members


def measure(processes: int, *job) -> list[float]:
    """The workload in `processes` fresh worker processes at once (spawned and warmed first)."""
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        list(pool.map(abs, range(processes)))         # start every worker (and its imports) first
        return [f.result() for f in [pool.submit(workload, *job) for _ in range(processes)]]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["anchor", "w11"], default="anchor")
    ap.add_argument("--members", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    jobs = [("matmul", 1), ("loop", 1)] + [("pack", e) for e in args.members]
    rows = []
    for kind, e in jobs:
        alone = measure(1, kind, args.model, e, args.steps)[0]
        both = measure(2, kind, args.model, e, args.steps)
        unit = "GFLOP/s" if kind == "matmul" else "ms/member-step"
        slow = [alone / b if kind == "matmul" else b / alone for b in both]
        rows.append({"workload": kind, "members": e, "unit": unit, "alone": alone,
                     "side_by_side": sum(both) / 2, "slowdown_each": " ".join(f"{s:.2f}" for s in slow)})
        print(format_table(rows[-1:]), flush=True)
    print(format_table(rows))
    print(f"model {args.model}, one torch thread per process, {args.steps} and {2 * args.steps} steps per timing")


if __name__ == "__main__":
    main()
