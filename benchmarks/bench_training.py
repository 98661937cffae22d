"""Per-step training time of the default anchor model (d=64, 2 layers, 2 heads, batch 128).

Run: python benchmarks/bench_training.py [--steps 500] [--threads N] [--device cpu|cuda].
Reports ms/step for the bare step and for the full loop with evaluation every 100 steps.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from critwin.bridge.table import format_table
from critwin.empirical import TrainConfig, train
from critwin.empirical.tasks import make_task
from critwin.empirical.train import build_model, build_optimizer


def bare_steps(cfg: TrainConfig, n: int) -> float:
    dev = torch.device(cfg.device)
    data = make_task(cfg.task).generate()
    model = build_model(cfg, data.vocab_size, data.seq_len).to(dev)
    opt = build_optimizer(cfg, model.parameters())
    x = torch.as_tensor(data.splits["train"].inputs[: cfg.batch_size], device=dev)
    y = torch.as_tensor(data.splits["train"].targets[: cfg.batch_size], device=dev)
    for warm in (True, False):
        t0 = time.perf_counter()
        for _ in range(20 if warm else n):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for task in ("anchor_permutation", "anchor_shift"):
        cfg = TrainConfig(task=task, steps=args.steps, device=args.device)
        bare = bare_steps(cfg, args.steps)
        run = train(cfg, progress=False)
        rows.append({"task": task, "threads": torch.get_num_threads(), "bare_ms_per_step": bare,
                     "loop_ms_per_step": run.summary["seconds_per_step"] * 1000,
                     "est_20k_run_min": run.summary["seconds_per_step"] * 20000 / 60})
    print(format_table(rows))


if __name__ == "__main__":
    main()
