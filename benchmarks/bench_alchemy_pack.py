"""Alchemy on the packed engine against the plain loop and against this machine's floor.

For one Alchemy recipe (`--size`, the withheld task), trains E members (seeds) as one stacked
model (empirical/engine.py) for E in --members, and one run with the plain loop; the steady-state
step time is the time for 2 --steps minus the time for --steps (set-up, data and the evaluations
at both ends cancel), divided by E for a member's share. The floor is bench_engine.py's: the FLOPs
of one training step (torch's FlopCounterMode, dropout off) at the FLOP/s of a 1024^2 matmul
measured in the same run. Prints seconds per member-step, the speed-up over the plain loop
(`vs_plain`) and the ratio to the floor (`over_floor`). Step time does not depend on how many
chemistries the task holds, so `--chemistries` keeps data generation short; evaluations cancel, so
they score `--eval-max` queries.

Run: python benchmarks/bench_alchemy_pack.py [--size cpu] [--members 1 4 8] [--steps 10] [--threads 1]
     [--device cpu] [--chemistries 64] [--eval-max 32]

Figures (date, host, load) in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
from dataclasses import replace

import torch

from bench_engine import matmul_peak, per_step, step_flops
from critwin.table import format_table
from critwin.empirical import train
from critwin.empirical.engine import train_pack
from critwin.empirical.presets import alchemy_flat
from critwin.empirical.sweep import config_from_flat


def alchemy_config(size: str, steps: int, device: str, chemistries: int | None, eval_max: int, **over):
    """The withheld task at `size`, never evaluated between its ends."""
    flat = alchemy_flat(size, "withheld", steps=steps, **over)
    flat.update({"eval_every": 10 ** 9, "eval_max": eval_max, "device": device,
                 **({"chemistries": chemistries} if chemistries else {})})
    return config_from_flat(flat)


def measure(cfg, members: list[int], steps: int, device: str) -> list[dict]:
    """Rows: the floor, the plain loop, and the engine at each pack size (seconds per member-step)."""
    floor = step_flops(cfg.with_model(dropout=0.0)) / matmul_peak(device)
    plain = per_step(lambda n: train(replace(cfg, steps=n), progress=False), steps, device)
    rows = [{"path": "floor (step FLOPs at the matmul peak)", "members": 1, "s_per_member_step": floor,
             "vs_plain": plain / floor, "over_floor": 1.0},
            {"path": "plain loop", "members": 1, "s_per_member_step": plain, "vs_plain": 1.0,
             "over_floor": plain / floor}]
    for e in members:
        def fit(n, e=e):
            return train_pack([replace(cfg, seed=s, steps=n) for s in range(e)], progress=False)
        t = per_step(fit, steps, device) / e
        rows.append({"path": "packed engine", "members": e, "s_per_member_step": t, "vs_plain": plain / t,
                     "over_floor": t / floor})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="cpu")
    ap.add_argument("--members", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--chemistries", type=int, default=64, help="0: every chemistry")
    ap.add_argument("--eval-max", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = alchemy_config(args.size, args.steps, args.device, args.chemistries or None, args.eval_max)
    rows = measure(cfg, args.members, args.steps, args.device)
    m = cfg.model
    print(f"alchemy_withheld at size {args.size} (d {m.d}, {m.layers} layers, dropout {m.dropout}, clip {cfg.clip},"
          f" batch {cfg.batch_size}, {args.steps} and {2 * args.steps} steps), {args.device},"
          f" {torch.get_num_threads()} thread(s); vs_plain: the plain loop's time over this one (speed-up);"
          f" over_floor: this time over the floor's")
    print(format_table(rows))


if __name__ == "__main__":
    main()
