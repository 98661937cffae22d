"""No-decay probes for the Theory III panel: one per (optimizer, gamma, task instance, seed), each a paper-size
anchor run keeping a state every few steps, at which the held share of the attention (and MLP) weights the loss
grows is measured for every panel lambda (bridge.survival.held_curves). Each probe is the prefix of the no-decay
run that a penalised run of the same seed and task instance shares up to its onset, so a per-run prediction
reads only what that run had measured when its window opened.

Run: python3 paper_checks/reports/theory3/probes.py [OUT [LAMBDAS]]     (default OUT: probes/ beside this file;
     48 probes; a probe already written is skipped; on 2026-12-07 at five lambdas 426 s in all, 7-12 s a probe, on
     a 2-core AMD EPYC with AVX-512 beside a 2-worker sweep). The extension panel's probes read the
     same runs at its lambdas too: probes.py probes_ext 0.002,0.004,0.008,0.016,0.032 (the panel's lambdas again, so
     the rerun's shares can be checked against probes/)
"""
import json
import sys
import time
from pathlib import Path

import torch

from critwin.bridge.survival import held_curves, probe_config

HERE = Path(__file__).parent
OPTIMIZERS, GAMMAS, LAMBDAS = ("adamw", "sgd"), (0.4, 0.65, 0.95, 1.2), (2e-3, 8e-3, 3.2e-2)
TASK_SEEDS, SEEDS = (0, 1, 2), (0, 1)
STEPS = {"adamw": 810, "sgd": 1000}      # past the panel's last onset (800): a state every 10 / 20 steps


def probe_name(opt: str, gamma: float, task_seed: int, seed: int) -> str:
    return f"{opt}_g{gamma:g}_t{task_seed}_s{seed}.json"


def main(out: Path, lambdas=LAMBDAS) -> None:
    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    for opt in OPTIMIZERS:
        for g in GAMMAS:
            for ts in TASK_SEEDS:
                for s in SEEDS:
                    path = out / probe_name(opt, g, ts, s)
                    if path.is_file():
                        continue
                    t0 = time.time()
                    curves = held_curves(probe_config(opt, g, ts, s, STEPS[opt]), lambdas)
                    rec = {"optimizer": opt, "gamma": g, "task_seed": ts, "seed": s, "steps": STEPS[opt],
                           "lambdas": list(lambdas), "curves": curves}
                    path.with_suffix(".part").write_text(json.dumps(rec) + "\n")
                    path.with_suffix(".part").rename(path)
                    print(f"{path.name} {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "probes",
         tuple(float(v) for v in sys.argv[2].split(",")) if len(sys.argv) > 2 else LAMBDAS)
