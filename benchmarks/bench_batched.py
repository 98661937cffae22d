"""Would training E anchor models as one batched model pay off here? (evidence for the batched engine)

Times one AdamW step of E stacked members of the default anchor model (d=64, 2 layers, batch
128) with torch.func (vmap over grad of functional_call, a hand-written Adam on the stacked
weights), against E separate steps of the plain model, and the fused AdamW variant of the
plain step. Prints ms per member-step; nothing is asserted.

Run: python benchmarks/bench_batched.py [--members 1 4 8 16] [--steps 100] [--threads 1]
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from critwin.bridge.table import format_table
from critwin.empirical import TrainConfig
from critwin.empirical.train import initial_model


def plain_step_ms(model, x, y, steps: int, **adam) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.98), weight_decay=0.0, **adam)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    for _ in range(10):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps * 1000


def batched_step_ms(model, X, Y, members: int, steps: int) -> float:
    params = {k: torch.stack([v.detach().clone() for _ in range(members)]) for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())

    def loss_fn(p, x, y):
        return F.cross_entropy(functional_call(model, (p, buffers), (x,)), y)
    g_fn = vmap(grad(loss_fn))
    gen = torch.Generator().manual_seed(0)
    idx = torch.stack([torch.randperm(len(Y), generator=gen)[:128] for _ in range(members)])
    x, y = X[idx], Y[idx]
    m = {k: torch.zeros_like(v) for k, v in params.items()}
    v2 = {k: torch.zeros_like(v) for k, v in params.items()}

    def step():
        g = g_fn(params, x, y)
        for k in params:
            m[k].mul_(0.9).add_(g[k], alpha=0.1)
            v2[k].mul_(0.98).addcmul_(g[k], g[k], value=0.02)
            params[k].sub_(3e-3 * m[k] / (v2[k].sqrt() + 1e-8))
    for _ in range(5):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps * 1000 / members


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, data = initial_model(TrainConfig())
    X = torch.as_tensor(data.splits["train"].inputs)
    Y = torch.as_tensor(data.splits["train"].targets)
    rows = [{"variant": "plain AdamW step", "members": 1, "ms_per_member_step": plain_step_ms(model, X[:128], Y[:128], args.steps)},
            {"variant": "plain, fused AdamW", "members": 1,
             "ms_per_member_step": plain_step_ms(model, X[:128], Y[:128], args.steps, fused=True)}]
    for e in args.members:
        rows.append({"variant": "vmap(grad) + stacked Adam", "members": e,
                     "ms_per_member_step": batched_step_ms(model, X, Y, e, args.steps)})
    print(format_table(rows))
    print(f"threads {torch.get_num_threads()}; a 20k-step run at the plain rate takes"
          f" {rows[0]['ms_per_member_step'] * 20000 / 60000:.1f} min")


if __name__ == "__main__":
    main()
