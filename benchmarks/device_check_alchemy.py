"""The packed Alchemy engine on a lent GPU: the paper-size protocol's first steps, and the hours
its full protocol would take, as one prepared script within a 10-minute device budget.

The protocol (`--size authors`: the paper's model, 2.1M parameters, trained as the authors' code
trains it, on the withheld task with every chemistry, 343 steps an epoch, scored every epoch on
1,320 held-out and 1,320 training queries) runs PAPER_EPOCHS (1,000) epochs for 3 seeds, each with
S6's freeze branches as the paper runs them: the embedding and each of the 4 layers frozen from A's
completion (epoch 70) and then every 10 epochs to epoch 310 (25 points), the optimizer rebuilt at
the freeze: 3 x (1 + 5 x 25) = 378 runs. A pack trains its members from step 0 (packs do not
branch), so each of the 378 trains all 1,000 epochs.

For each pack size in --members (8, 32, 64) the script builds a pack of the protocol's first E
runs, takes --warmup steps, times the next --steps (100) steps and then one evaluation of every
member; the plain loop the same way for one run. It prints seconds per member-step, the speed-up
over the plain loop, and the estimated hours of the full protocol in packs of E on this device
(training plus one evaluation an epoch), beside the plain loop's hours for the same 378 runs
trained one after another, and for the branched protocol (each frozen run only from its freeze
epoch, from the baseline's checkpoint, as the plain loop can), and for the branched protocol as
`paper_checks/s6_paper.py` trains it (`decided_hours`: the baseline paused once both later stages
complete, a branch only before them and paused once each is decided, at most 12 epochs past the
baseline's time; with the paper's times, B given A near epoch 300). A pack that does not fit in memory
is reported and skipped; sizes left when --deadline seconds have passed are skipped.

Run: python benchmarks/device_check_alchemy.py --device cuda [--members 8 32 64] [--steps 100]
Smoke run on a CPU: python benchmarks/device_check_alchemy.py --device cpu --members 2 --steps 5 --quick
(--quick: a tiny model on 8 chemistries, to exercise the script; its hours mean nothing).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace

import torch

from critwin.table import format_table
from critwin.empirical.engine import build_pack
from critwin.empirical.loop import Member
from critwin.empirical.presets import PAPER_EPOCHS, alchemy_flat, steps_per_epoch
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import ModelStepper, initial_model

SEEDS = 3
FIRST_FREEZE, LAST_FREEZE, EVERY = 70, 310, 10      # epochs: A's completion, then every 10 to about 310
PAPER_LAST_STAGE = 300      # epochs: the paper's B given A (C given A,B near 200), for decided_hours
QUICK = {"d": 16, "heads": 2, "layers": 2, "chemistries": 8, "eval_max": 32}


def protocol(size: str, device: str, quick: bool):
    """(the 378 runs' configs, baselines first; steps per epoch; the freeze epochs)."""
    flat = alchemy_flat(size, "withheld", epochs=PAPER_EPOCHS, **(QUICK if quick else {}))
    per_epoch = steps_per_epoch(flat)
    flat = {**flat, "device": device, "freeze_optimizer": "rebuild"}
    epochs = list(range(FIRST_FREEZE, LAST_FREEZE + 1, EVERY))
    comps = ["embedding"] + [f"layer{i}" for i in range(flat["layers"])]
    base = [config_from_flat({**flat, "seed": s}) for s in range(SEEDS)]
    branches = [replace(b, freeze=((c, e * per_epoch),)) for e in epochs for c in comps for b in base]
    return base + branches, per_epoch, epochs


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(stepper, members: list, steps: int, warmup: int, device: str) -> tuple[float, float]:
    """(seconds per step of `steps` steps after `warmup` steps, seconds of one evaluation)."""
    def step(i: int, evaluate: bool = False) -> None:
        stepper.forward([m.order.next() for m in members])
        stepper.update(i, [m.cfg.lr_at(i) for m in members], [float(m.lam[i]) for m in members], evaluate)
    for i in range(warmup):
        step(i)
    sync(device)
    t = time.perf_counter()
    for i in range(warmup, warmup + steps):
        step(i)
    sync(device)
    per = (time.perf_counter() - t) / steps
    step(warmup + steps, evaluate=True)
    sync(device)
    t = time.perf_counter()
    stepper.evaluate(warmup + steps + 1)
    sync(device)
    return per, time.perf_counter() - t


def hours(member_steps: float, s_per_step: float, evals: float, s_per_eval: float) -> float:
    return (member_steps * s_per_step + evals * s_per_eval) / 3600


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--members", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--size", default="authors", help="authors (default) or paper: the same model")
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds after which no further pack size starts")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("device_check_alchemy: --device cuda, but torch sees no CUDA GPU here (use --device cpu for a"
                 " smoke run)")
    t0 = time.perf_counter()
    cfgs, per_epoch, epochs = protocol(args.size, args.device, args.quick)
    runs, total_steps = len(cfgs), PAPER_EPOCHS * per_epoch
    comps = len(cfgs) // SEEDS - 1
    branched_epochs = SEEDS * (PAPER_EPOCHS + comps // len(epochs) * sum(PAPER_EPOCHS - e for e in epochs))
    stop = min(PAPER_EPOCHS, PAPER_LAST_STAGE + EVERY + 2)       # a branch's last epoch under the pause rule
    decided_epochs = SEEDS * (PAPER_LAST_STAGE + 2 + comps // len(epochs)
                              * sum(stop - e for e in epochs if e < PAPER_LAST_STAGE))
    dev = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"{runs} runs ({SEEDS} seeds x (1 + {comps} freeze branches)), {PAPER_EPOCHS} epochs of {per_epoch} steps;"
          f" model d {cfgs[0].model.d}, {cfgs[0].model.layers} layers, dropout {cfgs[0].model.dropout},"
          f" batch {cfgs[0].batch_size}; {args.device} ({dev}); {args.steps} steps timed after {args.warmup}",
          flush=True)

    model, data = initial_model(cfgs[0])
    member = Member.of(cfgs[0], data)
    plain, plain_eval = timed(ModelStepper(member, model.to(args.device), torch.device(args.device)), [member],
                              args.steps, args.warmup, args.device)
    del model, member
    rows = [{"path": "plain loop", "members": 1, "s_per_member_step": plain, "vs_plain": 1.0,
             "eval_s_per_member": plain_eval,
             "protocol_hours": hours(runs * total_steps, plain, runs * PAPER_EPOCHS, plain_eval),
             "branched_hours": hours(branched_epochs * per_epoch, plain, branched_epochs, plain_eval),
             "decided_hours": hours(decided_epochs * per_epoch, plain, decided_epochs, plain_eval)}]
    print(format_table(rows), flush=True)
    for e in args.members:
        if time.perf_counter() - t0 > args.deadline:
            print(f"  {e} members: skipped (past the {args.deadline:.0f} s deadline)", flush=True)
            continue
        try:
            stepper = build_pack(cfgs[:e])
            per, ev = timed(stepper, stepper.members, args.steps, args.warmup, args.device)
        except torch.OutOfMemoryError as err:
            print(f"  {e} members: out of device memory ({str(err).splitlines()[0]})", flush=True)
            continue
        finally:
            stepper = None
            if args.device == "cuda":
                torch.cuda.empty_cache()
        packs = math.ceil(runs / e)
        rows.append({"path": "packed engine", "members": e, "s_per_member_step": per / e, "vs_plain": plain * e / per,
                     "eval_s_per_member": ev / e,
                     "protocol_hours": hours(packs * total_steps, per, packs * PAPER_EPOCHS, ev),
                     "branched_hours": float("nan"), "decided_hours": float("nan")})
        print(f"  {e} members: {per / e:.4g} s a member-step ({plain * e / per:.2f}x the plain loop),"
              f" {time.perf_counter() - t0:.0f} s so far", flush=True)
    print(format_table(rows))
    print(f"protocol_hours: the {runs} runs from step 0 (packs of E, one after another on this device, or the plain"
          " loop one run at a time); branched_hours: the plain loop with each frozen run from its freeze epoch;"
          f" decided_hours: the same, each run paused as the paper-form S6 pauses it (B given A at epoch"
          f" {PAPER_LAST_STAGE});"
          f" evaluation once an epoch. Total wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
