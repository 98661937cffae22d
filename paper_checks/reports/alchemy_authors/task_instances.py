"""Training seed or task instance: the verdict registered in task_instances.md, read from S4's result over task
instances (its per-h row of the middle stage lists each run's task instance, seed and step, nan when never, and whether
it is still training).

    critwin check S4 --size cpu --seeds 3 --task-seeds 3 --variant "decomposition h2" --input-format stone_states \
        --store runs/alchemy_stones/store --no-train --results DIR
    python3 task_instances.py DIR/S4_cpu_stone_states_tasks3.json
"""
from __future__ import annotations

import json
import math
import sys

from scipy.stats import binomtest

ROW = "h=2: step P(C|A,B) completes (the middle stage; nan: never; reported)"
STEPS_PER_EPOCH = 343
REGISTERED_RUNS = 9          # task instances 0-2 x training seeds 0-2


def outcomes(result: dict) -> tuple[dict, list]:
    """(task instance, seed) -> the middle stage's epoch, or None when the run stalls; and the runs still training
    that have not reached it yet (their outcome is unknown, so they are left out of the verdict and the fraction)."""
    row = next(r for r in result["rows"] if r["value"] == ROW)
    training = row.get("training", [False] * len(row["seed"]))
    runs, open_ = {}, []
    for t, s, v, live in zip(row["task_seed"], row["seed"], row["per_seed"], training):
        if math.isnan(v) and live:
            open_.append((t, s))
        else:
            runs[(t, s)] = None if math.isnan(v) else v / STEPS_PER_EPOCH
    return runs, open_


def judge(runs: dict) -> tuple[str, list[str]]:
    """The registered rule: 'the training seed decides' when each seed has one outcome on every task instance,
    'the task instance matters' when some seed's outcome differs; and the fraction that reaches, 90% exact CI."""
    by_seed: dict = {}
    for (t, s), epoch in runs.items():
        by_seed.setdefault(s, set()).add(epoch is not None)
    mixed = sorted(s for s, seen in by_seed.items() if len(seen) > 1)
    tasks = sorted({t for t, _ in runs})
    reach = sum(e is not None for e in runs.values())
    ci = binomtest(reach, len(runs)).proportion_ci(confidence_level=0.9, method="exact")
    lines = [f"{reach} of {len(runs)} runs reach the middle stage (90% Clopper-Pearson {ci.low:.2f}-{ci.high:.2f})"]
    if mixed:     # final however the missing runs come out
        return f"the task instance matters (rule 2): seed(s) {mixed} reach on some instances and stall on others", lines
    if len(runs) < REGISTERED_RUNS:
        return f"undecided so far ({len(runs)} of {REGISTERED_RUNS} runs): no seed's outcome differs yet", lines
    return f"the training seed decides (rule 1) over task instances {tasks}", lines


def main(path: str) -> None:
    runs, open_ = outcomes(json.loads(open(path).read()))
    print("task instance | seed | middle stage (epoch) | outcome")
    print("---|---|---|---")
    for (t, s), epoch in sorted(runs.items()):
        print(f"{t} | {s} | {'-' if epoch is None else f'{epoch:.0f}'} | {'stalls' if epoch is None else 'reaches'}")
    for t, s in sorted(open_):
        print(f"{t} | {s} | - | still training, not yet reached (left out)")
    verdict, lines = judge(runs)
    print("\n".join(["", *lines, f"verdict: {verdict}"]))


if __name__ == "__main__":
    main(sys.argv[1])
