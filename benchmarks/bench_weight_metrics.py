"""Weight metrics of a pack: one batched SVD per quantity against the one-model functions member by member.

For E members of the default anchor model (d = 64, 2 layers), times stacked_weight_metrics (what the engine
logs a pack with) and the one-model functions (weight_norm, condensation_index, ov_qk_alignment, group_norms)
called for each member, and prints ms per member for each.

Run: python benchmarks/bench_weight_metrics.py [--members 1 16 64] [--repeats 5] [--threads 1]
"""
import argparse
import time

import torch

from critwin.empirical.metrics import (condensation_index, group_norms, ov_qk_alignment, stacked_weight_metrics,
                                       weight_norm)
from critwin.empirical.models import ModelConfig, Transformer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print("members  per_model_ms_per_member  stacked_ms_per_member")
    for E in args.members:
        models = []
        for s in range(E):
            torch.manual_seed(s)
            models.append(Transformer(ModelConfig(d=64, heads=2, layers=2, gamma=0.8), vocab_size=110, seq_len=9))
        params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
                  for n, _ in models[0].named_parameters()}

        def per_model():
            for m in models:
                weight_norm(m.decayed_weights()), condensation_index(m), ov_qk_alignment(m), group_norms(m)

        def stacked():
            stacked_weight_metrics(models[0], params)
        out = []
        for f in (per_model, stacked):
            f()
            t0 = time.perf_counter()
            for _ in range(args.repeats):
                f()
            out.append((time.perf_counter() - t0) / args.repeats / E * 1000)
        print(f"{E:7d}  {out[0]:23.2f}  {out[1]:21.2f}")


if __name__ == "__main__":
    main()
