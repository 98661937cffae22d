"""One Alchemy training step and one held-out evaluation at paper size, fp32 against bf16 autocast,
as ratios to this machine's matmul floor measured in the same run.

For each precision: the steady-state step time (train for --steps and for twice as many; the
difference cancels set-up, data and the evaluations at both ends), the achieved FLOP/s of a step
(FLOPs counted by torch's FlopCounterMode) against a 1024^2 matmul in that precision, and the
time to score the 1,320 held-out queries, with each episode's shared support computed once (the
toolkit's evaluation) and with every query computed whole (`eval_s_plain`). The recipe is the authors' (`--size authors`: dropout
0.1, clip 1.0); `--size cpu` and `--layers 2` (the authors' tiny model) are options.

Run: python benchmarks/bench_alchemy.py [--size authors] [--layers 4] [--steps 10] [--threads 1] [--device cpu]
"""
from __future__ import annotations

import argparse
from dataclasses import replace

import torch

from bench_engine import matmul_peak, per_step, seconds, step_flops
from critwin.table import format_table
from critwin.empirical import train
from critwin.empirical.metrics import evaluate_split
from critwin.empirical.presets import alchemy_flat
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import initial_model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="authors")
    ap.add_argument("--layers", type=int, default=None, help="override the size's layers (2: the authors' tiny model)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    over = {"layers": args.layers} if args.layers else {}
    base = config_from_flat({**alchemy_flat(args.size, "withheld", steps=args.steps, **over), "eval_every": 10 ** 9,
                             "device": args.device})
    rows = []
    for precision, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        cfg = replace(base, precision=precision)
        floor = matmul_peak(args.device, dtype=dtype)
        with cfg.autocast():
            flops = step_flops(replace(cfg, model=replace(cfg.model, dropout=0.0)))
        step = per_step(lambda n: train(replace(cfg, steps=n), progress=False), args.steps, args.device)
        model, data = initial_model(cfg)
        model = model.to(args.device).eval()
        held = data.splits["test"].sample(cfg.eval_max)
        with cfg.autocast():
            def eval_seconds(share: bool) -> float:    # the best of two, after a warm-up call
                evaluate_split(model, held, torch.device(args.device), share_prefixes=share)
                return min(seconds(lambda: evaluate_split(model, held, torch.device(args.device),
                                                          share_prefixes=share), args.device) for _ in range(2))
            ev, plain = eval_seconds(True), eval_seconds(False)
        rows.append({"precision": precision, "s_per_step": step, "gflop_per_step": flops / 1e9,
                     "gflop_per_s": flops / step / 1e9, "floor_gflop_per_s": floor / 1e9,
                     "step_over_floor": step / (flops / floor), "eval_s_held_out": ev, "eval_s_plain": plain,
                     "queries": len(held.targets)})
    rows.append({"precision": "fp32 / bf16", "s_per_step": rows[0]["s_per_step"] / rows[1]["s_per_step"],
                 "eval_s_held_out": rows[0]["eval_s_held_out"] / rows[1]["eval_s_held_out"],
                 "eval_s_plain": rows[0]["eval_s_plain"] / rows[1]["eval_s_plain"]})
    print(f"{args.size} size{' ' + str(args.layers) + ' layers' if args.layers else ''}, {args.threads} thread(s),"
          f" {args.device}; step_over_floor: a step's time over its FLOPs at the matmul floor of its precision")
    print(format_table(rows))


if __name__ == "__main__":
    main()
