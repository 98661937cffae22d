"""Per-step training time of the default anchor model (d=64, 2 layers, 2 heads, batch 128) and of
the Alchemy cpu preset (withheld pair, d=64, 2 layers, 4 heads, batch 32, 182 tokens).

Run: python benchmarks/bench_training.py [--steps 500] [--threads N] [--device cpu|cuda].
Reports ms/step for the bare step and for the full loop with evaluation every 100 steps (the
anchor tasks; Alchemy: the bare step only, its evaluation is timed by `critwin train`).
"""
from __future__ import annotations

import argparse
import time

import torch

from critwin.table import format_table
from critwin.empirical import TrainConfig, train
from critwin.empirical.presets import alchemy_flat
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import batch_loss, build_optimizer, initial_model


def bare_steps(cfg: TrainConfig, n: int) -> float:
    dev = torch.device(cfg.device)
    model, data = initial_model(cfg)
    model = model.to(dev)
    opt = build_optimizer(cfg, model.parameters())
    train = data.splits["train"]
    x = torch.as_tensor(train.inputs[: cfg.batch_size], device=dev)
    y = torch.as_tensor(train.targets[: cfg.batch_size], device=dev)
    lengths = train.extra.get("lengths")
    lengths = None if lengths is None else torch.as_tensor(lengths[: cfg.batch_size], device=dev)
    for warm in (True, False):
        t0 = time.perf_counter()
        for _ in range(20 if warm else n):
            loss = batch_loss(model, x, y, lengths)
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
    cfg = config_from_flat({**alchemy_flat("cpu", "withheld"), "device": args.device})
    bare = bare_steps(cfg, max(20, args.steps // 5))
    rows.append({"task": "alchemy_withheld (cpu)", "threads": torch.get_num_threads(), "bare_ms_per_step": bare,
                 "loop_ms_per_step": float("nan"), "est_20k_run_min": bare * 20000 / 60000})
    print(format_table(rows))


if __name__ == "__main__":
    main()
