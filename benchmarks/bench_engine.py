"""The batched engine against the single-model loop, on this machine.

For the default anchor model (d=64, 2 layers, batch 128, AdamW) trains E members as one
stacked model (empirical/engine.py) for E in --members, and the plain loop alone, for --steps
and twice as many steps; the difference is the steady-state step time (set-up, data
generation and the evaluations at both ends cancel). Prints per-member steps per second, the speed-up over the plain loop, the
achieved FLOP/s (FLOPs of one step counted by torch's FlopCounterMode) against a 1024^2 matmul
peak measured in the same run (model FLOPs utilisation), and the time of one evaluation per
member (every split, the weight metrics and the decay mechanism) in each path (the engine's:
a run with 5 evaluations minus the same run with none).

Run: python benchmarks/bench_engine.py [--members 1 4 8 16 32 64] [--steps 50] [--threads 1] [--device cpu]
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from critwin.table import format_table
from critwin.empirical import TrainConfig, train
from critwin.empirical.engine import train_pack
from critwin.empirical.loop import eval_splits
from critwin.empirical.train import initial_model, log_metrics


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device: str, n: int = 1024, reps: int = 20, dtype=torch.float32) -> float:
    """FLOP/s of an n x n matmul in `dtype`: the machine's floor for the work of a step."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n ** 3 * reps / (time.perf_counter() - t)


def step_flops(cfg: TrainConfig) -> float:
    model, data = initial_model(cfg)
    x = torch.as_tensor(data.splits["train"].inputs[:cfg.batch_size])
    y = torch.as_tensor(data.splits["train"].targets[:cfg.batch_size])
    with FlopCounterMode(display=False) as fc:
        F.cross_entropy(model(x), y).backward()
    return float(fc.get_total_flops())


def seconds(fn, device: str) -> float:
    sync(device)
    t = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t


def per_step(fit, steps: int, device: str) -> float:
    """Steady-state seconds per step of fit(n): fit(2 steps) minus fit(steps), so set-up, data and the
    evaluations at both ends cancel."""
    return (seconds(lambda: fit(2 * steps), device) - seconds(lambda: fit(steps), device)) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, nargs="+", default=[1, 4, 8, 16, 32, 64])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = TrainConfig(steps=args.steps, eval_every=10 ** 9, device=args.device)
    peak, flops = matmul_peak(args.device), step_flops(cfg)
    model, data = initial_model(cfg)
    model = model.to(args.device)
    splits = eval_splits(cfg, data)
    eval_s = min(seconds(lambda: log_metrics(model, splits, 0, torch.device(args.device), []), args.device)
                 for _ in range(3))

    single = per_step(lambda n: train(replace(cfg, steps=n), progress=False), args.steps, args.device)
    rows = [{"path": "single-model loop", "members": 1, "member_steps_per_s": 1 / single, "speedup": 1.0,
             "gflop_per_s": flops / single / 1e9, "mfu": flops / single / peak, "eval_ms_per_member": eval_s * 1e3}]
    every = max(1, args.steps // 5)
    for e in args.members:
        def fit(n, eval_every=cfg.eval_every):
            return train_pack([replace(cfg, seed=s, steps=n, eval_every=eval_every) for s in range(e)], progress=False)
        t_step = per_step(fit, args.steps, args.device) / e
        # evaluation: the same run with an evaluation every `every` steps, minus the run without
        t_eval = (seconds(lambda: fit(args.steps, every), args.device) - seconds(lambda: fit(args.steps), args.device)) \
            / (args.steps // every - 1) / e
        rows.append({"path": "engine", "members": e, "member_steps_per_s": 1 / t_step, "speedup": single / t_step,
                     "gflop_per_s": flops / t_step / 1e9, "mfu": flops / t_step / peak,
                     "eval_ms_per_member": t_eval * 1e3})
    print(format_table(rows))
    print(f"device {args.device}, threads {torch.get_num_threads()}; one training step = {flops / 1e9:.3f} GFLOP;"
          f" matmul peak {peak / 1e9:.0f} GFLOP/s; evaluation (every split, weight metrics, decay mechanism):"
          f" the engine scores the splits of all members in one stacked forward, the weight metrics member by"
          f" member; with evaluation every 100 steps a single run spends {eval_s / (100 * single) * 100:.0f}% on it")


if __name__ == "__main__":
    main()
